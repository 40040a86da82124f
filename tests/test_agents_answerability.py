"""Answerability (issue 10): a compound question split into parts searched and answered each,
the uncovered part named, the "elsewhere" papers of a narrower scope, questions about the
conversation answered from its history, follow-ups rewritten from the turn they name, and
offline token estimates that let compaction fire, with answers kept in the summary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents_helpers import GARDEN, RAFT, Recorder, call, run, terminal, user_prompts
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline import CoordinatorBrief, PastTurn, briefed
from zocrates_nb.agents.offline.coordinator import coordinator_compute
from zocrates_nb.agents.parts import Catalogue, CatalogueItem, decompose
from zocrates_nb.app import App
from zocrates_nb.sessions.compaction import offline_summarize, render_transcript

CATALOGUE = Catalogue(
    [
        CatalogueItem("MR", "MapReduce: Simplified Data Processing on Large Clusters", ("Dean",)),
        CatalogueItem("BT", "Bigtable: A Distributed Storage System for Structured Data"),
        CatalogueItem("GFS", "The Google File System", ("Ghemawat",)),
        CatalogueItem("RAFT", "In Search of an Understandable Consensus Algorithm"),
        CatalogueItem("DYN", "Dynamo: Amazon's Highly Available Key-value Store"),
    ]
)


# ---------------------------------------------------------------------------- decomposition
def test_comparison_of_three_named_systems_has_one_part_each() -> None:
    parts = decompose(
        "How do the masters of MapReduce, Bigtable and GFS find out that a worker died?",
        CATALOGUE,
    )
    assert [p.items for p in parts] == [["MR"], ["BT"], ["GFS"]]
    assert all("worker died" in p.text for p in parts)
    assert "Bigtable" in parts[1].text and "MapReduce" not in parts[1].text


def test_every_named_system_is_a_part_with_a_short_heading_of_its_own() -> None:
    catalogue = Catalogue([
        CatalogueItem("RAFT", "In Search of an Understandable Consensus Algorithm",
                      abstract="Raft is a consensus algorithm for managing a replicated log. "
                               "In order to enhance understandability, Raft separates the key "
                               "elements of consensus, and Raft enforces a stronger degree of "
                               "coherency."),
        CatalogueItem("ZAB", "Zab: High-performance broadcast for primary-backup systems"),
        CatalogueItem("CHUBBY", "The Chubby lock service for loosely-coupled distributed systems"),
    ])  # fmt: skip
    question = ("Compare how Raft and Zab elect a new leader after the old one fails, and say "
                "how Chubby's master fail-over differs")  # fmt: skip
    parts = decompose(question, catalogue)
    assert [(p.subject, p.items) for p in parts] == [
        ("Raft", ["RAFT"]), ("Zab", ["ZAB"]), ("Chubby", ["CHUBBY"])
    ]
    # A heading is the thing's name and the clean span of the question that asks of it.
    assert [p.heading for p in parts] == [
        "Raft: elect a new leader after the old one fails",
        "Zab: elect a new leader after the old one fails",
        "Chubby: master fail-over",
    ]
    assert all(p.heading.split(": ", 1)[-1] in question for p in parts)
    assert all("Chubby" not in p.text for p in parts[:2]), "each part is its own clause"


def test_sentence_initial_imperative_is_never_a_part() -> None:
    parts = decompose("Compare Raft with Zab.", CATALOGUE)
    assert [p.subject for p in parts] == ["Raft", "Zab"]
    assert not any(p.subject.lower() == "compare" for p in parts)
    # One thing asked: no parts at all.
    assert decompose("Explain how Raft elects a leader.", CATALOGUE) == []


def test_clause_with_a_name_the_library_lacks_is_its_own_part() -> None:
    parts = decompose(
        "Which hash function does Dynamo apply to keys, and which hash does Apache "
        "Cassandra's default partitioner use?",
        CATALOGUE,
    )
    assert len(parts) == 2
    assert parts[0].items == ["DYN"] and parts[1].items == []
    assert "Cassandra" in parts[1].subject


LIBRARY = Catalogue([
    CatalogueItem("PAXOS", "Paxos Made Simple", ("Lamport",)),
    CatalogueItem("FLP", "Impossibility of Distributed Consensus with One Faulty Process",
                  ("Fischer", "Lynch", "Paterson")),
    CatalogueItem("CHUBBY", "The Chubby lock service for loosely-coupled distributed systems",
                  ("Burrows",), intro="This paper describes a lock service called Chubby."),
    CatalogueItem("SIM", "Big Self-Supervised Models are Strong Semi-Supervised Learners",
                  ("Chen",), intro="Top-1 accuracy of our method (SimCLRv2) on ImageNet."),
    CatalogueItem("MOCO2", "Improved Baselines with Momentum Contrastive Learning", ("Chen",),
                  intro="In contrast, our “MoCo v2” baselines can run on a typical machine."),
    CatalogueItem("DYN", "Dynamo: Amazon's Highly Available Key-value Store"),
    CatalogueItem("BT", "Bigtable: A Distributed Storage System for Structured Data"),
    CatalogueItem("SPAN", "Spanner: Google's Globally-Distributed Database"),
    CatalogueItem("BTC", "Bitcoin: A Peer-to-Peer Electronic Cash System"),
])  # fmt: skip


def test_the_library_names_its_items_by_author_initials_and_introduction() -> None:
    """Names a title lacks: the author ("Lamport's paper"), the authors' initials ("FLP"), the
    name an introduction gives its own system or method, in quotes or not."""
    names = {m.surface: m.keys for m in LIBRARY.mentions(
        "Is Lamport's paper older than FLP, and are Chubby, SimCLRv2 and MoCo v2 from it?")}
    assert names == {"Lamport": ("PAXOS",), "FLP": ("FLP",), "Chubby": ("CHUBBY",),
                     "SimCLRv2": ("SIM",), "MoCo v2": ("MOCO2",)}  # fmt: skip


def test_an_author_of_several_papers_names_the_one_they_wrote_first() -> None:
    cat = Catalogue([
        CatalogueItem("GFS", "The Google File System", ("Sanjay Ghemawat", "Howard Gobioff")),
        CatalogueItem("MR", "MapReduce: Simplified Data Processing", ("Dean, Jeffrey",
                                                                      "Ghemawat, Sanjay")),
        CatalogueItem("BT", "Bigtable: A Distributed Storage System", ("Chang", "Dean")),
    ])  # fmt: skip
    assert [m.keys for m in cat.mentions("How large is a chunk in Ghemawat's paper?")] == [
        ("GFS",)]
    assert [m.keys for m in cat.mentions("What does Dean's paper say?")] == [("MR",)]


def test_authors_named_together_name_the_paper_whose_byline_they_lead() -> None:
    """ "Dean and Ghemawat" wrote MapReduce together, and also Spanner (among many): the pair
    is MapReduce's byline, not two parts (MapReduce by Dean, GFS by Ghemawat)."""
    cat = Catalogue([
        CatalogueItem("GFS", "The Google File System", ("Sanjay Ghemawat", "Howard Gobioff")),
        CatalogueItem("MR", "MapReduce: Simplified Data Processing", ("Dean, Jeffrey",
                                                                      "Ghemawat, Sanjay")),
        CatalogueItem("SP", "Spanner: Google's Globally-Distributed Database",
                      ("James C. Corbett", "Jeffrey Dean", "Sanjay Ghemawat")),
    ])  # fmt: skip
    q = "Dean and Ghemawat: how does their library find out that a record keeps crashing?"
    assert [(m.surface, m.keys) for m in cat.mentions(q)] == [("Dean and Ghemawat", ("MR",))]


