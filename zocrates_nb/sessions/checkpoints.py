"""Checkpoints: a paused turn's snapshot, and the claim a resume takes on it so that exactly one
process resumes it (a dead holder's claim is taken over)."""

from __future__ import annotations

import contextlib
import sqlite3
import time

from zocrates_nb.sessions.claims import LEASE_SECONDS, claim_holds, new_claim
from zocrates_nb.sessions.database import Database
from zocrates_nb.sessions.errors import (
    CheckpointClaimed,
    CheckpointPending,
    NoPendingCheckpoint,
    SessionBusy,
    SessionNotFound,
    WrongCheckpoint,
)
from zocrates_nb.sessions.records import TurnStatus
from zocrates_nb.sessions.state import CheckpointClaim, CheckpointSnapshot, SessionState
from zocrates_nb.turn import TurnResult


class CheckpointStore(Database):
    """The checkpoint half of the session store (`SessionStore` adds sessions, messages, turns)."""

    def pending_checkpoint(self, session_id: str) -> CheckpointSnapshot | None:
        """The waiting snapshot (also while a resume holds it: see its `claim`)."""
        return self.get_state(session_id).checkpoint

    def save_checkpoint(
        self,
        session_id: str,
        snapshot: CheckpointSnapshot,
        *,
        turn: TurnResult,
        claim: str | None = None,
    ) -> None:
        """Pause a turn: store the snapshot and the turn's record (status `checkpoint`, its
        `checkpoint` set; an "answer" snapshot keeps its turn at `error`) in one transaction.

        A resumed run passes its claim token: the new snapshot replaces the one it holds (and
        ends the claim); CheckpointClaimed or NoPendingCheckpoint if it no longer holds it.
        """
        now = time.time()
        with self._tx() as c:
            self._require(c, session_id)
            if claim is not None:
                self._check_claim(c, session_id, claim)

            def put(state: SessionState) -> None:
                state.checkpoint = snapshot.model_copy(update={"claim": None})

            self._apply_state(c, session_id, put)
            paused = turn.model_copy(update={"status": _waiting_status(snapshot)})
            if paused.turn_id != snapshot.turn_id or paused.session_id != session_id:
                raise SessionNotFound(f"no turn {snapshot.turn_id!r} in session {session_id!r}")
            self._write_turn(c, paused, now)

    def clear_checkpoint(
        self, session_id: str, *, claim: str | None = None
    ) -> CheckpointSnapshot | None:
        """Remove the pending snapshot (after synthesis) and the checkpoint from its turn's
        record; returns what was there.

        With a claim token, only the claim's holder may clear it (CheckpointClaimed or
        NoPendingCheckpoint otherwise).
        """
        with self._tx() as c:
            self._require(c, session_id)
            taken = self._check_claim(c, session_id, claim) if claim is not None else None

            def take(state: SessionState) -> None:
                nonlocal taken
                taken = state.checkpoint
                state.checkpoint = None

            self._apply_state(c, session_id, take)
            now = time.time()
            if taken is not None:  # the turn's record shows a checkpoint only while it waits
                with contextlib.suppress(SessionNotFound):
                    turn = self._read_turn(c, taken.turn_id)
                    self._write_turn(c, turn.model_copy(update={"checkpoint": None}), now)
            self._touch(c, session_id, now)
        return taken

    def claim_checkpoint(
        self, session_id: str, interrupt_id: str | None = None, *, lease: float = LEASE_SECONDS
    ) -> CheckpointSnapshot:
        """Take the pending checkpoint for resuming, atomically across processes.

        Records who holds it (token, pid, host, time) and marks its turn running; returns the
        snapshot with its `claim`. Refuses with CheckpointClaimed while another live claim holds
        it, and NoPendingCheckpoint when nothing (or another interrupt id) waits. A claim whose
        process died on this host, or that was not renewed within `lease` seconds, is taken
        over. The claim ends with the resumed turn: `save_checkpoint`/`clear_checkpoint` with
        its token, or `release_checkpoint`.
        """
        now = time.time()
        with self._tx() as c:
            self._require(c, session_id)
            state = self._load_state(c, session_id)
            snap = refuse_resume(session_id, state.checkpoint, interrupt_id, lease=lease, now=now)
            return self._put_claim(c, session_id, snap, new_claim(), "running", now)

    def renew_claim(self, session_id: str, token: str) -> bool:
        """The holder's heartbeat: push its lease forward. False when it no longer holds it."""
        with self._tx() as c:
            if self._held_by(c, session_id, token) is None:
                return False

            def renew(s: SessionState) -> None:
                assert s.checkpoint is not None and s.checkpoint.claim is not None
                s.checkpoint.claim.renewed = time.time()

            self._apply_state(c, session_id, renew)
        return True

    def release_checkpoint(self, session_id: str, token: str) -> bool:
        """End a claim without resolving the checkpoint (the resume failed or was stopped):
        the checkpoint waits again, its turn back at `checkpoint`. Only the holder's token
        releases; False (and nothing changed) otherwise."""
        now = time.time()
        with self._tx() as c:
            snap = self._held_by(c, session_id, token)
            if snap is None:
                return False
            self._put_claim(c, session_id, snap, None, _waiting_status(snap), now)
        return True

    def _put_claim(
        self,
        c: sqlite3.Connection,
        session_id: str,
        snap: CheckpointSnapshot,
        claim: CheckpointClaim | None,
        status: TurnStatus,
        now: float,
    ) -> CheckpointSnapshot:
        """Store the snapshot with `claim` and set its turn's status (inside a transaction)."""
        updated = snap.model_copy(update={"claim": claim})

        def put(s: SessionState) -> None:
            s.checkpoint = updated

        self._apply_state(c, session_id, put)
        self._set_status(c, snap.turn_id, status, now)
        return updated

    def _held_by(
        self, c: sqlite3.Connection, session_id: str, token: str
    ) -> CheckpointSnapshot | None:
        """The pending snapshot when `token` holds its claim (inside a transaction)."""
        snap = self._load_state(c, session_id).checkpoint
        held = snap is not None and snap.claim is not None and snap.claim.token == token
        return snap if held else None

    def _check_claim(
        self, c: sqlite3.Connection, session_id: str, token: str
    ) -> CheckpointSnapshot:
        """The pending snapshot, provided `token` holds its claim (inside a transaction)."""
        snap = self._load_state(c, session_id).checkpoint
        if snap is None:
            raise NoPendingCheckpoint(f"session {session_id} has no checkpoint waiting")
        if snap.claim is None:
            raise NoPendingCheckpoint(
                f"this resume's claim on checkpoint {snap.interrupt_id} lapsed; resume it again"
            )
        if snap.claim.token != token:
            raise CheckpointClaimed(session_id, snap)
        return snap


