"""The offline writer's quotes on synthetic passages, with the real local embedder: whole
sentences only, captions, figure labels and roadmaps are not evidence, the sentence that gives
the number asked for leads, at most three quotes from one paper, a sentence that leans on the
one before is quoted with it, a question nothing states is said so uncited, and the user's
notes are named as theirs (issue 27)."""

from __future__ import annotations

import dataclasses

import pytest

from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.quotes import (
    Candidate,
    EvidenceChunk,
    QuoteScorer,
    chunks_of,
    in_passage,
    quotable,
)
from zocrates_nb.agents.offline.sentences import is_prose, is_roadmap
from zocrates_nb.agents.offline.verdict import Verdict, not_given, verdict
from zocrates_nb.retrieval.state import Evidence


@pytest.fixture(scope="module")
def scorer() -> QuoteScorer:
    return QuoteScorer(SentenceEmbeddings(), None)


def chunk(text: str, index: int = 1, title: str = "The Google File System",
          section: str = "2.5 Chunk Size") -> EvidenceChunk:  # fmt: skip
    return EvidenceChunk(index, title, "Ghemawat et al.", "2003", section, text)


def body_passage(key: str, title: str, text: str, section: str = "1") -> Evidence:
    """A passage of a paper's body, as the index returns it."""
    return Evidence(chunk_id=f"{key}:1", attachment_key=key, item_key=key, title=title,
                    authors=["A. Author"], year=2006, chunk_type="body", section=section,
                    text=text)  # fmt: skip


def quoted(scorer: QuoteScorer, question: str, chunks: list[EvidenceChunk]) -> list[str]:
    cands = scorer.candidates(chunks)
    scorer.score(question, cands)
    return [" ".join(c.text for c in run) for run, _ in scorer.select(question, cands)]


@pytest.mark.parametrize(
    ("sentence", "prose"),
    [
        ("A candidate must contact a majority of the cluster, which means that every committed",
         False),  # cut at a page break: never shown as if complete
        ("An efqueue momentum encoder encoder encoder encoder gradient.", False),  # figure labels
        ("Raft uses randomized election timeouts to ensure that split votes are rare.", True),
        # a label ends it, not an article: the sentence is whole
        ("These results show that bigger models are more label-efficient (more discussions in "
         "Appendix A).", True),
        ("Servers cut at a column break keep the log of a.", False),
        ("The big models were trained for 300,000 steps (3.5 days).", True),
        # a primer's numbered references at the end of its last section: not what it says
        ("1. Rabiner, L.R. A tutorial on hidden Markov models and selected applications in "
         "speech recognition. Proc. IEEE 77, 257–286 (1989).", False),
        ("Beyer, W. A., Smith, T. F., Stein, M. L. & Ulam, S. M. (1979). Math. Biosci. 19, "
         "9-25.", False),
        ("Local similarity algorithms seek only conserved subsequences (Smith & Waterman, "
         "1981; Goad & Kanehisa, 1982).", True),
        ("We set K = 65536 and m = 0.999.", True),  # a setting, stated in symbols and values
        ("= 0.5 x + 3.2 y − 1.7 z ≈ 4.1 (12).", False),  # a formula
        ("ResNet-50 76.5 81.2 69.3 72.4 70.0 68.1.", False),  # a table's row
        # the tail of a sentence a formula's subscripts broke off (Spanner § 4.1.2)
        ("; and the commit timestamp of a transaction Ti by si.", False),
        ("“Tour Bus” removes the erroneous bubbles of the graph in a breadth-first search.",
         True),
        # a sentence may end on a preposition or a pronoun (Bitcoin § 8, Paxos Made Simple)
        ("A user only needs to keep a copy of the block headers and obtain the Merkle branch "
         "linking the transaction to the block it's timestamped in.", True),
        ("Ballots are not created; they just are.", True),
        ("We hope an advanced pretext task will improve this.", True),
        ("The deletion weight must be chosen to be at least equal to the.", False),  # cut
        # the labels of a figure's panels (NTK § 6.3), and a list in prose that is not
        ("(a) The 2nd and 3rd principal (b) Deviation of the network function (c) Convergence "
         "of fθ along the 2nd components of MNIST.", False),
        ("(a) the leader crashes, (b) a follower restarts with an empty log, and (c) the "
         "network heals.", True),
    ],
)  # fmt: skip
def test_only_whole_sentences_of_prose_are_quotable(sentence: str, prose: bool) -> None:
    assert is_prose(sentence) is prose