def test_an_author_of_several_first_authored_papers_is_the_one_the_question_names() -> None:
    """ "van Renesse" wrote two of the papers first: alone the name is both (never a name the
    library lacks); beside one of their titles, it is that paper."""
    cat = Catalogue([
        CatalogueItem("PMMC", "Paxos Made Moderately Complex", ("Robbert van Renesse",)),
        CatalogueItem("CHAIN", "Chain Replication for Supporting High Throughput and "
                      "Availability", ("Robbert van Renesse", "Fred B. Schneider")),
    ])  # fmt: skip
    q = "In van Renesse's Paxos Made Moderately Complex, why can't a client read from a replica?"
    assert [m.keys for m in cat.mentions(q)] == [("PMMC",), ("PMMC",)]
    assert [m.keys for m in cat.mentions("What did van Renesse write about reads?")] == [
        ("CHAIN", "PMMC")]


def test_a_tag_on_one_item_written_as_a_name_names_that_item() -> None:
    """The researcher's own tag ("BM25" on Okapi at TREC-3, whose title and abstract never use
    it): a question naming the paper and its tag asks one thing, not two; a topic tag several
    items carry ("NLP") or a plain word ("classic") names nothing."""
    cat = Catalogue([
        CatalogueItem("OKAPI", "Okapi at TREC-3", ("Robertson",),
                      intro="The City University Okapi IR system was run again.",
                      tags=("BM25", "ranking")),
        CatalogueItem("GOW", "Graph-of-word and TW-IDF: New Approach to Ad Hoc IR",
                      abstract="We compare TW-IDF with BM25 and BM25 baselines.",
                      tags=("TW-IDF", "ranking", "NLP")),
        CatalogueItem("BERT", "BERT: Pre-training of Deep Bidirectional Transformers",
                      tags=("NLP", "classic")),
    ])  # fmt: skip
    q = "In the Okapi TREC-3 runs, roughly what value of b was used for BM25?"
    assert {m.surface: m.keys for m in cat.mentions(q)} == {"Okapi": ("OKAPI",),
                                                           "BM25": ("OKAPI",)}  # fmt: skip
    assert decompose(q, cat) == []
    assert [m.keys for m in cat.mentions("Which NLP papers are classic?")] in ([], [()])
    parts = decompose("How do BM25 and TW-IDF each normalise for document length?", cat)
    assert [p.items for p in parts] == [["OKAPI"], ["GOW"]]


