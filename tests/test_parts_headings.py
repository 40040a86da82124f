"""A compound question's part headings: each part's name, with its aspect only where that
is a clean span of the question."""

from __future__ import annotations

import re

from zocrates_nb.agents.headings import aspect_span
from zocrates_nb.agents.parts import decompose
from zocrates_nb.index.names import Catalogue, CatalogueItem


def test_a_comparison_heading_leaves_out_what_names_the_last_system() -> None:
    """ "… versus Kleinberg's hubs/authorities method: where does …": the possessive phrase
    belongs to the last name, and "for each of them" asks nothing of either."""
    cat = Catalogue(
        [
            CatalogueItem("PR", "The PageRank Citation Ranking: Bringing Order to the Web",
                          ("L. Page", "S. Brin")),
            CatalogueItem("HITS", "Authoritative Sources in a Hyperlinked Environment",
                          ("J. Kleinberg",)),
        ]
    )  # fmt: skip
    q = (
        "Page and Brin's PageRank versus Kleinberg's hubs/authorities method: where does the "
        "user's query come in for each of them?"
    )
    parts = decompose(q, cat)
    assert [p.items for p in parts] == [["PR"], ["HITS"]]
    for p in parts:
        assert "hubs/authorities" not in p.heading and "each of them" not in p.heading
        assert "where does the user's query" in p.heading


def test_a_heading_after_an_authors_thing_starts_at_what_is_asked() -> None:
    """ "in Smith and Waterman's method how is …": "method" names their paper's thing; the
    heading says what is asked of it, not "method how is …"."""
    cat = Catalogue(
        [
            CatalogueItem("SW", "Identification of Common Molecular Subsequences",
                          ("T. F. Smith", "M. S. Waterman")),
            CatalogueItem("BLAST", "Basic Local Alignment Search Tool", ("S. F. Altschul",)),
        ]
    )  # fmt: skip
    q = (
        "Two alignment questions: in Smith and Waterman's method how is the second-best pair "
        "of segments found, and what does Altschul and colleagues' tool do with a word hit?"
    )
    parts = decompose(q, cat)
    assert [p.items for p in parts] == [["SW"], ["BLAST"]]
    assert parts[0].heading.endswith(": how is the second-best pair of segments found")


def test_a_clause_opened_by_a_phrase_starts_a_part_and_headings_say_what_is_asked() -> None:
    """ ", and in the graph-of-word model what does …" starts a clause (a phrase before its
    question word); a clause that asks nothing ("In Okapi's interactive TREC-3 interface")
    takes its heading from the question asked of it; a lead-in ("Two unrelated things:")
    and a pointer to the source ("according to …") are in no heading."""
    cat = Catalogue(
        [
            CatalogueItem("OKAPI", "Okapi at TREC-3", ("S. E. Robertson",),
                          intro="The City University Okapi IR system was run again."),
            CatalogueItem("GOW", "Graph-of-word and TW-IDF: New Approach to Ad Hoc IR"),
            CatalogueItem("SASA", "Stand-Alone Self-Attention in Vision Models"),
            CatalogueItem("TIDY", "Tidy Data", ("Hadley Wickham",)),
        ]
    )  # fmt: skip
    q = ("In Okapi's interactive TREC-3 interface, what helps searchers decide when to extract "
         "new terms, and in the graph-of-word model what does a term's weight actually count?")
    okapi, gow = decompose(q, cat)
    assert okapi.heading == "Okapi: what helps searchers decide when to extract new terms"
    assert gow.items == ["GOW"] and gow.heading.endswith(": what does a term's weight actually "
                                                         "count")  # fmt: skip
    assert "searchers" not in gow.text
    q = ("Two unrelated things: what does a ResNet's stem consist of according to the "
         "stand-alone self-attention paper, and why does Wickham call R's default model "
         "coefficients untidy?")
    sasa, _ = decompose(q, cat)
    assert sasa.heading.endswith(": what does a ResNet's stem consist")