def test_roadmaps_and_pointers_are_not_evidence() -> None:
    assert is_roadmap("In Section 3.1, we mention that BERT uses a mixed strategy for masking.")
    assert is_roadmap("Section 2 gives a mathematical description of PageRank.")
    assert is_roadmap("First, as previously mentioned (§4.5), we review how teams use Chubby.")
    assert is_roadmap("Leader election: a new leader must be chosen when an existing leader "
                      "fails (Section 5.2).")  # fmt: skip
    assert is_roadmap("See also arXiv:1706.03762.")  # a note's pointer, not what it says
    # A section as the subject, whatever its verb ("investigates", "surveys", not only the
    # few verbs a paper usually uses).
    assert is_roadmap("Finally, Section 6 examines how large the base set must grow, and "
                      "Section 9 surveys earlier proposals.")  # fmt: skip
    assert not is_roadmap("The master kills itself if its Chubby session expires.")
    assert not is_roadmap("In this paper, we show that no asynchronous consensus protocol "
                          "can tolerate even a single unannounced process death.")  # fmt: skip


def test_captions_are_skipped_and_the_interrupted_sentence_is_one_candidate(
    scorer: QuoteScorer,
) -> None:
    text = (
        "Chunk size is one of the key design parameters. We have chosen 64 MB, which is much "
        "larger than typical file system block\n\n"
        "**Figure 1:** GFS Architecture. The master holds chunk handles and locations.\n\n"
        "sizes. Each chunk replica is stored as a plain Linux file on a chunkserver."
    )
    texts = [c.text for c in scorer.candidates([chunk(text)])]
    whole = "We have chosen 64 MB, which is much larger than typical file system block sizes."
    assert whole in texts
    assert not [t for t in texts if "master holds chunk handles" in t]


def test_the_sentence_giving_the_number_asked_for_leads(scorer: QuoteScorer) -> None:
    text = (
        "Chunk size is one of the key design parameters of the Google File System. "
        "A large chunk size offers several important advantages for the chunk design. "
        "We have chosen 64 MB, which is much larger than typical file system block sizes."
    )
    quotes = quoted(scorer, "What chunk size does the Google File System use?", [chunk(text)])
    assert quotes[0].startswith("We have chosen 64 MB")


def test_at_most_three_quotes_from_one_paper_unless_a_further_one_answers_as_well(
    scorer: QuoteScorer,
) -> None:
    text = "\n\n".join([
        "The master stores the file and chunk namespaces in its memory.",
        "The master keeps the mapping from files to chunks in memory as well.",
        "Chunk locations are polled from the chunkservers at master startup.",
        "An operation log records the critical metadata changes durably.",
        "Checkpoints of the master state are kept in a compact B-tree form.",
        "Namespace locks serialise snapshots against concurrent file creation.",
    ])  # fmt: skip
    question = "What metadata does the GFS master keep?"
    paper = scorer.candidates([chunk(text)])
    scorer.score(question, paper)
    for c, s in zip(paper, (0.9, 0.8, 0.79, 0.78, 0.77, 0.76), strict=True):
        c.score = s  # all near the best, none answering as well as it
    picked = scorer.select(question, paper, max_words=1000)
    assert len(picked) == 3
    paper[1].score, paper[2].score, paper[3].score = 0.88, 0.87, 0.86  # each adds an answer
    assert len(scorer.select(question, paper, max_words=1000)) == 4


def test_the_next_quote_comes_from_beyond_what_the_first_quote_already_carries(
    scorer: QuoteScorer,
) -> None:
    """A quote carries the sentences after its own: a sentence it already holds is no next
    choice (it was chosen, then dropped as quoted, and the remedy stated in the next
    paragraph was never reached)."""
    text = "\n\n".join([
        "A straggler is a machine that takes an unusually long time to finish its last tasks. "
        "Stragglers can arise for a whole host of reasons on a busy cluster. "
        "For example, a machine with a bad disk may see frequent correctable errors that slow "
        "its reads.",
        "When a job is close to completion, the master schedules backup executions of the "
        "remaining in-progress tasks.",
    ])  # fmt: skip
    question = "What does MapReduce do about slow stragglers at the end of a job?"
    paper = scorer.candidates([chunk(text, title="MapReduce", section="3.6 Backup Tasks")])
    scorer.score(question, paper)
    first, second, near, remedy = paper
    for c, value in ((first, 0.9), (second, 0.3), (near, 0.8), (remedy, 0.8)):
        c.score = value
    picked = scorer.select(question, paper, max_sentences=2, max_words=1000)
    assert [run[0].text[:20] for run, _ in picked] == [first.text[:20], remedy.text[:20]]
    assert near in picked[0][0]  # said once, in the first quote


