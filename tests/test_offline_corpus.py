"""The embedded offline engine on the real corpus library, as a researcher asks it (issue 21):
a comparison of six named systems answered part by part from each system's own paper, the first
quote from the section whose heading names what is asked, and a turn that embeds nothing the
index already holds and nothing twice. Speed lives in `zocrates-nb bench offline`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from agents_helpers import run, terminal

from zocrates_nb.app import App
from zocrates_nb.index.embedder import embedding_meter
from zocrates_nb.index.passages import dense_texts

pytestmark = pytest.mark.corpus

TITLES = {
    "Raft": "In Search of an Understandable Consensus Algorithm",
    "Paxos": ("Paxos Made Simple", "Paxos Made Moderately Complex"),
    "Zab": "Zab: High-performance broadcast for primary-backup systems",
    "Chubby": "The Chubby lock service for loosely-coupled distributed systems",
    "Dynamo": "Dynamo: Amazon's Highly Available Key-value Store",
    "Spanner": "Spanner: Google's Globally-Distributed Database",
}


@pytest.fixture(scope="module")
def corpus_app(corpus_index: Any) -> Iterator[App]:
    app = App.open(corpus_index.home, index=corpus_index.index)
    yield app
    app.close()


def sections(answer: str) -> dict[str, list[str]]:
    """The answer's parts: each bold heading line and the lines under it."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in answer.splitlines():
        m = re.fullmatch(r"\*\*(.+)\*\*", line.strip())
        if m:
            current = m.group(1)
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def test_a_six_system_comparison_quotes_each_named_paper_under_its_own_heading(
    corpus_app: App,
) -> None:
    question = ("How do Raft, Paxos, Zab, Chubby, Dynamo and Spanner handle the failure of a "
                "leader or coordinator?")  # fmt: skip
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    assert final.type == "final"
    record = corpus_app.turn(final.turn_id)
    assert [p.subject for p in record.parts] == list(TITLES)
    parts = sections(final.answer)
    assert len(parts) == 6
    lines = final.answer.splitlines()
    for heading, body in parts.items():
        subject = heading.split(":", 1)[0]
        assert subject in TITLES and question not in heading and len(heading) < 80
        at = lines.index(f"**{heading}**")
        assert lines[at - 1] == "" and lines[at + 1] == ""  # a Markdown block of its own
        papers = [ln for ln in body if re.fullmatch(r"\*[^*].*\* \(.*\)", ln.strip())]
        own = TITLES[subject] if isinstance(TITLES[subject], tuple) else (TITLES[subject],)
        # The paper the part names is quoted first; another only under a line saying so.
        assert papers and papers[0].strip("*").split("*")[0] in own, (heading, papers)
        for other in papers[1:]:
            if other.strip("*").split("*")[0] not in own:
                assert "other papers" in "\n".join(body[: body.index(other)])
    cited = {s.title for s in final.cited_sources}
    assert {t for t in TITLES.values() if isinstance(t, str)} <= cited


def test_the_first_quote_states_the_answer_from_the_section_that_names_it(
    corpus_app: App,
) -> None:
    final = terminal(run(corpus_app.ask(
        "How does Raft elect a new leader after the old one fails?", hitl=False)))  # fmt: skip
    first = next(ln for ln in final.answer.splitlines() if ln.startswith("- "))
    assert "_(§ 5.2 Leader election)_" in first, final.answer


def test_a_turn_embeds_no_stored_vector_and_nothing_twice(corpus_app: App) -> None:
    question = "How does Dynamo reconcile conflicting versions of an object?"
    with embedding_meter() as meter:
        final = terminal(run(corpus_app.ask(question, hitl=False)))
    assert final.type == "final" and final.cited_sources
    assert meter.repeats == 0  # nothing embedded twice in one turn
    record = corpus_app.turn(final.turn_id)
    chunks = corpus_app.chunks([e.chunk_id for e in record.evidence])
    assert chunks  # passages the search returned, with their vectors in the index
    stored = [t for c in chunks for t in dense_texts(c)]
    assert not [t for t in stored if meter.sent(t)]  # the index's own vectors were reused
    assert not [c.text for c in chunks if meter.sent(c.text)]