def test_a_maker_named_in_another_papers_title_is_no_part_of_its_own() -> None:
    """'How many years did it take Google to get Spanner to its published design' was split
    into a 'Google' part (The Google File System: 'Your papers do not give this') and Spanner.
    Spanner's title names Google as its maker; a question naming both systems still has two."""
    cat = Catalogue(
        [
            CatalogueItem("GFS", "The Google File System", ("Sanjay Ghemawat",)),
            CatalogueItem("SP", "Spanner: Google's Globally-Distributed Database",
                          ("James C. Corbett",)),
            CatalogueItem("DY", "Dynamo: Amazon's Highly Available Key-value Store",
                          ("Giuseppe DeCandia",)),
        ]
    )  # fmt: skip
    q = "How many years did it take Google to get Spanner to its published design?"
    assert [m.keys for m in cat.mentions(q)] == [("SP",)]
    assert decompose(q, cat) == []
    both = decompose("How do the Google File System and Spanner replicate data?", cat)
    assert [p.items for p in both] == [["GFS"], ["SP"]]



def test_a_heading_is_one_sentence_of_the_question() -> None:
    """A part asking two sentences ("… rely on a recurrence over a matrix. What do they each
    compute with it?") is headed by a clean span of one, not the two glued together."""
    text = "Eddy's HMM rely on a recurrence over a matrix. What do they each compute with it"
    assert aspect_span(text, "HMM") == "rely on a recurrence over a matrix"


def test_a_clause_naming_whose_answer_is_asked_is_no_part_of_its_own() -> None:
    """ "According to the Spanner authors, why did … Google applications stick with Megastore"
    was two parts: "Spanner: authors" and Google (The Google File System, quoted at random).
    The first clause asks nothing: it says whose answer the next asks for. Spanner's title
    names Google as its maker, also from another clause; a name the library lacks in a clause
    of its own that asks is still its own part."""
    cat = Catalogue([
        CatalogueItem("GFS", "The Google File System", ("Sanjay Ghemawat",)),
        CatalogueItem("SP", "Spanner: Google's Globally-Distributed Database", ("Corbett",)),
    ])  # fmt: skip
    q = ("According to the Spanner authors, why did hundreds of Google applications stick with "
         "Megastore despite its poor write performance?")
    assert [m.keys for m in cat.mentions(q.split(", ")[1], q)] == [()]  # Megastore alone
    assert decompose(q, cat) == []
    two = decompose("In Spanner, how are reads done, and how does Cassandra handle it?", cat)
    assert [(p.items, p.subject) for p in two] == [(["SP"], "Spanner"), ([], "Cassandra")]


def test_et_al_and_colleagues_belong_to_the_authors_name() -> None:
    """ "Vaswani et al.'s translation model" was headed "Attention Is All You Need (Vaswani):
    et al.'s translation model" and searched for "“Attention Is All You Need” et al.'s …":
    "et al." and "and colleagues" are the rest of the name, never what is asked."""
    cat = Catalogue([
        CatalogueItem("TR", "Attention Is All You Need", ("Ashish Vaswani", "Noam Shazeer")),
        CatalogueItem("SA", "Stand-Alone Self-Attention in Vision Models",
                      ("Prajit Ramachandran", "Niki Parmar")),
        CatalogueItem("BL", "Basic local alignment search tool", ("Stephen F. Altschul",)),
    ])  # fmt: skip
    parts = decompose("Did the choice matter for Vaswani et al.'s translation model, and what "
                      "did Ramachandran et al. find comparing absolute and relative encodings?",
                      cat)  # fmt: skip
    assert [p.items for p in parts] == [["TR"], ["SA"]]
    assert parts[0].heading == "Attention Is All You Need (Vaswani): translation model"
    assert parts[1].heading == ("Stand-Alone Self-Attention in Vision Models (Ramachandran): "
                                "find comparing absolute and relative encodings")  # fmt: skip
    assert all("et al" not in p.text for p in parts)
    assert "“Attention Is All You Need” translation model" in parts[0].text
    assert aspect_span("how do Altschul and colleagues' tools extend a hit",
                       "Altschul") == "tools extend a hit"  # fmt: skip


def test_a_name_owned_by_what_is_asked_about_is_no_part_of_its_own() -> None:
    """ "When a Bigtable tablet server loses its exclusive Chubby lock, what does it do?" was
    split into a Bigtable part and a Chubby part quoting Chubby's paper at random: the lock is
    the tablet server's ("its … Chubby lock"). A name after "its" that heads the noun phrase
    ("its successor Spanner on …") is still a paper asked about."""
    cat = Catalogue([
        CatalogueItem("BT", "Bigtable: A Distributed Storage System for Structured Data"),
        CatalogueItem("CH", "The Chubby lock service for loosely-coupled distributed systems"),
        CatalogueItem("SP", "Spanner: Google's Globally-Distributed Database"),
    ])  # fmt: skip
    assert decompose("When a Bigtable tablet server loses its exclusive Chubby lock, what does "
                     "it do?", cat) == []  # fmt: skip
    both = decompose("Compare Bigtable and its successor Spanner on transactions.", cat)
    assert [p.items for p in both] == [["BT"], ["SP"]]