def test_a_sentence_a_quote_already_carries_takes_no_place_among_the_quotes(
    scorer: QuoteScorer,
) -> None:
    """The quotes, not the sentences they carry, count towards the limits: a neighbour the
    first quote took in used to be "chosen" too, and the second quote then had to score as
    the third does (Page and Brin's answer, two paragraphs on, was never shown)."""
    text = "\n\n".join([
        "We used the counts of web page accesses from a proxy cache and compared these to "
        "PageRank. The cache data was collected from several proxies over several months.",
        "Many pages in the cache data are people reading their personal mail on free services.",
        "Sites with high usage but low PageRank tend to be pornographic ones, which have few "
        "links pointing to them from other sites.",
    ])  # fmt: skip
    question = "Which sites were visited a lot but ranked low when usage was compared?"
    paper = scorer.candidates([chunk(text, title="The PageRank Citation Ranking")])
    scorer.score(question, paper)
    first, carried, mail, answer = paper
    for c, value in ((first, 0.9), (carried, 0.85), (mail, 0.3), (answer, 0.6)):
        c.score = value  # the answer scores below the third quote's bar (STOP × best)
    picked = scorer.select(question, paper, max_words=1000)
    assert [run[0].text[:20] for run, _ in picked] == [first.text[:20], answer.text[:20]]
    assert carried in picked[0][0]


@pytest.mark.parametrize(
    ("text", "leans"),
    [
        ("Sinusoidal embeddings based on the absolute position of pixels can be used, but "
         "relative positional embeddings result in significantly better accuracies. Instead, "
         "attention with 2D relative position embeddings, relative attention, is used.",
         "Instead"),
        # "then" within its first words goes on from the order of the columns before it
        ("Fixed variables should come first, followed by measured variables, each ordered so "
         "that related variables are contiguous. Rows can then be ordered by the first "
         "variable, breaking ties with the second and subsequent (fixed) variables.", "Rows"),
    ],
)  # fmt: skip
def test_a_sentence_that_leans_on_the_one_before_is_quoted_with_it(
    scorer: QuoteScorer, text: str, leans: str
) -> None:
    cands = scorer.candidates([chunk(text, title="Stand-Alone Self-Attention", section="2.2")])
    lean = next(c for c in cands if c.text.startswith(leans))
    at = {(c.chunk.index, c.paragraph, c.order): c for c in cands}
    both = [cands[0].text[:11], lean.text[:11]]
    assert [c.text[:11] for c in in_passage(lean, at, set())] == both
    # A sentence that stands by itself leads its quote: the one before stays out.
    first = cands[0]
    assert [c.text[:11] for c in in_passage(first, at, set())] == both


def test_a_quote_takes_in_the_answer_just_after_the_sentence_naming_the_topic(
    scorer: QuoteScorer,
) -> None:
    """The scorer prefers the sentence naming what the question is about; the mechanism asked
    for is often the next one, and the quote carries it."""
    text = (
        "One of the common causes that lengthens the total time taken for a job is a "
        "straggler: a machine that takes an unusually long time to complete one of the last "
        "few tasks. We have a general mechanism to alleviate the problem of stragglers. When "
        "an operation is close to completion, the master schedules backup executions of the "
        "remaining in-progress tasks. Stragglers were studied at length by others before us "
        "in a long series of measurements on shared clusters of many kinds and sizes, which "
        "this quote has no room left for at all."
    )
    question = "What does the system do about a few slow machines holding up the end of a job?"
    quotes = quoted(scorer, question, [chunk(text, title="MapReduce", section="3.6")])
    assert "schedules backup executions" in quotes[0]
    assert "no room left" not in quotes[0]  # a quote stays short


def test_a_number_nothing_gives_is_said_plainly_and_uncited(scorer: QuoteScorer) -> None:
    text = (
        "Building Chubby was an engineering effort required to fill the needs mentioned above; "
        "it was not research. Google's project teams are free to set up their own Chubby cells."
    )
    question = "How many engineers were on the team that built Chubby?"
    cands = scorer.candidates([chunk(text, title="The Chubby lock service", section="1")])
    scorer.score(question, cands)
    assert verdict(question, cands) is Verdict.NOT_GIVEN
    lines = not_given(question, cands[:1])
    body = "\n".join(lines)
    assert body.startswith("Your papers do not give this") and question in body
    assert "[1]" not in body and "Building Chubby was an engineering effort" in body
    answered = "Chubby is run by a team of 12 engineers, who built it in a year."
    ok = scorer.candidates([chunk(answered, title="The Chubby lock service", section="1")])
    scorer.score(question, ok)
    assert verdict(question, ok) is not Verdict.NOT_GIVEN


