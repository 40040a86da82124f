"""The search pipeline with scripted models over the real tools, index and session store:
budget notices, the word ceiling, conclude vs the automatic report, both checkpoint triggers,
the smart skip, extension scaling, the two-extension cap, the conflict guard, the coverage gate
and the isolation of the search agent from the conversation (and back)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents_helpers import (
    BM25,
    GARDEN,
    GENOME,
    RAFT,
    Recorder,
    call,
    coordinator_search,
    run,
    search_then,
    terminal,
    text,
    tool_returns,
    user_prompts,
)
from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.pipeline import PausedRun
from zocrates_nb.app import App, NoPendingCheckpoint
from zocrates_nb.retrieval import RunState
from zocrates_nb.retrieval.state import CompletionReport
from zocrates_nb.sessions import CheckpointPending


def make_app(tmp_path: Path, index: Any, rec: Recorder, search: Any, **roles: Any) -> App:
    models = {
        "coordinator": rec.wrap("coordinator", roles.pop("coordinator", coordinator_search)),
        "search": rec.wrap("search", search),
    }
    for role, fn in roles.items():
        models[role] = rec.wrap(role, fn)
    return App.open(tmp_path, index=index, role_models=models)


def search_returns(rec: Recorder) -> list[Any]:
    """Each tool result of the search agent as the model first saw it (in the request after
    the call: older results are shortened in later requests)."""
    return [tool_returns(seen)[-1] for seen in rec.seen["search"][1:] if tool_returns(seen)]


def audit(app: App, session_id: str) -> Any:
    return app.store.get_state(session_id).audit[-1]


def test_budget_notices_on_calls_nine_and_ten_refusal_on_eleven(
    tmp_path: Path, small_index: Any
) -> None:
    rec = Recorder()
    queries = [f"raft leader election {i}" for i in range(11)]
    app = make_app(tmp_path, small_index, rec, search_then(queries))
    end = terminal(run(app.ask("How does Raft elect a leader?", hitl=False)))
    assert end.type == "final"
    results = search_returns(rec)
    assert len(results) == 11
    assert all(
        "notice" not in r or "retrieval tool calls used" not in r["notice"] for r in results[:8]
    )
    assert "9/10 retrieval tool calls used (1 call remaining)" in results[8]["notice"]
    assert "Retrieval tool budget exhausted (10/10)" in results[9]["notice"]
    assert results[10]["status"] == "budget_exhausted"
    assert app.turn(end.turn_id).tool_calls == 10  # the refused call is not counted
    assert audit(app, end.session_id).report.source == "agent"


def test_word_ceiling_refuses_further_retrieval(tmp_path: Path, small_index: Any) -> None:
    rec = Recorder()
    app = make_app(tmp_path, small_index, rec, search_then(["raft", "bm25 term weighting"]))
    end = terminal(run(app.ask("How does Raft work?", hitl=False, word_ceiling=100)))
    assert end.type == "final"
    first, second = search_returns(rec)
    # The search adds what fits and says the rest was left out at the ceiling.
    assert first["status"] == "success" and "word ceiling" in first["notice"].lower()
    assert "not added" in first["notice"]
    # A later search adds only what still fits (or is refused once nothing does): the
    # evidence never passes the ceiling.
    notice = second.get("notice", "").lower()
    assert second["status"] == "budget_exhausted" or "word ceiling" in notice
    assert app.turn(end.turn_id).evidence_words <= 100


def test_conclude_report_or_automatic_report(tmp_path: Path, small_index: Any) -> None:
    rec = Recorder()
    app = make_app(tmp_path, small_index, rec, search_then(["raft"], gaps=["snapshots"]))
    end = terminal(run(app.ask("How does Raft replicate logs?", hitl=False)))
    report = audit(app, end.session_id).report
    assert report == CompletionReport(summary="found raft passages", gaps=["snapshots"])
    rec2 = Recorder()
    app2 = make_app(tmp_path / "b", small_index, rec2, search_then(["raft"], end="text"))
    end2 = terminal(run(app2.ask("How does Raft replicate logs?", hitl=False)))
    report2 = audit(app2, end2.session_id).report
    assert report2.source == "auto_generated"
    assert "Understandable Consensus with Raft" in report2.summary


def test_proactive_checkpoint_then_extension_scales_ceilings(
    tmp_path: Path, small_index: Any
) -> None:
    rec = Recorder()
    app = make_app(tmp_path, small_index, rec, search_then(["raft election"], end="extension"))
    events = run(app.ask("Explain Raft in depth"))
    cp = terminal(events)
    assert cp.type == "checkpoint"
    # The id names the turn and the extension.
    assert (cp.interrupt_id, cp.extension, cp.max_extensions) == (f"{cp.turn_id}-ext1", 1, 2)
    assert (cp.calls_used, cp.budget, cp.word_ceiling) == (1, 10, 7500)
    assert cp.covered_summary == "raft elections" and cp.missing_aspects == ["log compaction"]
    paused = app.history(cp.session_id)[-1]
    assert paused.checkpoint is not None and paused.checkpoint.interrupt_id == cp.interrupt_id
    assert paused.tool_calls == 1 and paused.evidence and not any(e.ranked for e in paused.evidence)
    # The snapshot is a typed record: read back as a run state, model messages and active
    # items, and an update of the wrong type or a misspelt field is refused, not stored.
    snap = app.pending_checkpoint(cp.session_id)
    assert snap is not None and snap.turn_id == cp.turn_id
    stored = PausedRun.model_validate(snap.payload)
    assert isinstance(stored.run_state, RunState) and stored.run_state.tool_count == 1
    assert stored.search_messages and isinstance(stored.coordinator_messages[0], ModelRequest)
    with pytest.raises(ValidationError):
        stored.model_copy(update={"run_state": {"tool_count": "many"}})
    with pytest.raises(ValueError, match="no field"):
        stored.model_copy(update={"coordinator_mesages": []})

    # Extension 1: +5 calls, +3,750 words; the guidance reaches the search agent.
    cp2 = terminal(
        run(app.resume(cp.session_id, cp.interrupt_id, "extend_budget", "focus on snapshots"))
    )
    assert cp2.type == "checkpoint" and cp2.interrupt_id == f"{cp.turn_id}-ext2"
    assert cp2.turn_id == cp.turn_id
    # The first checkpoint's id answers nothing any more.
    with pytest.raises(NoPendingCheckpoint):
        app.resume(cp.session_id, cp.interrupt_id, "synthesize")
    assert (cp2.budget, cp2.word_ceiling, cp2.calls_used) == (15, 11250, 2)
    prompt = user_prompts(rec.seen["search"][-1])[-1]
    assert "Deep Research Extension 1 of 2" in prompt and "focus on snapshots" in prompt
    assert "15 retrieval tool calls (1 used)" in prompt
    # The continuation keeps the first pass in the search agent's own history.
    assert len(user_prompts(rec.seen["search"][-1])) == 2

    # Extension 2, then the cap: a third request is refused and the search concludes.
    final = terminal(run(app.resume(cp.session_id, None, "extend_budget")))
    assert final.type == "final", final
    record = app.turn(cp.turn_id)
    assert record.extensions == 2 and record.tool_calls == 3
    assert app.pending_checkpoint(cp.session_id) is None
    assert any(
        "maximum of 2" in str(p.content)
        for m in rec.seen["search"][-1]
        if isinstance(m, ModelRequest)
        for p in m.parts
    )


def test_reactive_checkpoint_needs_gaps_and_hitl(tmp_path: Path, small_index: Any) -> None:
    def ask(app: App, **kw: Any) -> Any:
        return terminal(run(app.ask("How do Raft leaders replicate entries?", budget=2, **kw)))

    gaps = search_then(["raft", "raft log"], gaps=["membership changes"])
    cp = ask(make_app(tmp_path / "a", small_index, Recorder(), gaps))
    assert cp.type == "checkpoint" and cp.missing_aspects == ["membership changes"]
    assert (cp.calls_used, cp.budget) == (2, 2)
    # Smart skip: budget used but no gaps → straight to synthesis.
    no_gaps = search_then(["raft", "raft log"])
    assert ask(make_app(tmp_path / "b", small_index, Recorder(), no_gaps)).type == "final"
    # Checkpoints off: gaps or not, no pause.
    assert ask(make_app(tmp_path / "c", small_index, Recorder(), gaps), hitl=False).type == "final"


def test_checkpoint_blocks_new_questions_until_resolved(tmp_path: Path, small_index: Any) -> None:
    app = make_app(tmp_path, small_index, Recorder(), search_then(["raft"], end="extension"))
    cp = terminal(run(app.ask("Explain Raft")))
    with pytest.raises(CheckpointPending) as info:
        app.ask("Another question", session_id=cp.session_id)
    assert info.value.interrupt_id == cp.interrupt_id
    final = terminal(run(app.resume(cp.session_id, cp.interrupt_id, "synthesize")))
    assert final.type == "final"
    # A later turn's checkpoint gets its own id: the old one can never answer it.
    cp2 = terminal(run(app.ask("And log compaction?", session_id=cp.session_id)))
    assert cp2.type == "checkpoint" and cp2.extension == cp.extension == 1
    assert cp2.turn_id != cp.turn_id and cp2.interrupt_id != cp.interrupt_id
    with pytest.raises(NoPendingCheckpoint):
        app.resume(cp.session_id, cp.interrupt_id, "synthesize")
    final = terminal(run(app.resume(cp.session_id, cp2.interrupt_id, "synthesize")))
    assert final.type == "final"
    assert terminal(run(app.ask("More?", session_id=cp.session_id, hitl=False))).type == "final"
    # Synthesizing answers with the first pass's evidence and clears the snapshot.
    turns = app.history(cp.session_id)
    assert [t.status for t in turns] == ["answered", "answered", "answered"]
    assert app.pending_checkpoint(cp.session_id) is None


def test_coverage_gate_injects_outlines_from_the_first_turn(
    tmp_path: Path, small_index: Any
) -> None:
    def read_then_conclude(messages: list[ModelMessage], info: AgentInfo) -> Any:
        if not tool_returns(messages, "read_document"):
            return call("read_document", item_key=RAFT, asset_id="s2")
        return call("conclude_search", summary="read", gaps=[])

    rec = Recorder()
    app = make_app(tmp_path, small_index, rec, read_then_conclude)
    sid = app.new_session()
    # First turn, one selected paper: its outline is in the prompt, no TOC call needed.
    terminal(run(app.ask("What is joint consensus?", session_id=sid, items=[RAFT])))
    prompt = user_prompts(rec.seen["search"][-1])[0]
    assert "Pre-Retrieved Document Outline" in prompt and f"Parent Key: {RAFT}" in prompt
    assert "Do NOT call `get_document_toc`" in prompt
    state = app.store.get_state(sid)
    outline = state.get_outline(RAFT)
    assert outline is not None and state.get_outline(f"A{RAFT}") is outline  # cached, both keys
    # Two selected papers, one never opened before: both outlines, still no TOC call.
    terminal(run(app.ask("Compare them", session_id=sid, items=[RAFT, GARDEN])))
    prompt = user_prompts(rec.seen["search"][-1])[0]
    assert f"Parent Key: {RAFT}" in prompt and f"Parent Key: {GARDEN}" in prompt
    assert not tool_returns(rec.seen["search"][-1], "get_document_toc")
    # More than three selected papers: no injection (the agent opens what it needs).
    terminal(run(app.ask("And all of them?", session_id=sid, items=[RAFT, GARDEN, BM25, GENOME])))
    assert "Pre-Retrieved Document Outline" not in user_prompts(rec.seen["search"][-1])[0]


def test_search_agent_never_sees_the_conversation_and_back(
    tmp_path: Path, small_index: Any
) -> None:
    def chatty(messages: list[ModelMessage], info: AgentInfo) -> Any:
        last = user_prompts(messages)[-1]
        if "purple elephant" in last:
            return text("Nice to meet you, purple elephant fan!")
        return call("search_library", request="How does Raft elect a leader?")

    rec = Recorder()
    app = make_app(
        tmp_path, small_index, rec, search_then(["raft leader election"]), coordinator=chatty
    )
    sid = app.new_session()
    terminal(run(app.ask("Hi! I like the purple elephant.", session_id=sid)))
    final = terminal(run(app.ask("So, how do leaders get elected?", session_id=sid)))
    search_msgs = rec.seen["search"][-1]
    prompts = user_prompts(search_msgs)
    assert len(prompts) == 1 and "purple elephant" not in prompts[0]
    assert "How does Raft elect a leader?" in prompts[0]
    assert "So, how do leaders" not in prompts[0]
    # The coordinator's stored history: its own call and the answer, no search tool traffic.
    history = app.store.load_messages(sid)
    tools = [
        p.tool_name
        for m in history
        for p in m.parts
        if isinstance(p, ToolCallPart | ToolReturnPart)
    ]
    assert set(tools) == {"search_library"}
    returned = [p.content for m in history for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returned == [final.answer]
    chunk_texts = [r["text"] for r in tool_returns(search_msgs, "search_corpus")[0]["results"]]
    flat = " ".join(str(p) for m in history for p in m.parts)
    assert not any(t[:200] in flat for t in chunk_texts if t[:200] not in final.answer)


def test_multi_turn_memory_reaches_the_coordinator(tmp_path: Path, small_index: Any) -> None:
    rec = Recorder()
    app = make_app(tmp_path, small_index, rec, search_then(["raft"]))
    sid = app.new_session()
    first = terminal(run(app.ask("How does Raft elect a leader?", session_id=sid)))
    terminal(run(app.ask("Why randomized timeouts?", session_id=sid)))
    seen = rec.seen["coordinator"][-1]
    assert user_prompts(seen) == ["How does Raft elect a leader?", "Why randomized timeouts?"]
    returns = [p.content for m in seen for p in m.parts if isinstance(p, ToolReturnPart)]
    assert returns == [first.answer]
    # A new process (a new App on the same home) remembers too.
    rec2 = Recorder()
    app2 = make_app(tmp_path, small_index, rec2, search_then(["raft"]))
    terminal(run(app2.ask("And in one sentence?", session_id=sid)))
    assert len(user_prompts(rec2.seen["coordinator"][-1])) == 3


def test_continuity_and_audit_records(tmp_path: Path, small_index: Any) -> None:
    rec = Recorder()

    def writer(messages: list[ModelMessage], info: AgentInfo) -> Any:
        return text("Raft elects leaders.")

    first_turn = search_then(["raft"], end="extension")
    later_turns = search_then(["raft"])
    turns: list[str] = []

    def search(messages: list[ModelMessage], info: AgentInfo) -> Any:
        goal = user_prompts(messages)[0]
        if goal not in turns:
            turns.append(goal)
        return (first_turn if len(turns) == 1 else later_turns)(messages, info)

    app = make_app(tmp_path, small_index, rec, search, synthesizer=writer)
    sid = app.new_session()
    cp = terminal(run(app.ask("How does Raft elect leaders?", session_id=sid, items=[RAFT])))
    state = app.store.get_state(sid)
    assert [r.turn_id for r in state.audit] == [cp.turn_id]
    paused_at = state.audit[0].updated
    terminal(run(app.resume(sid, None, "synthesize")))
    state = app.store.get_state(sid)
    assert [r.turn_id for r in state.audit] == [cp.turn_id]  # updated in place, not appended
    assert state.audit[0].updated > paused_at and app.turn(cp.turn_id).status == "answered"
    assert state.audit[0].search_goal == "How does Raft elect leaders?"
    assert "Prior Turn Context" not in user_prompts(rec.seen["synthesizer"][-1])[0]
    # That report was automatic (the agent asked for more instead of concluding): it is not
    # carried over. The next turn concludes; the one after, same scope, gets its report.
    terminal(run(app.ask("What are terms?", session_id=sid, items=[RAFT], hitl=False)))
    assert "Prior Turn Context" not in user_prompts(rec.seen["synthesizer"][-1])[0]
    terminal(run(app.ask("And logs?", session_id=sid, items=[RAFT], hitl=False)))
    prompt = user_prompts(rec.seen["synthesizer"][-1])[0]
    assert "# Prior Turn Context (Read-Only Reference)" in prompt
    assert "Previous question: What are terms?" in prompt
    assert "What that search found: found raft passages" in prompt
    # A different scope: no continuity.
    terminal(run(app.ask("And tomatoes?", session_id=sid, items=[GARDEN], hitl=False)))
    assert "Prior Turn Context" not in user_prompts(rec.seen["synthesizer"][-1])[0]
    assert len(app.store.get_state(sid).audit) == 4
