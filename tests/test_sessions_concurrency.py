"""Two real processes writing the same session at once lose nothing and never interleave its
turns (one turn at a time: the session lease), and only one of several processes can claim a
checkpoint for resuming — until its holder dies."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from zocrates_nb.sessions import (
    INTERRUPTED,
    AuditRecord,
    CheckpointClaimed,
    CheckpointSnapshot,
    SessionBusy,
    SessionState,
    SessionStore,
)

ROUNDS = 40


def _hammer(db: str, sid: str, who: str, start: Any) -> None:
    store = SessionStore(db, timeout=60)
    start.wait()
    for i in range(ROUNDS):
        while True:  # the other process's turn holds the session: wait for it to end
            try:
                turn = store.begin_turn(sid, f"{who} question {i}")
                break
            except SessionBusy:
                time.sleep(0.002)

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
    # One turn at a time: the history holds each turn's messages in turn order, never two
    # turns' messages interleaved.
    assert [b.turn_id for b in blocks] == [t.turn_id for t in turns]
    assert len(store.load_messages(sid)) == 4 * ROUNDS
    assert store.get_state(sid).running is None  # the last turn's end released the lease
    assert store._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


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


def _dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_recover_fails_a_dead_processes_turn_and_frees_its_claimed_checkpoint(
    tmp_path: Path,
) -> None:
    """What a kill -9 leaves (a running turn's lease, a resume's claim, both held by a dead
    pid) is repaired when the next App opens the store; live holders are left alone."""
    store = SessionStore.open(tmp_path)
    dead = _dead_pid()
    running_sid, paused_sid, live_sid = (store.create_session().id for _ in range(3))

    turn = store.begin_turn(running_sid, "killed mid-turn")
    paused = store.begin_turn(paused_sid, "killed while resuming")
    snap = CheckpointSnapshot(interrupt_id=f"{paused.turn_id}-ext1", turn_id=paused.turn_id)
    store.save_checkpoint(paused_sid, snap, turn=paused)
    store.claim_checkpoint(paused_sid)
    live = store.begin_turn(live_sid, "still running here")

    def by(pid: int, field: str) -> Any:
        def put(s: SessionState) -> None:
            holder = s.running if field == "running" else s.checkpoint.claim  # type: ignore[union-attr]
            assert holder is not None
            holder.pid, holder.started = pid, None

        return put

    store.update_state(running_sid, by(dead, "running"))
    store.update_state(paused_sid, by(dead, "claim"))

    with pytest.raises(SessionBusy):  # a live holder still refuses a second question
        store.begin_turn(live_sid, "a second question")
    assert sorted(store.recover()) == sorted([running_sid, paused_sid])

    failed = store.get_turn(turn.turn_id)
    assert failed.status == "error" and failed.error == INTERRUPTED
    assert store.get_state(running_sid).running is None
    waiting = store.get_state(paused_sid).checkpoint
    assert waiting is not None and waiting.claim is None  # resumable again
    assert store.get_turn(paused.turn_id).status == "checkpoint"
    assert store.claim_checkpoint(paused_sid).claim is not None
    assert store.get_turn(live.turn_id).status == "running"  # this process is alive
    assert store.recover() == []


def test_two_hundred_turns_script_small_variant(tmp_path: Path) -> None:
    """`scripts/turns_two_processes.py` (200 turns by default) at 20 turns: two processes
    through `App.ask` on one session: none lost, none interleaved, integrity ok."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "turns_two_processes.py"
    done = subprocess.run(
        [sys.executable, str(script), "--turns", "20", "--home", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
        env={**os.environ, "HF_HUB_OFFLINE": "1",
             "PYTHONPATH": str(script.parents[1])},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["turns"] == 20 and figures["history_in_turn_order"] is True