def test_the_named_papers_nearest_sentences_are_said_to_come_near_not_to_be_absent() -> None:
    """A loosely worded question ("Which one?") about a paper it names scores low against the
    sentence that answers it: that paper's sentences come near, they are not "not given"; a
    number asked for and given by none still is."""
    c = Candidate(chunk("Weight normalization makes the optimization less sensitive to the "
                        "choice of learning rate.", title="Weight Normalization"), 1,
                  "Weight normalization makes training less sensitive to the learning rate.",
                  score=0.36)  # fmt: skip
    loose = "They argue it makes training less fussy about one hyperparameter. Which one?"
    assert verdict(loose, [c]) is Verdict.NOT_GIVEN  # no paper named: nothing bears on it
    assert verdict(loose, [c], named=True) is Verdict.APPROACHED
    assert verdict("How many GPUs did they train on?", [c], named=True) is Verdict.NOT_GIVEN
    fee = "What transaction fee, in bitcoins, does the paper recommend?"  # an amount of money
    assert verdict(fee, [c], named=True) is Verdict.NOT_GIVEN
    estimate = "What does the paper estimate mining one block costs in electricity?"
    assert verdict(estimate, [c], named=True) is Verdict.NOT_GIVEN  # an estimate is a figure
    sized = Candidate(c.chunk, 2, "Input and output have dmodel = 512, the inner layer dff = 4096.",
                      score=0.34)
    big = "Roughly how big is the hidden layer inside its feed-forward blocks?"
    assert verdict(big, [sized], named=True) is Verdict.APPROACHED  # a number is given
    c.score = 0.2  # below anything on topic
    assert verdict(loose, [c], named=True) is Verdict.NOT_GIVEN


def test_a_child_note_is_named_as_the_users_note_on_its_paper() -> None:
    common = {"item_key": "PAPER1", "authors": ["Daniel R. Zerbino"], "year": 2008}
    paper = Evidence(chunk_id="A:1", attachment_key="A", title="Velvet", chunk_type="body",
                     text="Velvet removes tips.", section="Tips", **common)  # fmt: skip
    note = Evidence(chunk_id="N:0", attachment_key="N", title="Velvet builds a de Bruijn graph",
                    chunk_type="note", text="Velvet builds a de Bruijn graph of k-mers.",
                    **common)  # fmt: skip
    chunks = chunks_of([note, paper])
    assert chunks[0].source_line() == "Your note on *Velvet*"
    assert chunks[1].source_line() == "*Velvet* (Zerbino, 2008)"
    assert isinstance(quotable(chunks)[0], Candidate)


def test_a_question_on_my_notes_is_answered_by_the_notes_lines(scorer: QuoteScorer) -> None:
    """A note is written in lines and list items, not a paper's sentences; a question asking
    what the researcher wrote ("my reading list") is answered by their note before any paper."""
    common = {"authors": ["A. Author"], "year": 2020}
    note = Evidence(chunk_id="N:0", attachment_key="N", item_key="N", title="Reading list",
                    chunk_type="note", section="Reading list",
                    text="# Reading list\n\n1. Leases for caches (1989)\n"
                         "2. Chubby and ZooKeeper (systems built on consensus)\n3. Raft\n\n"
                         "See also arXiv:1706.03762.",
                    **common)  # fmt: skip
    paper = Evidence(chunk_id="P:1", attachment_key="P", item_key="P", title="ZooKeeper",
                     chunk_type="body", section="1 Introduction",
                     text="ZooKeeper is a coordination service for distributed systems, used "
                          "for configuration, group membership and leader election.",
                     **common)  # fmt: skip
    question = "Which coordination systems are on my reading list?"
    chunks = chunks_of([paper, note])
    lines = [c.text for c in quotable(chunks) if c.chunk.is_note]
    assert "Chubby and ZooKeeper (systems built on consensus)" in lines
    assert not any(line.startswith(("#", "Reading list")) for line in lines)  # the title names it
    assert not any(line.startswith("See also") for line in lines)  # a pointer says nothing
    assert chunks[1].source_line() == "Your note “Reading list”"
    assert "Chubby and ZooKeeper" in quoted(scorer, question, chunks)[0]