def test_parts_named_by_author_and_introduction_are_read_from_their_own_papers(
    corpus_app: App,
) -> None:
    """Issue 27: a paper named by its author, a system named only by its introduction, and a
    name the library lacks: each part is headed by its name, quoted from its own paper, and
    the missing one is said to be missing (never "not covered" for a name the library knows)."""
    question = ("In Lamport's paper, what are the two phases of choosing a value, what is "
                "SimCLRv2's distillation step for, and how does Cassandra pick replicas?"
                )  # fmt: skip
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    parts = sections(final.answer)
    heads = list(parts)
    assert heads[0] == "Paxos Made Simple (Lamport): what are the two phases of choosing a value"
    assert heads[1].startswith("SimCLRv2: ")
    own = {heads[0]: "Paxos Made Simple",
           heads[1]: "Big Self-Supervised Models are Strong Semi-Supervised Learners"}  # fmt: skip
    for heading, title in own.items():
        papers = [ln for ln in parts[heading] if re.fullmatch(r"\*[^*].*\* \(.*\)", ln.strip())]
        assert papers and papers[0].startswith(f"*{title}*"), (heading, papers)
    assert "Not in your library: Cassandra" in final.answer
    assert "Not covered by the library" not in final.answer


def test_a_contrast_follow_up_quotes_the_other_side_and_recalls_the_first_in_one_line(
    corpus_app: App,
) -> None:
    sid = corpus_app.new_session()
    first = terminal(run(corpus_app.ask("How does GFS handle chunk server failures?",
                                        session_id=sid, hitl=False)))  # fmt: skip
    then = terminal(run(corpus_app.ask("How is that different in Bigtable?", session_id=sid,
                                       hitl=False)))  # fmt: skip
    assert corpus_app.turn(then.turn_id).search_goal == (
        "How does Bigtable handle chunk server failures?")
    recall = [ln for ln in then.answer.splitlines() if ln.startswith("_Earlier, on GFS: ")]
    assert len(recall) == 1 and recall[0].rstrip("_").endswith(".")
    quoted = [ln for ln in then.answer.splitlines() if ln.startswith("- ")]
    earlier = {ln for ln in first.answer.splitlines() if ln.startswith("- ")}
    assert quoted and not earlier & set(quoted)  # not the earlier bullets again
    assert then.cited_sources[0].title.startswith("Bigtable")
    asked = terminal(run(corpus_app.ask("What did I ask first?", session_id=sid)))
    assert "“How does GFS handle chunk server failures?”" in asked.answer


def test_a_collection_without_the_answer_names_the_paper_holding_it_first(
    corpus_app: App,
) -> None:
    """The paper named elsewhere is the one with the passage that answers (Spanner, on why
    Megastore was built), not the one the question's subject fills most passages of
    (Bigtable): that named the wrong paper as the place to look."""
    question = "What did Bigtable users complain about that led Google to build Megastore?"
    final = terminal(run(corpus_app.ask(question, collections=["Consensus"], hitl=False)))
    assert final.type == "final"
    assert [s.title for s in final.elsewhere][:1] == [TITLES["Spanner"]]
    assert not final.cited_sources  # nothing from outside the collection


def test_a_question_on_what_i_wrote_searches_my_notes_and_quotes_the_line(
    corpus_app: App,
) -> None:
    """Among the Transformer paper's passages, the reading note's short 'Key ideas' lines rank
    below the paper they are on: the notes are searched on their own, and the line is cited."""
    question = "What did I write in my notes on how the Transformer keeps track of token positions?"
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    assert final.type == "final"
    bullets = [ln for ln in final.answer.splitlines() if ln.startswith("- ")]
    assert any(b.startswith("- Sinusoidal positional encodings added to the input embeddings.")
               for b in bullets[:3]), final.answer  # fmt: skip
    assert any(c.chunk_id.startswith("QLG29MTK:") for c in final.citations)


def test_a_part_is_searched_inside_its_paper_without_the_name_every_passage_bears(
    corpus_app: App,
) -> None:
    """Inside ZooKeeper's paper every passage is about ZooKeeper: searched with its name, the
    passages that repeat it most (the throughput study, the conclusions) ranked above § 4.4,
    which says how reads stay cheap. The part searches its paper without the name too."""
    final = terminal(run(corpus_app.ask("How do ZooKeeper and Chubby each make reads cheap?",
                                        hitl=False)))  # fmt: skip
    parts = sections(final.answer)
    zookeeper = next(body for heading, body in parts.items() if heading.startswith("ZooKeeper"))
    bullets = [ln for ln in zookeeper if ln.startswith("- ")]
    assert bullets[0].startswith("- By processing reads locally, we obtain excellent read"), (
        final.answer)
    assert "§ 4.4 Client-Server Interactions" in bullets[0]