def test_names_the_library_lacks_compared_in_an_authors_paper_are_what_it_reports() -> None:
    """ "When users compared Kleinberg's hub/authority output (as Clever) with Yahoo!, how often
    did each one win?" was two parts, Clever and Yahoo, both "not in the library", and
    Kleinberg's paper, which reports the comparison, was no part at all."""
    cat = Catalogue([
        CatalogueItem("HI", "Authoritative sources in a hyperlinked environment",
                      ("Jon M. Kleinberg",)),
        CatalogueItem("RA", "In Search of an Understandable Consensus Algorithm",
                      ("Diego Ongaro",)),
    ])  # fmt: skip
    q = ("When users compared Kleinberg's hub/authority output (as Clever) with Yahoo!, how "
         "often did each one win?")
    assert decompose(q, cat) == []
    two = decompose("How does Ongaro's algorithm compare with Cassandra?", cat)
    assert [(p.items, p.subject) for p in two] == [(["RA"], "Ongaro"), ([], "Cassandra")]


def test_names_in_what_one_paper_is_said_to_say_are_no_parts() -> None:
    """ "What do Ongaro and Ousterhout say makes Raft easier to understand than Paxos?" was a
    Raft part and a Paxos part ("nothing answers Paxos: makes Raft easier to understand"), and
    "According to Lamport, why is Paxos hard …?" three parts, one asking "According to “Paxos
    Made Simple”?". What a paper is said to say is that paper's question; two sayers, or a
    clause of its own, are still parts."""
    cat = Catalogue([
        CatalogueItem("RA", "In Search of an Understandable Consensus Algorithm",
                      ("Diego Ongaro", "John Ousterhout")),
        CatalogueItem("PS", "Paxos Made Simple", ("Leslie Lamport",)),
        CatalogueItem("PM", "Paxos Made Moderately Complex", ("Robbert van Renesse",)),
    ])  # fmt: skip
    assert decompose("What do Ongaro and Ousterhout say makes Raft easier to understand than "
                     "Paxos?", cat) == []  # fmt: skip
    assert decompose("According to Lamport, why is Paxos hard to understand compared with "
                     "Raft?", cat) == []  # fmt: skip
    each = decompose("What do Lamport and Ongaro each say about leader election?", cat)
    assert [p.items for p in each] == [["PS"], ["RA"]]
    two = decompose("What does Lamport say about proposers, and how does Ousterhout's algorithm "
                    "elect a leader?", cat)  # fmt: skip
    assert [p.items for p in two] == [["PS"], ["RA"]]


def _systems() -> Catalogue:
    return Catalogue(
        [
            CatalogueItem("GFS", "The Google File System", ("S. Ghemawat", "H. Gobioff")),
            CatalogueItem("BT", "Bigtable: A Distributed Storage System for Structured Data",
                          ("F. Chang",)),
            CatalogueItem("DYN", "Dynamo: Amazon's Highly Available Key-value Store",
                          ("G. DeCandia",)),
            CatalogueItem("CR", "Chain Replication for Supporting High Throughput and "
                          "Availability", ("R. van Renesse", "F. B. Schneider"),
                          intro="Chain replication is a new approach to coordinating servers."),
        ]
    )  # fmt: skip


def test_each_part_of_a_list_of_things_asks_of_its_own_thing_alone() -> None:
    """ "a GFS chunk, a Bigtable tablet and a Dynamo node": the list's items are not names
    alone, yet each is another paper's, and a part's question carries none of the others (a
    search for one paper's part that names the others finds them instead)."""
    q = ("How large are a GFS chunk, a Bigtable tablet and Dynamo's virtual node by default?")
    parts = decompose(q, _systems())
    assert [p.items for p in parts] == [["GFS"], ["BT"], ["DYN"]]
    texts = [p.text for p in parts]
    assert "Bigtable" not in texts[0] and "Dynamo" not in texts[0] and "GFS chunk" in texts[0]
    assert "GFS" not in texts[1] and "Dynamo" not in texts[1] and "a Bigtable tablet" in texts[1]
    assert "GFS" not in texts[2] and "Bigtable" not in texts[2] and "Dynamo's virtual" in texts[2]
    assert not any(re.search(r"\b(?:are|a)\s+(?:and|,)", t) for t in texts)  # no joint left