def test_a_british_spelling_is_a_word_the_library_uses() -> None:
    """"How are the weights initialised…" was refused as off the library's vocabulary: the
    library writes "initialized"."""
    from zocrates_nb.retrieval.lexicon import spellings

    assert "initialized" in spellings("initialised")
    assert "normalization" in spellings("normalisation")
    assert "color" in spellings("colour") and "modeling" in spellings("modelling")
    assert spellings("use") == ["use"]


def test_a_scope_with_nothing_names_the_closest_papers_outside_it() -> None:
    """Two papers on one subject score alike, so neither is "clearly better" elsewhere; a
    scope with nothing on the question still says which papers outside it come closest."""
    from zocrates_nb.agents.offline.brief import WriterBrief
    from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer

    brief = WriterBrief(question="How is a leader chosen?", goal="How is a leader chosen?",
                        evidence=(), scope_label="the selected paper",
                        nearest=("Paxos Made Moderately Complex",))  # fmt: skip
    answer = OfflineSynthesizer(SentenceEmbeddings()).no_evidence(brief, [])
    assert answer.startswith("Not in the selected paper.")
    assert "closest paper in your library is *Paxos Made Moderately Complex*" in answer
    clear = WriterBrief(question="q", goal="q", evidence=(), scope_label="the selected paper",
                        elsewhere=("Raft",), nearest=("Paxos Made Moderately Complex",))
    assert "closest paper" not in OfflineSynthesizer(SentenceEmbeddings()).no_evidence(clear, [])


def test_a_part_asking_a_figure_its_paper_never_gives_is_said_and_uncited(
    scorer: QuoteScorer,
) -> None:
    """A compound question's part asks its paper for a number the paper never gives: that part
    says so, shows its closest sentence uncited, and a question no part of which is answered
    is a plain negative with nothing cited."""
    from zocrates_nb.agents.offline.brief import WriterBrief
    from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer
    from zocrates_nb.agents.parts import Part

    common = {"authors": ["A. Author"], "year": 2020, "chunk_type": "body", "section": "1"}
    chubby = Evidence(chunk_id="C:1", attachment_key="C", item_key="C", title="Chubby", **common,
                      text="Building Chubby was an engineering effort required to fill the "
                           "needs mentioned above; it was not research. Google's project teams "
                           "are free to set up their own Chubby cells.")  # fmt: skip
    gfs = Evidence(chunk_id="G:1", attachment_key="G", item_key="G", title="GFS", **common,
                   text="The master stores three major types of metadata in its memory. "
                        "Clients never read and write file data through the master.")
    parts = (Part("How many engineers built Chubby?", "Chubby", ["C"], ["Chubby"],
                  "Chubby: how many engineers", "Chubby"),
             Part("How many engineers built GFS?", "GFS", ["G"], ["GFS"],
                  "GFS: how many engineers", "GFS"))  # fmt: skip
    q = "How many engineers built Chubby and GFS?"
    brief = WriterBrief(question=q, goal=q, evidence=(chubby, gfs), parts=parts)
    answer = OfflineSynthesizer(SentenceEmbeddings()).answer(brief)
    assert answer.startswith("Your papers do not give this")
    assert "*Chubby* does not give this" in answer and "*GFS* does not give this" in answer
    assert "[1]" not in answer and "[2]" not in answer


def test_a_scope_that_does_not_give_what_is_asked_names_the_closest_papers_outside_it() -> None:
    """The selected paper only shares the question's topic: the plain negative says so and
    still says where else in the library to look."""
    from zocrates_nb.agents.offline.brief import WriterBrief
    from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer

    chubby = body_passage("C", "Chubby", "Building Chubby was an engineering effort required to "
                          "fill the needs mentioned above; it was not research. Google's project "
                          "teams are free to set up their own Chubby cells.")  # fmt: skip
    q = "How many engineers built Chubby?"
    brief = WriterBrief(question=q, goal=q, evidence=(chubby,), scope_label="the selected paper",
                        nearest=("ZooKeeper: Wait-free coordination",))  # fmt: skip
    answer = OfflineSynthesizer(SentenceEmbeddings()).answer(brief)
    assert answer.startswith("Your papers do not give this (the selected paper)")
    assert "closest paper in your library is *ZooKeeper: Wait-free coordination*" in answer
    assert "[1]" not in answer


