"""Two real processes writing the same session at once lose nothing."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from zocrates_nb.sessions import AuditRecord, SessionState, SessionStore

ROUNDS = 40


def _hammer(db: str, sid: str, who: str, start: Any) -> None:
    store = SessionStore(db, timeout=60)
    start.wait()
    for i in range(ROUNDS):
        turn = store.begin_turn(sid, f"{who} question {i}")

        def bump(s: SessionState, i: int = i, tid: str = turn.turn_id) -> None:
            s.extras["count"] = s.extras.get("count", 0) + 1
            s.extras.setdefault("log", []).append(f"{who}:{i}")
            s.record_audit(AuditRecord(turn_id=tid, user_query=f"{who} {i}"))
            s.cache_outline([f"{who}-{i % 12}"], f"outline {who} {i}")

        store.update_state(sid, bump)
        store.append_messages(
            sid,
            [ModelRequest(parts=[UserPromptPart(f"{who} {i}")]), ModelResponse([TextPart("ok")])],
            turn_id=turn.turn_id,
        )
        store.update_turn(turn.turn_id, status="answered", answer=f"answer {who} {i}")


def test_two_processes_hammering_one_session(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    ctx = mp.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(target=_hammer, args=(str(store.path), sid, who, start)) for who in ("A", "B")
    ]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=240)
        assert p.exitcode == 0, f"worker failed with exit code {p.exitcode}"

    state = store.get_state(sid)
    assert state.extras["count"] == 2 * ROUNDS  # no lost read-modify-write
    log = state.extras["log"]
    assert sorted(log) == sorted(f"{w}:{i}" for w in "AB" for i in range(ROUNDS))
    # Each worker's own updates kept their order.
    assert [x for x in log if x.startswith("A")] == [f"A:{i}" for i in range(ROUNDS)]
    assert len(state.audit) == 5 and len(state.outlines) == 10

    turns = store.turns(sid)
    assert [t.index for t in turns] == list(range(1, 2 * ROUNDS + 1))  # unique, gapless
    assert all(t.status == "answered" for t in turns)
    blocks = store.message_blocks(sid)
    assert len(blocks) == 2 * ROUNDS
    assert {b.turn_id for b in blocks} == {t.turn_id for t in turns}
    assert len(store.load_messages(sid)) == 4 * ROUNDS