def test_a_part_named_by_its_author_is_that_paper_and_headings_are_clean_spans() -> None:
    q = "In Lamport's paper, what are the two phases of the algorithm, and how does Chubby use it?"
    parts = decompose(q, LIBRARY)
    assert [p.items for p in parts] == [["PAXOS"], ["CHUBBY"]]
    assert parts[0].heading == (
        "Paxos Made Simple (Lamport): what are the two phases of the algorithm"
    )
    assert parts[1].heading == "Chubby: use it"
    # What is searched and matched names the paper as its own text can answer to.
    assert parts[0].text == "In “Paxos Made Simple”, what are the two phases of the algorithm?"
    flp = decompose("What does FLP prove, and how does Chubby live with it?", LIBRARY)
    assert flp[0].heading == "FLP" and "“Impossibility of Distributed" in flp[0].text


def test_three_named_systems_are_three_parts_and_a_slashed_term_stays_whole() -> None:
    q = ("Which hash function does Dynamo use, how does Bigtable locate tablets, and how does "
         "Spanner assign commit timestamps?")  # fmt: skip
    parts = decompose(q, LIBRARY)
    assert [p.items for p in parts] == [["DYN"], ["BT"], ["SPAN"]]
    assert [p.heading for p in parts] == [
        "Dynamo: which hash function", "Bigtable: locate tablets",
        "Spanner: assign commit timestamps"]  # fmt: skip
    # "TCP/IP" is one term the library lacks, beside the paper it asks about: one question.
    q = "Does TCP/IP appear in the Bitcoin paper, and how do nodes agree on the chain?"
    assert [m.surface for m in LIBRARY.mentions(q)] == ["TCP/IP", "Bitcoin"]
    assert decompose(q, LIBRARY) == []
    each = decompose("How do Dynamo and Bigtable each use Chubby?", LIBRARY)
    assert [p.heading for p in each] == ["Dynamo: use Chubby", "Bigtable: use Chubby"]


# ---------------------------------------------------------------------------- pipeline
def _offline_app(tmp_path: Path, index: Any, **models: Any) -> App:
    rec = Recorder()
    wrapped = {role: rec.wrap(role, fn) for role, fn in models.items()}
    app = App.open(tmp_path, index=index, role_models=wrapped or None)
    app.recorder = rec  # type: ignore[attr-defined]
    return app