def test_a_word_the_library_never_uses_is_phrasing_when_the_question_names_its_paper() -> None:
    """ "less fussy about": no paper uses "fussy". Of a question naming no paper, that word
    may be the subject the library lacks; of one naming a paper the evidence holds, it is how
    the researcher put it."""
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer

    synth = OfflineSynthesizer(SentenceEmbeddings(),
                               lexicon=lambda w: w not in ("fussy", "rid", "kademlia"))
    q = "They argue the reparameterization makes training less fussy about one hyperparameter"
    assert synth.off_topic(q, 0.37, [], [])
    assert not synth.off_topic(q, 0.37, [], [], paper=True)
    assert not synth.off_topic("How does it get rid of tips?", 0.73, [], [], paper=True)
    assert synth.off_topic("Does it use Kademlia?", 0.73, [], [], paper=True)  # a name
    synth = OfflineSynthesizer(SentenceEmbeddings(), lexicon=lambda w: w not in ("traitors",
                                                                                 "oral"))
    many = "In his generals paper, how many traitors can oral messages tolerate?"
    assert synth.off_topic(many, 0.41, [], [], paper=True)  # two: a subject it lacks


def test_a_parts_own_sentences_are_scored_against_what_is_asked_not_its_papers_names() -> None:
    """A part named by its authors carries its paper's title in quotes (for the search); its
    sentences all come from that paper, so the title and the name are left out of the
    query that scores them."""
    from zocrates_nb.agents.offline.writer import part_query
    from zocrates_nb.agents.parts import Part

    title = "Identification of Common Molecular Subsequences"
    part = Part(text=f"In “{title}” method how is the second-best pair of segments found?",
                subject="Smith and Waterman", items=["SW"], titles=[title])  # fmt: skip
    assert part_query(part) == "In method how is the second-best pair of segments found?"
    named = Part(text="How does Raft's leader handle a client read?", subject="Raft",
                 items=["RAFT"], titles=["In Search of an Understandable Consensus Algorithm"])
    assert part_query(named) == "How does leader handle a client read?"
    bare = Part(text="How does Raft?", subject="Raft", items=["RAFT"])
    assert part_query(bare) == "How does Raft?"  # nothing would be left: the part's text


def test_the_sentence_stating_the_value_chosen_leads_when_the_choice_is_asked(
    scorer: QuoteScorer,
) -> None:
    """ "Which window size did they settle on?" is answered by the sentence stating their
    choice, not by one giving another value of it in passing (an example's)."""
    from zocrates_nb.agents.offline.quantity import asks_choice, states_choice
    from zocrates_nb.agents.offline.quotes import CHOICE

    question = "Which window size did they settle on?"
    assert asks_choice(question) and not asks_choice("How large is the sliding window?")
    assert states_choice("We set it to a default value of 4.")
    assert states_choice("We have found in practice that T = 17 is a good choice.")
    assert not states_choice("We set the window to span several sentences.")  # no value
    assert not states_choice("With a window size of 3 terms, the graph has eleven edges.")
    text = ("With a window size of 3 terms, the graph of the example in Figure 2 has eleven "
            "edges.\n\nWe set the window size to 4 by default, after trying values from 2 "
            "to 10.")  # fmt: skip
    cands = scorer.candidates([chunk(text, title="Graph-of-word", section="4.4")])
    scorer.score(question, cands)
    example, chosen = cands
    assert chosen.score - example.score > CHOICE  # leads, its choice counted
    quotes = quoted(scorer, question, [chunk(text, title="Graph-of-word", section="4.4")])
    assert quotes[0].startswith("We set the window size to 4 by default")


