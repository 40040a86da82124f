"""Two real processes writing the same session at once lose nothing, and only one of several
processes can claim a checkpoint for resuming — until its holder dies."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from zocrates_nb.sessions import (
    AuditRecord,
    CheckpointClaimed,
    CheckpointSnapshot,
    SessionState,
    SessionStore,
)

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


def _claim_and_hold(db: str, sid: str, start: Any, results: Any) -> None:
    """Race for the checkpoint; the winner keeps holding it (a resume still running)."""
    store = SessionStore(db, timeout=60)
    start.wait()
    try:
        snap = store.claim_checkpoint(sid)
    except CheckpointClaimed as e:
        results.put(("refused", os.getpid(), e.holder.pid if e.holder else None))
        return
    assert snap.claim is not None
    results.put(("claimed", os.getpid(), snap.claim.pid))
    time.sleep(600)  # killed long before


def test_one_of_three_processes_claims_and_its_death_frees_the_checkpoint(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    turn = store.begin_turn(sid, "Survey dense retrieval")
    snap = CheckpointSnapshot(interrupt_id=f"{turn.turn_id}-ext1", turn_id=turn.turn_id)
    store.save_checkpoint(sid, snap, turn=turn)

    ctx = mp.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_claim_and_hold, args=(str(store.path), sid, start, results))
        for _ in range(3)
    ]
    for p in procs:
        p.start()
    try:
        start.set()
        outcomes = [results.get(timeout=120) for _ in procs]
        winners = [o for o in outcomes if o[0] == "claimed"]
        assert len(winners) == 1, outcomes
        holder = winners[0][1]
        assert winners[0][2] == holder
        # The losers were told who holds it.
        assert all(o[2] == holder for o in outcomes if o[0] == "refused")
        with pytest.raises(CheckpointClaimed) as refused:
            store.claim_checkpoint(sid)
        assert refused.value.holder is not None and refused.value.holder.pid == holder
        assert store.get_turn(turn.turn_id).status == "running"

        # The holder dies without a word (SIGKILL): its claim no longer holds.
        os.kill(holder, signal.SIGKILL)
        next(p for p in procs if p.pid == holder).join(30)
        taken = store.claim_checkpoint(sid)
        assert taken.claim is not None and taken.claim.pid == os.getpid()
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(30)