def test_parts_reach_the_search_agent_and_the_synthesizer(tmp_path: Path, small_index: Any) -> None:
    """A configured-model path (scripted FunctionModels): both prompts list the parts, so the
    search agent is asked to cover each part and the writer to answer each or name it."""

    def search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return call("search_corpus", query="leader election", limit=3)
        return call("conclude_search", summary="raft only", gaps=["tomatoes"])

    def write(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("Raft elects leaders [1]. Not covered: tomatoes.")])

    def coordinator(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return call("search_library", request=user_prompts(messages)[-1])

    app = _offline_app(
        tmp_path, small_index, coordinator=coordinator, search=search, synthesizer=write
    )
    question = (
        "How does Understandable Consensus with Raft elect a leader, and how does "
        "Growing Tomatoes in Small Gardens water the plants?"
    )
    final = terminal(run(app.ask(question)))
    rec = app.recorder  # type: ignore[attr-defined]
    search_prompt = user_prompts(rec.seen["search"][0])[0]
    write_prompt = user_prompts(rec.seen["synthesizer"][-1])[-1]
    assert "# Parts of the Question" in search_prompt and f"[Key: {RAFT}]" in search_prompt
    assert f"[Key: {GARDEN}]" in search_prompt
    assert "# Parts of the Question" in write_prompt and "[Key:" not in write_prompt
    record = app.turn(final.turn_id)
    assert len(record.parts) == 2
    assert "Raft" in record.parts[0].subject and "Tomatoes" in record.parts[1].subject


def test_offline_compound_answers_each_part_and_names_the_gap(
    tmp_path: Path, small_index: Any
) -> None:
    app = App.open(tmp_path, index=small_index)
    q = (
        "How does Raft elect a leader, and which consensus protocol does Kubernetes etcd "
        "run on Zorblax clusters?"
    )
    final = terminal(run(app.ask(q)))
    assert final.type == "final"
    assert any(s.item_key == RAFT for s in final.cited_sources)
    # A name the library lacks is said to be missing, by the name its part is headed with.
    missing = next(line for line in final.answer.splitlines() if "Not in your library:" in line)
    assert "Kubernetes" in missing and "Raft" not in missing
    assert "holds no evidence" not in final.answer


def test_scope_without_the_answer_names_the_paper_elsewhere(
    tmp_path: Path, small_index: Any
) -> None:
    app = App.open(tmp_path, index=small_index)
    final = terminal(run(app.ask("How does a candidate win a leader election?", items=[GARDEN])))
    assert final.type == "final"
    assert [s.item_key for s in final.elsewhere] == [RAFT]
    # "Search the whole library": the same question over everything; the chips stay as set.
    assert final.widen_scope is not None and final.widen_scope.kind == "library"
    assert final.answer.startswith("Not in the selected paper.")
    assert "Elsewhere in your library:** *Understandable Consensus with Raft*" in final.answer
    assert "no evidence" not in final.answer.lower()
    assert not final.cited_sources  # nothing from outside, nothing weak from inside
    # A scope that answers the question gets no such note.
    final = terminal(run(app.ask("How does a candidate win a leader election?", items=[RAFT])))
    assert final.elsewhere == [] and "Elsewhere in your library" not in final.answer


def test_first_turn_selection_gets_outlines_and_reads_each_paper(
    tmp_path: Path, small_index: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zocrates_nb.agents import search_context
    from zocrates_nb.agents.offline import OfflineEngine

    # Wrapped for recording, the offline engine looks like a language model, whose results
    # are trimmed for context economy; the engine steers by the full results.
    monkeypatch.setattr(search_context, "ECONOMY", False)
    eng = OfflineEngine.shared()
    rec = Recorder()
    app = App.open(tmp_path, index=small_index, role_models={"search": rec.wrap(
        "search", eng.search.function)})  # fmt: skip
    assert eng.search.function is not None
    final = terminal(run(app.ask("What do these papers say about elections?",
                                 items=[RAFT, GARDEN])))  # fmt: skip
    assert final.type == "final"
    messages = rec.seen["search"][-1]
    assert "Pre-Retrieved Document Outline" in user_prompts(messages)[0]
    calls = [p for m in messages for p in m.parts if isinstance(p, ToolCallPart)]
    assert not [c for c in calls if c.tool_name == "get_document_toc"]
    read = {c.args_as_dict()["item_key"] for c in calls if c.tool_name == "read_document"}
    assert read == {RAFT, GARDEN}


# ---------------------------------------------------------------------------- conversation
def _info() -> AgentInfo:
    from pydantic_ai.tools import ToolDefinition

    tool = ToolDefinition(name="search_library", parameters_json_schema={})
    return AgentInfo(
        function_tools=[],
        allow_text_output=True,
        output_tools=[tool],
        model_settings=None,
        model_request_parameters=None,  # type: ignore[arg-type]
        instructions=None,
    )


RAFT_TURN = PastTurn("How does Raft elect a leader?", "How does Raft elect a leader?",
                     "*Raft*\n\n- Raft uses randomized election timeouts to elect a leader. [1]",
                     ("In Search of an Understandable Consensus Algorithm",))  # fmt: skip
BM25_TURN = PastTurn("What is BM25?", "What is BM25?",
                     "- BM25 weights terms by inverse frequency. [1]", ("Okapi at TREC-3",))


def coordinate(message: str, *turns: PastTurn, scope: str = "library") -> Any:
    """The offline coordinator's reply to `message` after `turns` (its brief, as the runner
    hands it over)."""
    messages = [ModelRequest(parts=[UserPromptPart(message)])]
    with briefed(CoordinatorBrief(message, tuple(turns), scope)):
        return coordinator_compute(messages, _info()).parts[0]


def test_meta_question_is_answered_from_the_history() -> None:
    out = coordinate("What was my first question, and what is the answer?", RAFT_TURN, BM25_TURN)
    assert isinstance(out, TextPart)  # answered, not searched
    assert "How does Raft elect a leader?" in out.content
    assert "randomized election timeouts" in out.content and "BM25" not in out.content
    summary = coordinate("Summarize what we discussed so far", RAFT_TURN, BM25_TURN)
    assert isinstance(summary, TextPart)
    assert "How does Raft elect a leader?" in summary.content and "BM25" in summary.content
    for ask in ("What did I ask first?", "What was the first thing I asked?"):
        first = coordinate(ask, RAFT_TURN, BM25_TURN)
        assert isinstance(first, TextPart)
        assert "Your first question was: “How does Raft elect a leader?”" in first.content
    # A first in the papers is a question for the library, not about the conversation.
    assert isinstance(coordinate("What was the first consensus paper?", RAFT_TURN), ToolCallPart)
    about = coordinate("What did we conclude about Raft?", RAFT_TURN, BM25_TURN)
    assert isinstance(about, TextPart) and "randomized election timeouts" in about.content
    assert "BM25" not in about.content
    never = coordinate("What did we conclude about Paxos?", RAFT_TURN, BM25_TURN)
    assert isinstance(never, TextPart) and "not discussed Paxos" in never.content


def _goal(out: Any) -> str:
    assert isinstance(out, ToolCallPart) and out.tool_name == "search_library"
    return str(out.args_as_dict()["request"])


def _regarding(out: Any) -> dict[str, Any]:
    assert isinstance(out, ToolCallPart) and out.tool_name == "search_library"
    return dict(out.args_as_dict().get("regarding") or {})


def test_follow_up_naming_an_earlier_turn_builds_on_its_goal() -> None:
    out = coordinate("Regarding my first question, what about terms?", RAFT_TURN, BM25_TURN)
    # What it builds on is a typed field of the call, not words appended to its goal.
    assert _goal(out) == "Regarding my first question, what about terms?"
    assert _regarding(out)["question"] == "How does Raft elect a leader?"
    assert _regarding(out)["subject"] == "Raft"
    # A pronoun with nothing of its own to stand for: the earlier subject, named once.
    assert _goal(coordinate("What about its log compaction?", RAFT_TURN)) == (
        "What about Raft's log compaction?"
    )
    # "The second one": the second paper the earlier answer cited.
    two = PastTurn("Which papers describe consensus?", "Which papers describe consensus?",
                   "…", ("Paxos Made Simple", "In Search of an Understandable Consensus "
                         "Algorithm"))  # fmt: skip
    goal = _goal(coordinate("What does the second one say about safety?", two))
    assert goal == ("What does “In Search of an Understandable Consensus Algorithm” say about "
                    "safety?")


def test_an_unrelated_question_is_new_and_regenerate_asks_it_again() -> None:
    spanner = "How does Spanner use TrueTime?"
    assert _goal(coordinate(spanner, RAFT_TURN)) == spanner  # never "… (Follow-up to …"
    fencing = "What is a fencing token?"
    assert _goal(coordinate(fencing, RAFT_TURN)) == fencing
    # This paper / these papers name the selection, not an earlier turn.
    sel = "What does this paper say about leases?"
    assert _goal(coordinate(sel, RAFT_TURN, scope="selection")) == sel
    # Regenerate: the same question again gets the goal it had the first time, never nested.
    follow = PastTurn("Why?", "Why? — regarding: How does Raft elect a leader?", "…")
    again = _goal(coordinate("Why?", RAFT_TURN, follow))
    assert again == "Why? — regarding: How does Raft elect a leader?"
    # Asked again in today's form: the same earlier turn it built on the first time.
    again = coordinate("Why?", RAFT_TURN, PastTurn("Why?", "Why?", "…"))
    assert _goal(again) == "Why?"
    assert _regarding(again)["question"] == "How does Raft elect a leader?"
    assert _goal(coordinate(fencing, RAFT_TURN, PastTurn(fencing, fencing, "…"))) == fencing


def test_a_second_unrelated_question_in_a_session_searches_the_whole_scope(
    tmp_path: Path, small_index: Any
) -> None:
    app = App.open(tmp_path, index=small_index)
    sid = app.new_session()
    terminal(run(app.ask("How does Raft elect a leader?", session_id=sid)))
    second = terminal(run(app.ask("How should tomato seedlings be watered?", session_id=sid)))
    record = app.turn(second.turn_id)
    assert record.search_goal == "How should tomato seedlings be watered?"
    assert {s.item_key for s in second.cited_sources} == {GARDEN}
    again = terminal(run(app.ask("How should tomato seedlings be watered?", session_id=sid)))
    assert app.turn(again.turn_id).search_goal == record.search_goal  # regenerate


# ---------------------------------------------------------------------------- compaction
def _history(*turns: tuple[str, str, str]) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for i, (question, goal, answer) in enumerate(turns):
        cid = f"c{i}"
        out.append(ModelRequest(parts=[UserPromptPart(question)]))
        out.append(ModelResponse(parts=[ToolCallPart("search_library", {"request": goal}, cid)]))
        out.append(ModelRequest(parts=[ToolReturnPart("search_library", answer, cid)]))
    return out


def test_the_summary_gives_each_parts_first_sentence_whole() -> None:
    answer = ("What the papers in your library say about each part, in their own words:\n\n"
              "**Raft: elect a leader**\n\n*In Search of an Understandable Consensus Algorithm*"
              "\n\n- Raft uses randomized election timeouts to ensure that split votes are rare "
              "and that they are resolved quickly, which is important for availability of the "
              "whole cluster during failures. Each server waits. [1] _(§ 5.2)_\n\n"
              "**Zab: recover a failed leader**\n\n*Zab*\n\n- A new leader proposes "
              "the history of the quorum. [2]\n")  # fmt: skip
    q = "How do Raft and Zab elect leaders?"
    out = coordinate("Summarize what we discussed", PastTurn(q, q, answer))
    assert isinstance(out, TextPart)
    assert "“How do Raft and Zab elect leaders?”" in out.content
    assert ("Raft: elect a leader: Raft uses randomized election timeouts to ensure that split "
            "votes are rare and that they are resolved quickly, which is important for "
            "availability of the whole cluster during failures.") in out.content
    assert "Zab: recover a failed leader: A new leader proposes the history of the quorum." in (
        out.content)
    assert "Each server waits" not in out.content and "…" not in out.content


def test_offline_summary_keeps_each_answer() -> None:
    history = _history(
        ("How does Raft elect a leader?", "raft", "What the papers say:\n\n**Raft**\n"
         "- Raft uses randomized election timeouts to elect a leader. [1] _(§ 5.2)_"),
    )  # fmt: skip
    summary = offline_summarize("", render_transcript(history))
    assert "Asked: How does Raft elect a leader?" in summary
    assert "randomized election timeouts" in summary and "[1]" not in summary


def test_offline_engine_reports_prompt_sized_tokens(tmp_path: Path, small_index: Any) -> None:
    """Usage grows with the conversation, so the token threshold of compaction is reachable."""
    app = App.open(tmp_path, index=small_index)
    sid = app.new_session()
    first = terminal(run(app.ask("How does Raft elect a leader?", session_id=sid)))
    second = terminal(run(app.ask("How are committed entries stored?", session_id=sid)))
    c1 = first.usage.roles["coordinator"].input_tokens
    c2 = second.usage.roles["coordinator"].input_tokens
    assert c1 > 50 and c2 > c1 + 100  # the first answer is in the second prompt


# ---------------------------------------------------------------------------- guidance
def test_guidance_naming_an_unopened_paper_opens_it_first(
    tmp_path: Path, small_index: Any
) -> None:
    """A one-call search pauses with what it could not read; guidance naming another paper
    makes the next pass open that paper before anything else, and the card never lists a
    paper both as covered and as missing."""
    app = App.open(tmp_path, index=small_index)
    events = run(app.ask("How does Raft elect a leader?", budget=1))
    cp = terminal(events)
    assert cp.type == "checkpoint"
    covered = {e.title for e in app.turn(cp.turn_id).evidence}
    assert not [m for m in cp.missing_aspects if any(t in m for t in covered)]
    assert cp.calls_used == cp.budget  # it asks for more room only with no call left
    guidance = "Look in the Growing Tomatoes in Small Gardens paper for how plants are chosen"
    resumed = run(app.resume(cp.session_id, cp.interrupt_id, "extend_budget", guidance))
    assert terminal(resumed).type in ("final", "checkpoint")
    searched = [e.label for e in resumed if getattr(e, "phase", "") in ("search", "read", "toc")]
    assert "Growing Tomatoes in Small Gardens" in searched[0], searched


def test_offline_compaction_fires_on_tokens_and_keeps_the_answers(
    tmp_path: Path, small_index: Any
) -> None:
    """A token floor the offline engine's real prompt sizes reach (its old constant 50 tokens
    never would); after compaction the first turn's question and answer still come back."""
    app = App.open(
        tmp_path,
        index=small_index,
        sessions__compaction__min_turns=2,
        sessions__compaction__token_floor=1_200,
        sessions__compaction__keep_last=1,
    )
    sid = app.new_session()
    for q in (
        "How does Raft elect a leader?",
        "How does BM25 weight a query term?",
        "How are tomato seedlings grown?",
    ):
        assert terminal(run(app.ask(q, session_id=sid))).type == "final"
    info = app.store.get_state(sid).compaction
    assert info is not None and info.times >= 1
    assert "Asked: How does Raft elect a leader? — answered:" in info.summary
    assert "election" in info.summary.split("answered:", 1)[1]
    final = terminal(run(app.ask("What was my first question, and what is the answer?",
                                 session_id=sid)))  # fmt: skip
    assert "How does Raft elect a leader?" in final.answer and "election" in final.answer
    assert not final.evidence  # from the history, not a search


def test_a_forty_turn_session_still_knows_the_first_question(tmp_path: Path, small_index: Any
                                                             ) -> None:  # fmt: skip
    """Compaction folds the old turns into a summary that keeps every one of them (shorter),
    and "what was my first question?" is answered from the session's own record."""
    app = App.open(
        tmp_path,
        index=small_index,
        sessions__compaction__min_turns=4,
        sessions__compaction__token_floor=2_000,
        sessions__compaction__keep_last=2,
    )
    sid = app.new_session()
    topics = ["Raft elect a leader", "BM25 weight a query term", "tomato seedlings grow",
              "an assembler use k-mers"]  # fmt: skip
    asked = [f"Question {i + 1}: how does {topics[i % 4]}?" for i in range(40)]
    for q in asked:
        assert terminal(run(app.ask(q, session_id=sid, budget=1, hitl=False))).type == "final"
    info = app.store.get_state(sid).compaction
    assert info is not None and info.times >= 2
    lines = [ln for ln in info.summary.splitlines() if ln.startswith("- Asked:")]
    assert len(lines) == info.compacted_turns and "Question 1:" in lines[0]
    final = terminal(run(app.ask("What was my first question?", session_id=sid)))
    assert asked[0] in final.answer and not final.evidence
    final = terminal(run(app.ask("What was my 2nd question?", session_id=sid)))
    assert final.type == "final"


# ---------------------------------------------------------------------------- checkpoints
def test_a_search_asks_for_more_room_only_with_no_call_left() -> None:
    from zocrates_nb.agents.pipeline import checkpoint_gaps, should_checkpoint
    from zocrates_nb.config import RetrievalSettings
    from zocrates_nb.retrieval import CompletionReport, Evidence, RunState

    st = RunState.new(RetrievalSettings(budget=10, word_ceiling=7500))
    st.report = CompletionReport(summary="s", gaps=['"Dynamo: Amazon\'s Highly Available '
                                                    'Key-value Store": not opened yet', "fencing"])
    st.tool_count, st.words = 6, 7000  # near the ceiling, calls left
    assert not should_checkpoint(st, hitl=True)
    st.tool_count = 10
    assert should_checkpoint(st, hitl=True)
    st.evidence = [Evidence(chunk_id="d:1", item_key="DYN", attachment_key="d",
                            title="Dynamo: Amazon's Highly Available Key-value Store")]
    _, missing = checkpoint_gaps(st)
    assert missing == ["fencing"]  # never both covered and missing