def test_a_papers_sentences_are_ordered_as_if_the_question_did_not_name_it(
    scorer: QuoteScorer,
) -> None:
    """Every sentence of ZooKeeper's paper is about ZooKeeper: the name in the question drew
    the ones that repeat it ("… partitioning the ZooKeeper data …") ahead of the
    one that answers. How well a sentence answers stays the question's own measure."""
    from zocrates_nb.agents.offline.aspects import without_names

    text = (
        "We increase write throughput by partitioning the ZooKeeper data into multiple "
        "ZooKeeper ensembles. In theory the performance of Figure 7 would match the performance "
        "of ZooKeeper with 100% writes. Read throughput is higher than write throughput because "
        "reads do not use atomic broadcast. By processing reads locally, we obtain excellent "
        "read performance because it is just an in-memory operation on the local server, and "
        "there is no disk activity or agreement protocol to run."
    )
    question = "Why is ZooKeeper faster at reads than at writes?"
    unnamed = without_names(question, ["ZooKeeper"])
    assert unnamed == "Why is it faster at reads than at writes?"
    papers = [EvidenceChunk(1, "ZooKeeper", "Hunt et al.", "2010", "5.1 Throughput", text, "ZK")]
    plain = scorer.candidates(papers)
    scorer.score(question, plain)
    assert not max(plain, key=lambda c: c.score).text.startswith("Read")  # the name's lead
    bare = scorer.candidates(papers)
    scorer.score(question, bare, unnamed, frozenset({"ZK"}))
    assert max(bare, key=lambda c: c.score).text.startswith("Read throughput is higher")
    assert [round(c.relevance, 6) for c in bare] == [round(c.relevance, 6) for c in plain]
    # Another paper's sentences are not lifted: the question's names may be theirs to answer.
    other = scorer.candidates([dataclasses.replace(papers[0], item_key="OTHER")])
    scorer.score(question, other, unnamed, frozenset({"ZK"}))
    assert [c.score for c in other] == pytest.approx([c.score for c in plain])


@pytest.mark.parametrize(
    ("question", "names", "bare"),
    [
        ("For the birds data set, Snell and colleagues build class embeddings. Why?", ["Snell"],
         "For the birds data set, they build class embeddings. Why?"),
        ("What makes a read cheaper than a write in ZooKeeper?", ["ZooKeeper"],
         "What makes a read cheaper than a write?"),
        ("How does Raft's leader commit?", ["Raft"], "How does its leader commit?"),
        ("How do Raft pick a leader?", ["Raft"], "How do they pick a leader?"),  # a part's
        ("In Velvet, how does Tour Bus merge paths?", ["Velvet"], "How does Tour Bus merge paths?"),
        ("How does Raft work?", ["Raft"], ""),  # nothing left to ask
    ],
)
def test_a_question_without_the_names_of_its_papers(question: str, names: list[str], bare: str
                                                    ) -> None:  # fmt: skip
    from zocrates_nb.agents.offline.aspects import without_names

    assert without_names(question, names) == bare


def test_the_answer_does_not_say_no_passage_matches_beside_the_passage_that_does() -> None:
    """The planner's rough "no passage … closely matches" gap was printed under quotes the
    writer had judged to state the answer ("What the papers in your library say …")."""
    from zocrates_nb.agents.offline.brief import WriterBrief
    from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer

    gfs = body_passage("G", "GFS", "The master stores three major types of metadata in its "
                       "memory: the file and chunk namespaces, the mapping from files to chunks, "
                       "and the locations of each chunk's replicas.", "2.6 Metadata")  # fmt: skip
    q = "What kinds of metadata does the master keep in memory?"
    gap = f"no passage in the library closely matches the question: {q}"
    brief = WriterBrief(question=q, goal=q, evidence=(gfs,), gaps=(gap, "§4 of GFS not read"))
    answer = OfflineSynthesizer(SentenceEmbeddings()).answer(brief)
    assert "[1]" in answer and "closely matches" not in answer
    assert "Not covered by the evidence gathered: §4 of GFS not read." in answer


def test_the_sentence_in_the_passage_window_nearest_the_question_leads(
    scorer: QuoteScorer,
) -> None:
    """A sentence alone says less than its passage: "logs statistics … at the end of each job"
    shares the question's words, while the backup-task sentence sits in the window the index
    found nearest the question (`Candidate.prior`, as `focus` reads it from stored vectors).
    The window orders the sentences; how well each answers (`relevance`) is its own."""
    question = "How does MapReduce cope with a few slow workers near the end of a job?"
    backup = EvidenceChunk(
        1, "MapReduce", "Dean & Ghemawat", "2004", "3.6 Backup Tasks",
        "When a MapReduce operation is close to completion, the master schedules backup "
        "executions of the remaining in-progress tasks. The task is marked as completed whenever "
        "either the primary or the backup execution completes.", "MR")  # fmt: skip
    stats = dataclasses.replace(
        backup, index=2, section="6 Experience",
        text="At the end of each job, the MapReduce library logs statistics about the "
        "computational resources used by the job. Slow machines are common in large clusters "
        "of commodity machines.")  # fmt: skip
    alone = scorer.candidates([backup, stats])
    scorer.score(question, alone)
    assert not max(alone, key=lambda c: c.score).text.startswith("When a MapReduce")
    placed = scorer.candidates([backup, stats])
    for c in placed:
        c.prior = 0.70 if c.chunk is backup else 0.42
    scorer.score(question, placed)
    assert max(placed, key=lambda c: c.score).text.startswith("When a MapReduce operation")
    assert [round(c.relevance, 6) for c in placed] == [round(c.relevance, 6) for c in alone]