def _waiting_status(snap: CheckpointSnapshot) -> TurnStatus:
    """A waiting checkpoint's turn is at `checkpoint`; a failed answer's stays an `error`."""
    return "error" if snap.kind == "answer" else "checkpoint"


def supersedable(snap: CheckpointSnapshot) -> bool:
    """A failed answer kept for a retry gives way to a new question (unless a retry runs)."""
    return snap.kind == "answer" and not claim_holds(snap.claim)


def refuse_new_turn(session_id: str, state: SessionState, now: float | None = None) -> None:
    """The one rule for a new question in a session: refused while a checkpoint waits for the
    researcher's decision (`CheckpointPending`; a failed answer kept for a retry gives way) or
    while a live turn holds the session (`SessionBusy`)."""
    snap = state.checkpoint
    if snap is not None and not supersedable(snap):
        raise CheckpointPending(session_id, snap)
    if state.running is not None and claim_holds(state.running, now=now):
        raise SessionBusy(session_id, state.running)


def refuse_resume(
    session_id: str,
    snap: CheckpointSnapshot | None,
    interrupt_id: str | None,
    *,
    lease: float = LEASE_SECONDS,
    now: float | None = None,
) -> CheckpointSnapshot:
    """The one rule for a resume: the checkpoint waiting (`NoPendingCheckpoint` when none), the
    one named (`WrongCheckpoint`), not held by another live resume (`CheckpointClaimed`)."""
    if snap is None:
        raise NoPendingCheckpoint(
            f"session {session_id} has no checkpoint waiting (it may have been answered already)"
        )
    if interrupt_id and interrupt_id != snap.interrupt_id:
        raise WrongCheckpoint(session_id, snap, interrupt_id)
    if claim_holds(snap.claim, lease=lease, now=now):
        raise CheckpointClaimed(session_id, snap)
    return snap


def drop_checkpoint(state: SessionState) -> None:
    state.checkpoint = None