def test_what_i_wrote_about_a_paper_is_quoted_from_my_note_on_it_before_the_paper(
    corpus_app: App,
) -> None:
    """The Velvet paper's own "We compared Velvet to …" shares more words with the question
    than the researcher's note does, but a paper cannot say what the researcher wrote: the note
    on the paper the question names comes first, whole, and the paper only after a line."""
    question = "What did I write down to read alongside the Velvet paper, for comparison?"
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    lines = [ln for ln in final.answer.splitlines() if ln.strip()]
    assert lines[1].startswith("Your note on *Velvet"), final.answer
    bullets = [ln for ln in lines if ln.startswith("- ")]
    assert any(b.startswith("- Compare with the Eulerian path approach of Pevzner et al.")
               for b in bullets[:3]), final.answer  # fmt: skip
    assert "Reading list" not in final.answer  # another note, on other papers
    if "We compared Velvet" in final.answer:
        assert final.answer.index("_From the papers themselves:_") < final.answer.index(
            "We compared Velvet")


def test_parts_whose_papers_hold_nothing_on_them_are_said_not_given_with_the_closest(
    corpus_app: App,
) -> None:
    """Every name is known and each part's paper is in the library, but neither says a word
    on what is asked: the papers do not give it (not "the library holds no evidence", which
    would say nothing in the library bears on the question), with each paper's closest
    passage shown as such and nothing cited."""
    final = terminal(run(corpus_app.ask(
        "How do GFS and Bigtable each train their word embeddings?", hitl=False)))
    assert final.type == "final"
    assert final.answer.startswith("Your papers do not give this"), final.answer
    assert "holds no evidence" not in final.answer
    closest = final.answer.split("The closest passages, which do not answer it:")[1]
    assert "*The Google File System*" in closest and "*Bigtable:" in closest
    assert not final.citations


def test_a_system_named_only_in_the_abstract_its_pdf_gives_is_known_by_that_name(
    corpus_index: Any,
) -> None:
    """The Zotero record of the Eulerian path paper has no abstract, and its title never says
    EULER; the abstract its PDF gives ("a new EULER algorithm … EULER, in contrast to …") does.
    A question naming EULER asks of that paper, not of a name the library lacks."""
    from zocrates_nb.agents.parts import decompose
    from zocrates_nb.index.library_names import names_for

    cat = names_for(corpus_index.index)
    assert cat is not None
    parts = decompose("How do EULER and Velvet each cope with repeats?", cat)
    euler = next(p for p in parts if p.subject == "EULER")
    assert [cat.items[k].title for k in euler.items] == [
        "An Eulerian path approach to DNA fragment assembly"]


def test_a_figure_i_recorded_in_a_note_table_is_quoted_from_its_row_and_cited(
    corpus_app: App,
) -> None:
    """The reading note's "Results to remember" is a table: its row is what the researcher
    recorded, quoted with its column's name, and the quote checks against the note."""
    question = "Which BLEU did I write down for the big model on English-German in my notes?"
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    bullets = [ln for ln in final.answer.splitlines() if ln.startswith("- ")]
    assert any("WMT 2014 EN-DE (big): BLEU 28.4 [" in b for b in bullets[:3]), final.answer
    assert "[unsupported]" not in final.answer
    assert any(c.chunk_id.startswith("QLG29MTK:") for c in final.citations)


def test_what_i_listed_after_a_named_paper_comes_from_my_standalone_list_first(
    corpus_app: App,
) -> None:
    """The reading list hangs on no paper; the question names FLP's paper, whose passages on
    consensus are many. What the researcher set down is in the list: it leads, cited."""
    question = "On the consensus reading order I gave myself, which entry follows the FLP paper?"
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    lines = [ln for ln in final.answer.splitlines() if ln.strip()]
    assert lines[1].startswith("Your note “Reading list: consensus”"), final.answer
    assert any(c.chunk_id.startswith("7I7Z73R3:") for c in final.citations)