def test_a_notes_lines_are_ordered_by_what_they_say_not_by_their_window(
    scorer: QuoteScorer,
) -> None:
    """A note is written in lines that stand alone: the line naming the follow-up papers
    answers "which later papers did I mark as building on the Transformer", though the stored
    window of its section ("Results to remember") is further from the question than the
    note's opening."""
    common = {"item_key": "NOTE", "attachment_key": "NOTE", "authors": [], "year": None,
              "chunk_type": "note", "title": "Reading notes: the Transformer"}  # fmt: skip
    opening = Evidence(chunk_id="NOTE:0", section="Reading notes: the Transformer",
                       text="Encoder-decoder model built only from attention and position-wise "
                            "feed-forward layers: no recurrence and no convolution.",
                       **common)  # fmt: skip
    results = Evidence(chunk_id="NOTE:1", section="Results to remember",
                       text="Follow-ups in this library: BERT (pre-training the encoder) and "
                            "stand-alone self-attention for vision.", **common)  # fmt: skip
    question = "Which later papers in my library did I mark down as building on the Transformer?"
    gaps = []
    for near, far in ((0.36, 0.12), (0.12, 0.36)):
        cands = scorer.candidates(chunks_of([opening, results]))
        for c in cands:
            c.prior = near if c.chunk.section.startswith("Reading") else far
        scorer.score(question, cands)
        gaps.append(round(cands[1].score - cands[0].score, 6))
    assert gaps[0] == gaps[1]


def test_a_scope_that_only_comes_near_says_so_and_where_else_to_look() -> None:
    """The selected paper has sequencers, not sequential nodes: its quotes only come near what
    is asked, so the answer says that is as close as the scope comes and names the closest
    paper outside it (one paper: "is", "it")."""
    from zocrates_nb.agents.offline.brief import WriterBrief
    from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
    from zocrates_nb.agents.offline.writer import OfflineSynthesizer

    chubby = body_passage("C", "Chubby", "A lock holder may request a sequencer, an opaque "
                          "byte-string that describes the state of the lock immediately after "
                          "acquisition. The client passes the sequencer to servers if it expects "
                          "the operation to be protected by the lock.")  # fmt: skip
    q = ("Can the service stamp an ever-growing sequence number onto the name of a node a "
         "client creates?")
    brief = WriterBrief(question=q, goal=q, evidence=(chubby,), scope_label="the selected paper",
                        nearest=("ZooKeeper: Wait-free coordination",))  # fmt: skip
    answer = OfflineSynthesizer(SentenceEmbeddings()).answer(brief)
    assert answer.startswith("Nothing in your papers states this directly"), answer
    assert ("That is the closest the selected paper comes. Outside it, the closest paper in your "
            "library is *ZooKeeper: Wait-free coordination*: search the whole library to read "
            "it.") in answer  # fmt: skip


def test_an_acronym_the_paper_defines_answers_its_long_form_in_the_question(
    scorer: QuoteScorer,
) -> None:
    """The paper defines "Deep Q-Network (DQN)" once and then writes only "DQN": a question
    spelling it out shares its words with the sentences using the acronym, and only those."""
    from zocrates_nb.text import defined_acronyms, with_acronyms

    text = ("The approach we use is the Deep Q-Network (DQN) proposed by Mnih et al. for the "
            "Atari games. Weight normalization was easy to apply in this setting.\n\n"
            "We were not able to get batch normalization to work for DQN without using an "
            "impractically large minibatch size.")  # fmt: skip
    assert defined_acronyms(text) == {"DQN": "Deep Q Network"}
    q = "Could batch normalization be used in the deep Q-network experiments?"
    assert with_acronyms(q, defined_acronyms(text)).endswith(" DQN")

    def scores(acronyms: bool) -> dict[str, float]:
        cands = scorer.candidates([chunk(text, section="5.4 Reinforcement Learning")])
        if not acronyms:
            scorer.defined = {}
        scorer.score(q, cands)
        return {c.text[:12]: c.score for c in cands}

    on, off = scores(True), scores(False)
    gain = {k: on[k] - off[k] for k in on}
    assert gain["We were not "] > gain["Weight norma"] + 0.03, gain
