"""The session store on a real SQLite file: sessions, pydantic-ai messages, turns, state."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import time
from pathlib import Path

import pytest
from pydantic import ValidationError
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from zocrates_nb.retrieval.state import CompletionReport
from zocrates_nb.sessions import (
    LEASE_SECONDS,
    MAX_AUDIT_TURNS,
    MAX_CACHED_OUTLINES,
    SCHEMA_VERSION,
    AuditRecord,
    CheckpointClaimed,
    CheckpointPending,
    CheckpointSnapshot,
    NoPendingCheckpoint,
    SessionNotFound,
    SessionState,
    SessionStore,
    WrongCheckpoint,
)
from zocrates_nb.turn import AskOptions, CheckpointInfo, Scope, Source, TurnResult


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore.open(tmp_path)


def _agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(name="coordinator", instructions="Answer briefly.")

    @agent.tool_plain
    def search_library(request: str) -> str:
        """Search the researcher's library."""
        return f"evidence for {request}"

    return agent


def test_database_is_wal_with_a_busy_timeout(store: SessionStore) -> None:
    conn = sqlite3.connect(store.path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.path.name == "sessions.db"
    assert store._conn().execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_sessions_are_created_listed_titled_and_deleted(store: SessionStore) -> None:
    a = store.create_session()
    b = store.create_session("An explicit title")
    assert len(a.id) == 32 and int(a.id, 16) >= 0  # uuid hex
    long_q = "What do the papers say about " + "retrieval " * 20
    store.begin_turn(a.id, long_q)
    titled = store.get_session(a.id)
    assert titled.title.startswith("What do the papers say about retrieval")
    assert len(titled.title) <= 80 and titled.title.endswith("…")
    assert titled.turns == 1
    store.begin_turn(b.id, "second session question")
    assert store.get_session(b.id).title == "An explicit title"  # the first turn does not rename
    assert [s.id for s in store.list_sessions()] == [b.id, a.id]  # most recently updated first
    store.delete_session(a.id)
    with pytest.raises(SessionNotFound):
        store.get_session(a.id)
    assert store.turns(a.id) == []  # cascaded


def test_pydantic_ai_messages_round_trip_and_continue_a_conversation(store: SessionStore) -> None:
    sid = store.create_session().id
    agent = _agent()
    t1 = store.begin_turn(sid, "What is BM25?")
    first = agent.run_sync("What is BM25?", model=TestModel())
    store.append_messages(sid, first.new_messages(), turn_id=t1.turn_id)

    loaded = store.load_messages(sid)
    assert loaded == first.all_messages()
    kinds = [type(p).__name__ for m in loaded for p in m.parts]
    assert "ToolCallPart" in kinds and "ToolReturnPart" in kinds and "TextPart" in kinds
    assert ModelMessagesTypeAdapter.dump_json(loaded) == ModelMessagesTypeAdapter.dump_json(
        first.all_messages()
    )

    seen: list[str] = []

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.extend(
            p.content
            for m in messages
            for p in m.parts
            if isinstance(p, UserPromptPart) and isinstance(p.content, str)
        )
        return ModelResponse(parts=[TextPart("It ranks by term frequency.")])

    store.update_turn(t1.turn_id, status="answered")  # one turn at a time per session
    t2 = store.begin_turn(sid, "And how does it rank?")
    second = agent.run_sync(
        "And how does it rank?",
        model=FunctionModel(reply),
        message_history=store.load_messages(sid),
    )
    store.append_messages(sid, second.new_messages(), turn_id=t2.turn_id)
    assert seen == ["What is BM25?", "And how does it rank?"]  # the model saw the stored history
    blocks = store.message_blocks(sid)
    assert [b.turn_id for b in blocks] == [t1.turn_id, t2.turn_id]
    assert len(store.load_messages(sid)) == len(second.all_messages())


def test_replace_messages_is_all_or_nothing(store: SessionStore) -> None:
    sid = store.create_session().id
    req = ModelRequest(parts=[UserPromptPart("hello")])
    resp = ModelResponse(parts=[TextPart("hi")])
    s1 = store.append_messages(sid, [req, resp], turn_id="t1")
    s2 = store.append_messages(sid, [req, resp], turn_id="t2")
    summary = ModelRequest(parts=[UserPromptPart("summary")])
    assert not store.replace_messages(sid, [summary], seqs=[s1, s2 + 100])  # stale: no change
    assert len(store.load_messages(sid)) == 4
    assert store.replace_messages(sid, [summary], seqs=[s1])
    blocks = store.message_blocks(sid)
    assert [(b.kind, b.turn_id) for b in blocks] == [("summary", None), ("turn", "t2")]
    assert store.load_messages(sid)[0] == summary


def test_turns_are_typed_records_stored_whole(store: SessionStore) -> None:
    sid = store.create_session().id
    t = store.begin_turn(sid, "Which paper introduced DPR?", AskOptions(items=["ABCD1234"]))
    assert (t.index, t.status, t.scope.items, t.options.hitl) == (1, "running", ["ABCD1234"], True)
    assert t.created is not None and t.created == t.updated
    store.update_turn(t.turn_id, timings={"search": 1.5})
    cited = [Source(n=1, item_key="ABCD1234", title="Dense Passage Retrieval", tier="cited")]
    done = store.update_turn(
        t.turn_id, status="answered", answer="Karpukhin et al. [1]", cited_sources=cited
    )
    assert isinstance(done, TurnResult)
    assert done.timings == {"search": 1.5} and done.cited_sources == cited
    assert done.updated is not None and t.created is not None and done.updated >= t.created
    t2 = store.begin_turn(sid, "Thanks!")
    store.update_turn(t2.turn_id, status="error", error="model endpoint unreachable")
    with pytest.raises(ValueError, match="unknown turn status"):
        store.update_turn(t2.turn_id, status="done")

    turns = store.turns(sid)
    assert [(h.index, h.prompt, h.status) for h in turns] == [
        (1, "Which paper introduced DPR?", "answered"),
        (2, "Thanks!", "error"),
    ]
    assert turns[0].cited_sources == cited and turns[0].checkpoint is None
    assert turns[1].error == "model endpoint unreachable"
    # The row holds exactly the record (no derived totals, no timestamps: those are columns).
    raw = store._conn().execute("SELECT result FROM turns WHERE turn_id = ?", (t.turn_id,))
    stored = json.loads(raw.fetchone()[0])
    assert set(stored) == set(TurnResult.model_fields) - {"created", "updated"}
    assert "input_tokens" not in stored["usage"] and "scope" not in stored
    assert store.schema_version == SCHEMA_VERSION


def test_a_pending_checkpoint_refuses_new_questions_until_cleared(store: SessionStore) -> None:
    sid = store.create_session().id
    t = store.begin_turn(sid, "Survey dense retrieval")
    assert store.pending_checkpoint(sid) is None
    snap = CheckpointSnapshot(
        interrupt_id="int-1", turn_id=t.turn_id, payload={"tool_count": 10, "evidence": [1, 2]}
    )
    card = CheckpointInfo(interrupt_id="int-1", extension=1, calls_used=10, budget=10,
                          words_used=900, word_ceiling=7500)  # fmt: skip
    store.save_checkpoint(sid, snap, turn=t.model_copy(update={"checkpoint": card}))
    assert store.get_turn(t.turn_id).status == "checkpoint"

    # Another process (a fresh store on the same file) sees the pause and is refused too.
    other = SessionStore(store.path)
    pending = other.pending_checkpoint(sid)
    assert pending is not None and pending.payload == {"tool_count": 10, "evidence": [1, 2]}
    with pytest.raises(CheckpointPending) as refused:
        other.begin_turn(sid, "A new question")
    assert refused.value.interrupt_id == "int-1" and refused.value.turn_id == t.turn_id
    assert len(store.turns(sid)) == 1  # nothing was written
    assert store.turns(sid)[0].checkpoint == card

    assert store.clear_checkpoint(sid) == pending
    assert store.turns(sid)[0].checkpoint is None  # shown only while it waits
    store.update_turn(t.turn_id, status="answered", answer="…")
    assert store.begin_turn(sid, "A new question").index == 2


def _paused(store: SessionStore, interrupt_id: str = "t1-ext1") -> tuple[str, str]:
    sid = store.create_session().id
    t = store.begin_turn(sid, "Survey dense retrieval")
    snap = CheckpointSnapshot(interrupt_id=interrupt_id, turn_id=t.turn_id, payload={"n": 1})
    store.save_checkpoint(sid, snap, turn=t)
    return sid, t.turn_id


def test_claiming_a_checkpoint_is_exclusive_until_released(store: SessionStore) -> None:
    sid, turn_id = _paused(store)
    wrong = r"t0-ext1. is not the checkpoint waiting .*\(t1-ext1\)"
    with pytest.raises(WrongCheckpoint, match=wrong):
        store.claim_checkpoint(sid, "t0-ext1")

    before = time.time()
    held = store.claim_checkpoint(sid, "t1-ext1")
    claim = held.claim
    assert claim is not None and held.payload == {"n": 1}
    assert (claim.pid, claim.host) == (os.getpid(), socket.gethostname())
    assert before <= claim.claimed <= time.time()
    assert store.get_turn(turn_id).status == "running"
    # Another connection (as another process would) sees the claim and is refused at once.
    other = SessionStore(store.path)
    pending = other.pending_checkpoint(sid)
    assert pending is not None and pending.claim == claim
    with pytest.raises(CheckpointClaimed, match="already being resumed") as refused:
        other.claim_checkpoint(sid, "t1-ext1")
    assert refused.value.holder == claim and f"pid {os.getpid()}" in str(refused.value)
    # Still a pending checkpoint: no new question either.
    with pytest.raises(CheckpointPending):
        other.begin_turn(sid, "A new question")

    # Only the holder's token ends the claim; then the checkpoint waits as before.
    assert not other.release_checkpoint(sid, "someone-else")
    assert other.release_checkpoint(sid, claim.token)
    assert not other.release_checkpoint(sid, claim.token)  # once
    pending = store.pending_checkpoint(sid)
    assert pending is not None and pending.claim is None
    assert store.get_turn(turn_id).status == "checkpoint"
    assert other.claim_checkpoint(sid).claim is not None  # no id: whatever waits


def test_a_new_snapshot_or_the_answer_ends_the_claim(store: SessionStore) -> None:
    sid, turn_id = _paused(store)
    first = store.claim_checkpoint(sid)
    assert first.claim is not None
    with pytest.raises(CheckpointClaimed):
        store.save_checkpoint(sid, first, turn=store.get_turn(turn_id), claim="not-the-holder")
    ext2 = CheckpointSnapshot(interrupt_id="t1-ext2", turn_id=turn_id)
    store.save_checkpoint(sid, ext2, turn=store.get_turn(turn_id), claim=first.claim.token)
    pending = store.pending_checkpoint(sid)
    assert pending is not None and pending.interrupt_id == "t1-ext2" and pending.claim is None
    assert store.get_turn(turn_id).status == "checkpoint"
    # The old claim holds nothing now.
    assert not store.renew_claim(sid, first.claim.token)
    with pytest.raises(NoPendingCheckpoint, match="lapsed"):
        store.clear_checkpoint(sid, claim=first.claim.token)

    second = store.claim_checkpoint(sid, "t1-ext2")
    assert second.claim is not None
    assert store.clear_checkpoint(sid, claim=second.claim.token) == second
    assert store.pending_checkpoint(sid) is None
    assert not store.release_checkpoint(sid, second.claim.token)
    with pytest.raises(NoPendingCheckpoint, match="no checkpoint waiting"):
        store.claim_checkpoint(sid)


def _set_claim(store: SessionStore, sid: str, **changes: object) -> None:
    def edit(s: SessionState) -> None:
        assert s.checkpoint is not None and s.checkpoint.claim is not None
        s.checkpoint.claim = s.checkpoint.claim.model_copy(update=changes)

    store.update_state(sid, edit)


def test_a_lapsed_claim_can_be_taken_over(store: SessionStore) -> None:
    sid, _ = _paused(store)
    held = store.claim_checkpoint(sid)
    assert held.claim is not None
    # Renewed an hour ago: the lease ran out, whoever held it.
    _set_claim(store, sid, renewed=time.time() - 2 * LEASE_SECONDS)
    taken = store.claim_checkpoint(sid)
    assert taken.claim is not None and taken.claim.token != held.claim.token
    assert not store.release_checkpoint(sid, held.claim.token)  # the old holder lost it

    # A heartbeat keeps a claim from lapsing.
    _set_claim(store, sid, renewed=time.time() - LEASE_SECONDS + 5)
    assert store.renew_claim(sid, taken.claim.token)
    with pytest.raises(CheckpointClaimed):
        store.claim_checkpoint(sid)

    # On another host the pid cannot be checked: only the lease decides.
    _set_claim(store, sid, host="another-host", pid=1)
    with pytest.raises(CheckpointClaimed):
        store.claim_checkpoint(sid)

    # Our pid but another start time: the pid was reused, the claiming process is gone.
    pending = store.pending_checkpoint(sid)
    assert pending is not None and pending.claim is not None
    if pending.claim.started is None:
        pytest.skip("no /proc here: process start times are unknown")
    _set_claim(store, sid, host=socket.gethostname(), pid=os.getpid(), started=1.0)
    assert store.claim_checkpoint(sid).claim is not None


def test_audit_keeps_the_last_five_turns_and_updates_resumed_turns_in_place(
    store: SessionStore,
) -> None:
    sid = store.create_session().id
    for i in range(7):
        store.update_state(sid, lambda s, i=i: s.record_audit(AuditRecord(turn_id=f"t{i}")))
    audit = store.get_state(sid).audit
    assert [r.turn_id for r in audit] == ["t2", "t3", "t4", "t5", "t6"]
    assert len(audit) == MAX_AUDIT_TURNS

    def resume(s: SessionState) -> None:
        report = CompletionReport(summary="extended", gaps=["snapshots"])
        s.record_audit(AuditRecord(turn_id="t4", search_goal="extended", report=report))

    store.update_state(sid, resume)
    audit = store.get_state(sid).audit
    assert [r.turn_id for r in audit] == ["t2", "t3", "t4", "t5", "t6"]  # same place, no duplicate
    t4 = audit[2]
    assert t4.search_goal == "extended" and t4.report is not None  # read back typed
    assert t4.report.gaps == ["snapshots"] and t4.report.source == "agent"
    # A record an earlier version stored without a report ({}) reads back as none, and a report
    # of the wrong shape is refused rather than stored.
    assert AuditRecord.model_validate({"turn_id": "t0", "report": {}}).report is None
    with pytest.raises(ValidationError):
        AuditRecord(turn_id="t9", report={"gaps": "not a list"})
    assert t4.created == store.get_state(sid).audit_for("t4").created  # type: ignore[union-attr]
    assert t4.updated >= t4.created


def test_outline_cache_is_lru_bounded_and_dual_keyed(store: SessionStore) -> None:
    sid = store.create_session().id

    def fill(s: SessionState) -> None:
        for i in range(MAX_CACHED_OUTLINES):
            s.cache_outline([f"PARENT{i}", f"ATTACH{i}"], f"# outline {i}", title=f"Paper {i}")

    store.update_state(sid, fill)
    state = store.get_state(sid)
    assert state.outline_count == MAX_CACHED_OUTLINES  # 20 keys, 10 documents
    assert state.get_outline("ATTACH3") is state.get_outline("PARENT3")

    # Reading paper 0 makes it recent; adding an 11th document evicts paper 1, not paper 0.
    store.update_state(sid, lambda s: s.get_outline("PARENT0", touch=True) and None)
    store.update_state(sid, lambda s: s.cache_outline(["PARENT10", "ATTACH10"], "# outline 10"))
    state = store.get_state(sid)
    assert state.outline_count == MAX_CACHED_OUTLINES
    assert state.get_outline("ATTACH1") is None and state.get_outline("PARENT1") is None
    assert state.get_outline("ATTACH0") is not None and state.get_outline("PARENT10") is not None
    assert state.has_outlines_for(["PARENT0", "ATTACH10"])
    assert not state.has_outlines_for(["PARENT0", "PARENT1"])

    # Learning the attachment key of a cached parent merges into the same document.
    store.update_state(sid, lambda s: s.cache_outline(["PARENT2", "ATTACH2b"], "# outline 2 v2"))
    entry = store.get_state(sid).get_outline("ATTACH2")
    assert entry is not None and entry.outline == "# outline 2 v2"
    assert set(entry.keys) == {"PARENT2", "ATTACH2", "ATTACH2b"}
    assert store.get_state(sid).outline_count == MAX_CACHED_OUTLINES


def test_state_holds_scope_profile_and_survives_a_reopen(store: SessionStore) -> None:
    sid = store.create_session().id

    def setup(s: SessionState) -> None:
        s.scope = Scope(items=["K1"], collections=["Thesis"])
        s.research_profile = "PhD student in information retrieval"
        s.extras["continuity"] = {"last_scope": ["K1"]}

    store.update_state(sid, setup)
    store.close()
    again = SessionStore.open(store.path.parent).get_state(sid)
    assert again.scope.items == ["K1"] and again.scope.kind == "selection"
    assert again.research_profile == "PhD student in information retrieval"
    assert again.extras == {"continuity": {"last_scope": ["K1"]}}
    assert Scope().kind == "library" and Scope(collections=["C"]).kind == "collection"


def test_a_failing_update_leaves_the_state_untouched(store: SessionStore) -> None:
    sid = store.create_session().id
    store.update_state(sid, lambda s: setattr(s, "research_profile", "before"))

    def boom(s: SessionState) -> None:
        s.research_profile = "half-written"
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        store.update_state(sid, boom)
    assert store.get_state(sid).research_profile == "before"


def test_unknown_ids_are_clear_errors(store: SessionStore) -> None:
    with pytest.raises(SessionNotFound):
        store.append_messages("nope", [])
    with pytest.raises(SessionNotFound):
        store.update_state("nope", lambda s: None)
    with pytest.raises(SessionNotFound):
        store.update_turn("nope", status="answered")


def test_store_works_from_worker_threads(store: SessionStore) -> None:
    sid = store.create_session().id

    async def main() -> None:
        await asyncio.gather(
            *(
                asyncio.to_thread(
                    store.append_messages,
                    sid,
                    [
                        ModelRequest(parts=[ToolReturnPart("t", f"r{i}", tool_call_id=str(i))]),
                        ModelResponse(parts=[ToolCallPart("t", {"i": i}, tool_call_id=str(i))]),
                    ],
                )
                for i in range(20)
            )
        )

    asyncio.run(main())
    assert len(store.load_messages(sid)) == 40