def test_a_benchmark_named_beside_a_paper_is_what_it_is_asked_not_another_part(
    corpus_index: Any,
) -> None:
    """GLUE is a word only BERT's abstract uses, so the catalogue knows it as BERT's; written
    beside "MoCo" with nothing joining them it is what MoCo is asked about, not a second paper
    to answer in a part of its own. Joined ("MoCo and BERT") they are two parts."""
    from zocrates_nb.agents.parts import decompose
    from zocrates_nb.index.library_names import names_for

    cat = names_for(corpus_index.index)
    assert cat is not None
    assert decompose("What GLUE average does MoCo's encoder score when transferred?", cat) == []
    joined = decompose("How large are the batches that MoCo and BERT train with?", cat)
    assert [p.subject for p in joined] == ["MoCo", "BERT"]


def test_a_dataset_the_named_paper_never_mentions_is_said_by_name_not_no_evidence(
    corpus_app: App,
) -> None:
    """The Transformer paper is in the library and never mentions SQuAD: the answer says so by
    name, with its closest passages uncited, rather than that the library holds nothing."""
    final = terminal(run(corpus_app.ask("Which SQuAD F1 does the Transformer get?", hitl=False)))
    assert final.type == "final"
    assert "never mentions “SQuAD”" in final.answer, final.answer
    assert "Attention Is All You Need" in final.answer
    assert not final.citations


def test_a_measure_the_named_paper_never_reports_is_said_by_name(corpus_app: App) -> None:
    """What a number asked for measures must be in the paper: ZooKeeper's paper never writes
    "lines of code" (though it has both words), GFS's never "percentile" (though it reports
    read rates), so neither figure is given, whatever numbers their passages hold."""
    for question, paper, what in (
        ("How many lines of code does the ZooKeeper server have?", "ZooKeeper", "lines of code"),
        ("What 99th-percentile latency does a GFS read have, per Ghemawat et al.?",
         "The Google File System", "percentile"),
    ):  # fmt: skip
        final = terminal(run(corpus_app.ask(question, hitl=False)))
        assert final.answer.startswith("Your papers do not give this"), final.answer
        assert f"never mentions “{what}”" in final.answer and paper in final.answer
        assert not final.citations


def test_a_shared_name_beside_its_authors_names_their_paper(corpus_index: Any) -> None:
    """Velvet's title and the primer's both say "de Bruijn graphs": written with the primer's
    authors ("… primer by Compeau, Pevzner and Tesler") it is their paper; beside Velvet's own
    name it is the other one."""
    from zocrates_nb.index.library_names import names_for

    cat = names_for(corpus_index.index)
    assert cat is not None
    primer = "How to apply de Bruijn graphs to genome assembly"
    by = cat.mentions("Why pick a larger k, says the de Bruijn primer by Compeau and Pevzner?")
    assert {corpus_index.index.item(k).title for m in by for k in m.keys} == {primer}
    beside = cat.mentions("Does the de Bruijn graph primer agree with what Velvet reports?")
    bruijn = next(m for m in beside if "Bruijn" in m.surface)
    assert [corpus_index.index.item(k).title for k in bruijn.keys] == [primer]


def test_a_surname_typed_in_lower_case_names_its_paper_where_it_is_cited(
    corpus_index: Any,
) -> None:
    """Typed casually, "eddy's", "jacot et al" and "smith and waterman" still cite papers;
    "peers" and "the page" alone are the words, not Peer's or Page's papers."""
    from zocrates_nb.index.library_names import names_for

    cat = names_for(corpus_index.index)
    assert cat is not None

    def titles(q: str) -> set[str]:
        return {corpus_index.index.item(k).title for m in cat.mentions(q) if m.author
                for k in m.keys}  # fmt: skip

    assert titles("in eddy's toy splice site model, how many paths?") == {
        "What is a hidden Markov model?"}
    assert titles("what bias factor do jacot et al recommend?") == {
        "Neural Tangent Kernel: Convergence and Generalization in Neural Networks"}
    assert len(titles("why did smith and waterman pick -1/3 for a mismatch")) == 1
    assert titles("how do bitcoin peers agree on which page is first?") == set()