def test_a_clause_may_open_on_where_it_asks_after_a_comma() -> None:
    """ "In GFS, how …, and in chain replication, which …": each system's clause is its part,
    whole (the place it asks about, then its question)."""
    q = ("In GFS, how does a client find the chunk it wants, and in chain replication, which "
         "server answers a query?")
    parts = decompose(q, _systems())
    assert [p.items for p in parts] == [["GFS"], ["CR"]]
    assert parts[0].text.startswith("In GFS, how does a client find the chunk")
    assert "chain" not in parts[0].text
    assert parts[1].text.startswith("In chain replication, which server answers a query")


def test_a_conditional_clause_naming_another_system_is_a_part_of_its_own() -> None:
    q = ("What does Bigtable keep its tablet locations in, and if a Dynamo node fails for a "
         "while, who takes its writes?")
    parts = decompose(q, _systems())
    assert [p.items for p in parts] == [["BT"], ["DYN"]]
    assert "Dynamo" not in parts[0].text and "Bigtable" not in parts[1].text
    assert parts[1].text.lower().startswith("if a dynamo node fails")


def test_a_name_typed_in_another_form_is_headed_by_the_librarys_name() -> None:
    """ "Salimans and Kingma's weight-normalized networks": the heading is the paper's name,
    "Weight Normalization", not the question's "Weight-normalized"."""
    cat = Catalogue(
        [
            CatalogueItem("WN", "Weight Normalization: A Simple Reparameterization to Accelerate "
                          "Training of Deep Neural Networks", ("T. Salimans", "D. P. Kingma")),
            CatalogueItem("ZK", "ZooKeeper: Wait-free coordination for Internet-scale systems",
                          ("P. Hunt",)),
        ]
    )  # fmt: skip
    q = "How does ZooKeeper order writes, and how are weights set in weight-normalized nets?"
    parts = decompose(q, cat)
    assert [p.items for p in parts] == [["ZK"], ["WN"]]
    assert parts[0].heading.startswith("ZooKeeper")
    assert parts[1].heading.startswith("Weight Normalization")


def test_a_heading_whose_question_words_say_too_little_goes_on_past_the_name() -> None:
    """ "how much did SimCLRv2 gain …": "SimCLRv2: how much" asks nothing a reader can tell;
    the heading goes on after the name, marked as elided, and stops short of another part's."""
    cat = Catalogue(
        [
            CatalogueItem("MR", "MapReduce: Simplified Data Processing on Large Clusters",
                          ("J. Dean", "S. Ghemawat")),
            CatalogueItem("ZK", "ZooKeeper: Wait-free coordination for Internet-scale systems",
                          ("P. Hunt",)),
        ]
    )  # fmt: skip
    q = ("How much do MapReduce's backup tasks buy on the sort benchmark, and how long does "
         "ZooKeeper take to elect a new leader?")  # fmt: skip
    parts = decompose(q, cat)
    assert [p.heading for p in parts] == [
        "MapReduce: how much … backup tasks buy on the sort benchmark",
        "ZooKeeper: how long … take to elect a new leader",
    ]
    # Where the words after the name name another part, the heading stops before them.
    cat = Catalogue(
        [
            CatalogueItem("MO", "Momentum Contrast for Unsupervised Visual Representation "
                          "Learning", ("K. He",), abstract="We present Momentum Contrast (MoCo)."),
            CatalogueItem("SC", "Big Self-Supervised Models are Strong Semi-Supervised Learners",
                          ("T. Chen",), abstract="SimCLRv2 is a semi-supervised algorithm."),
        ]
    )  # fmt: skip
    q = "What does the queue buy MoCo, and how much did SimCLRv2 gain from adopting MoCo's memory?"
    assert [p.heading for p in decompose(q, cat)] == ["MoCo: what does the queue buy",
                                                      "SimCLRv2: how much"]  # fmt: skip
