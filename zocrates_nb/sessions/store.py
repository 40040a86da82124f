"""`sessions.db`: sessions, coordinator messages, turns and per-session state in one SQLite file.

Safe for several processes at once (a kernel and a CLI, two kernels): WAL journal, a busy
timeout, short transactions, and `BEGIN IMMEDIATE` wherever a value is read and then written, so
two writers serialise instead of overwriting each other.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from zocrates_nb.errors import ZocratesError
from zocrates_nb.sessions.claims import (
    LEASE_SECONDS,
    claim_holds,
    describe_claim,
    host_name,
    new_claim,
)
from zocrates_nb.sessions.migrations import migrate, result_json
from zocrates_nb.sessions.records import (
    TURN_STATUSES,
    MessageBlock,
    SessionRecord,
    TurnStatus,
    make_title,
    to_datetime,
)
from zocrates_nb.sessions.state import CheckpointClaim, CheckpointSnapshot, SessionState
from zocrates_nb.turn import AskOptions, TurnResult

DB_FILE = "sessions.db"


class SessionNotFound(ZocratesError, LookupError):
    """No session (or turn) with that id."""


class CheckpointPending(ZocratesError, RuntimeError):
    """A checkpoint awaits the researcher's decision; resume or synthesize before a new question.

    Surfaces map it to a conflict (HTTP 409).
    """

    def __init__(self, session_id: str, snapshot: CheckpointSnapshot) -> None:
        self.session_id = session_id
        self.interrupt_id = snapshot.interrupt_id
        self.turn_id = snapshot.turn_id
        super().__init__(
            f"session {session_id} has a pending checkpoint (turn {snapshot.turn_id}): "
            "resume it with extend_budget or synthesize before asking a new question"
        )


class NoPendingCheckpoint(ZocratesError, LookupError):
    """`resume` was called on a session (or interrupt id) with no checkpoint waiting.

    Surfaces map it to a conflict (HTTP 409).
    """


class CheckpointClaimed(NoPendingCheckpoint):
    """The checkpoint is pending but another resume (this or another process) holds it.

    A kind of NoPendingCheckpoint: nothing waits for *this* caller, so every surface refuses it
    the same way (HTTP 409, a CLI error). `holder` says who holds the claim.
    """

    def __init__(self, session_id: str, snapshot: CheckpointSnapshot) -> None:
        self.session_id = session_id
        self.interrupt_id = snapshot.interrupt_id
        self.turn_id = snapshot.turn_id
        self.holder = snapshot.claim
        who = f" ({describe_claim(snapshot.claim)})" if snapshot.claim else ""
        super().__init__(
            f"This checkpoint is already being resumed{who}. Wait for that turn to end: if it "
            f"fails or is stopped, the checkpoint waits again (session {session_id}, "
            f"checkpoint {snapshot.interrupt_id})."
        )


class SessionBusy(ZocratesError, RuntimeError):
    """Another turn of this session is running (this or another process): one at a time, so
    the conversation's history never interleaves. Surfaces map it to a conflict (HTTP 409)."""

    def __init__(self, session_id: str, lease: CheckpointClaim | None) -> None:
        self.session_id = session_id
        self.holder = lease
        here = lease is not None and lease.pid == os.getpid() and lease.host == host_name()
        where = "in this process" if here else "in another window or process"
        who = f" ({describe_claim(lease)})" if lease is not None and not here else ""
        super().__init__(
            f"A question is already running in this session ({where}){who}. Wait for it to "
            "finish or stop it, then ask again."
        )


INTERRUPTED = "The turn was interrupted: the process running it ended before it finished."


class SessionStore:
    """The session store. One instance per process is enough; it is safe across threads."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        path = Path(path)
        self.path = path / DB_FILE if path.is_dir() else path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        self.schema_version = migrate(self._tx, self.path)

    @classmethod
    def open(cls, home: str | Path) -> SessionStore:
        """The store of a data home (`<home>/sessions.db`)."""
        return cls(Path(home) / DB_FILE)

    # --- connections ------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None or getattr(self._local, "pid", None) != os.getpid():
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            self._local.conn, self._local.pid = conn, os.getpid()
        return conn

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """A write transaction: takes the write lock up front (BEGIN IMMEDIATE)."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent read snapshot across several statements."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            conn.execute("COMMIT")

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # --- sessions ---------------------------------------------------------------------------
    def create_session(self, title: str = "", *, session_id: str | None = None) -> SessionRecord:
        sid = session_id or uuid.uuid4().hex
        now = time.time()
        with self._tx() as c:
            c.execute(
                "INSERT INTO sessions (id, title, created, updated) VALUES (?, ?, ?, ?)",
                (sid, make_title(title) if title else "", now, now),
            )
            c.execute("INSERT INTO state (session_id, data) VALUES (?, ?)", (sid, "{}"))
        return self.get_session(sid)

    def get_session(self, session_id: str) -> SessionRecord:
        row = (
            self._conn()
            .execute(
                "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS n "
                "FROM sessions s WHERE s.id = ?",
                (session_id,),
            )
            .fetchone()
        )
        if row is None:
            raise SessionNotFound(f"no session {session_id!r}")
        return _session(row)

    def has_session(self, session_id: str) -> bool:
        q = "SELECT 1 FROM sessions WHERE id = ?"
        return self._conn().execute(q, (session_id,)).fetchone() is not None

    def list_sessions(self, limit: int = 50) -> list[SessionRecord]:
        """Most recently updated first."""
        rows = (
            self._conn()
            .execute(
                "SELECT s.*, (SELECT COUNT(*) FROM turns t WHERE t.session_id = s.id) AS n "
                "FROM sessions s ORDER BY s.updated DESC LIMIT ?",
                (limit,),
            )
            .fetchall()
        )
        return [_session(r) for r in rows]

    def rename_session(self, session_id: str, title: str) -> None:
        with self._tx() as c:
            self._require(c, session_id)
            c.execute("UPDATE sessions SET title = ? WHERE id = ?", (make_title(title), session_id))

    def delete_session(self, session_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    @staticmethod
    def _require(c: sqlite3.Connection, session_id: str) -> None:
        if c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise SessionNotFound(f"no session {session_id!r}")

    @staticmethod
    def _touch(c: sqlite3.Connection, session_id: str, now: float) -> None:
        c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))

    # --- messages ---------------------------------------------------------------------------
    def append_messages(
        self, session_id: str, messages: Sequence[ModelMessage], *, turn_id: str | None = None
    ) -> int:
        """Append a run's new coordinator messages (e.g. `result.new_messages()`); returns the
        block's sequence number."""
        data = ModelMessagesTypeAdapter.dump_json(list(messages)).decode()
        now = time.time()
        with self._tx() as c:
            self._require(c, session_id)
            cur = c.execute(
                "INSERT INTO messages (session_id, turn_id, kind, data, created) "
                "VALUES (?, ?, 'turn', ?, ?)",
                (session_id, turn_id, data, now),
            )
            self._touch(c, session_id, now)
            return int(cur.lastrowid or 0)

    def message_blocks(self, session_id: str) -> list[MessageBlock]:
        rows = (
            self._conn()
            .execute(
                "SELECT seq, turn_id, kind, data FROM messages WHERE session_id = ? ORDER BY seq",
                (session_id,),
            )
            .fetchall()
        )
        return [
            MessageBlock(
                seq=r["seq"],
                turn_id=r["turn_id"],
                kind="summary" if r["kind"] == "summary" else "turn",
                messages=ModelMessagesTypeAdapter.validate_json(r["data"]),
            )
            for r in rows
        ]

    def load_messages(self, session_id: str) -> list[ModelMessage]:
        """The coordinator's history, ready for `agent.run(message_history=…)`."""
        return [m for block in self.message_blocks(session_id) for m in block.messages]

    def replace_messages(
        self,
        session_id: str,
        messages: Sequence[ModelMessage],
        *,
        seqs: Sequence[int] | None = None,
        kind: str = "summary",
        state_fn: Callable[[SessionState], SessionState | None] | None = None,
    ) -> bool:
        """Atomically replace message blocks by `messages` (one block, placed where the first
        replaced block was). `seqs=None` replaces the whole history.

        With `seqs`, nothing happens (returns False) unless exactly those blocks still exist,
        so two compactions racing cannot both apply. `state_fn` updates the session state in
        the same transaction.
        """
        data = ModelMessagesTypeAdapter.dump_json(list(messages)).decode()
        now = time.time()
        with self._tx() as c:
            self._require(c, session_id)
            present = [
                r[0]
                for r in c.execute(
                    "SELECT seq FROM messages WHERE session_id = ? ORDER BY seq", (session_id,)
                )
            ]
            if seqs is None:
                doomed = present
            else:
                doomed = sorted(seqs)
                if not doomed or not set(doomed) <= set(present):
                    return False
            c.executemany("DELETE FROM messages WHERE seq = ?", [(s,) for s in doomed])
            if messages:
                if doomed:
                    c.execute(
                        "INSERT INTO messages (seq, session_id, turn_id, kind, data, created) "
                        "VALUES (?, ?, NULL, ?, ?, ?)",
                        (doomed[0], session_id, kind, data, now),
                    )
                else:
                    c.execute(
                        "INSERT INTO messages (session_id, turn_id, kind, data, created) "
                        "VALUES (?, NULL, ?, ?, ?)",
                        (session_id, kind, data, now),
                    )
            if state_fn is not None:
                self._apply_state(c, session_id, state_fn)
            self._touch(c, session_id, now)
        return True

    # --- turns ------------------------------------------------------------------------------
    def begin_turn(
        self,
        session_id: str,
        prompt: str,
        options: AskOptions | None = None,
        *,
        turn_id: str | None = None,
    ) -> TurnResult:
        """Open a turn (status running) and lease the session to it (this process) until the turn
        ends: its record is written with another status. Refuses with CheckpointPending while a
        checkpoint waits and SessionBusy while another live turn holds the lease; a dead
        holder's turn is marked failed. The first turn names the session."""
        now = time.time()
        with self._tx() as c:
            self._require(c, session_id)
            state = self._load_state(c, session_id)
            if state.checkpoint is not None and _supersedable(state.checkpoint):
                self._apply_state(c, session_id, _drop_checkpoint)
            elif state.checkpoint is not None:
                raise CheckpointPending(session_id, state.checkpoint)
            if state.running is not None:
                if claim_holds(state.running, now=now):
                    raise SessionBusy(session_id, state.running)
                self._interrupted(c, state.running.token, now)
            idx = c.execute(
                "SELECT COALESCE(MAX(idx), 0) + 1 FROM turns WHERE session_id = ?", (session_id,)
            ).fetchone()[0]
            result = TurnResult(
                turn_id=turn_id or uuid.uuid4().hex,
                session_id=session_id,
                index=idx,
                prompt=prompt,
                options=options or AskOptions(),
            )
            c.execute(
                "INSERT INTO turns (turn_id, session_id, idx, status, result, created, updated) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (result.turn_id, session_id, idx, result.status, result_json(result), now, now),
            )
            lease = new_claim(result.turn_id)

            def hold(st: SessionState) -> None:
                st.running = lease

            self._apply_state(c, session_id, hold)
            c.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND title = ''",
                (make_title(prompt), session_id),
            )
            self._touch(c, session_id, now)
        return self.get_turn(result.turn_id)

    def save_turn(self, result: TurnResult) -> TurnResult:
        """Store a turn's record as it is now (the turn must exist)."""
        with self._tx() as c:
            self._write_turn(c, result, time.time())
        return self.get_turn(result.turn_id)

    def update_turn(self, turn_id: str, **changes: Any) -> TurnResult:
        """Change fields of a stored turn (`status="error", error="…"`), validated."""
        status = changes.get("status")
        if status is not None and status not in TURN_STATUSES:
            raise ValueError(f"unknown turn status {status!r}; expected one of {TURN_STATUSES}")
        with self._tx() as c:
            current = self._read_turn(c, turn_id)
            result = TurnResult.model_validate({**dict(current), **changes})
            self._write_turn(c, result, time.time())
        return self.get_turn(turn_id)

    def get_turn(self, turn_id: str) -> TurnResult:
        with self._read() as c:
            return self._read_turn(c, turn_id)

    def turns(self, session_id: str) -> list[TurnResult]:
        """A session's turns in order (a paused turn carries its checkpoint)."""
        q = "SELECT * FROM turns WHERE session_id = ? ORDER BY idx"
        return [_turn(r) for r in self._conn().execute(q, (session_id,)).fetchall()]

    @staticmethod
    def _read_turn(c: sqlite3.Connection, turn_id: str) -> TurnResult:
        row = c.execute("SELECT * FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
        if row is None:
            raise SessionNotFound(f"no turn {turn_id!r}")
        return _turn(row)

    def _write_turn(self, c: sqlite3.Connection, result: TurnResult, now: float) -> None:
        done = c.execute(
            "UPDATE turns SET status = ?, result = ?, updated = ? "
            "WHERE turn_id = ? AND session_id = ?",
            (result.status, result_json(result), now, result.turn_id, result.session_id),
        )
        if not done.rowcount:
            raise SessionNotFound(
                f"no turn {result.turn_id!r} in session {result.session_id!r}"
            )
        if result.status != "running":  # the turn ended (or paused): its lease ends with it
            lease = self._load_state(c, result.session_id).running
            if lease is not None and lease.token == result.turn_id:
                self._apply_state(c, result.session_id, _drop_lease)
        self._touch(c, result.session_id, now)

    def _interrupted(self, c: sqlite3.Connection, turn_id: str, now: float) -> None:
        """A turn whose process died: marked failed (its lease ends with the write)."""
        with contextlib.suppress(SessionNotFound):
            turn = self._read_turn(c, turn_id)
            if turn.status == "running":
                failed = turn.model_copy(update={"status": "error", "error": INTERRUPTED})
                self._write_turn(c, failed, now)
                return
        # No such turn, or it ended without releasing: just drop the stale lease.
        row = c.execute("SELECT session_id FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
        if row is not None:
            self._apply_state(c, row["session_id"], _drop_lease)

    def renew_turn(self, session_id: str) -> bool:
        """The running turn's heartbeat: push its lease forward while this process holds it;
        False once it does not."""
        with self._tx() as c:
            lease = self._load_state(c, session_id).running
            if lease is None or lease.pid != os.getpid() or lease.host != host_name():
                return False

            def renew(st: SessionState) -> None:
                assert st.running is not None
                st.running.renewed = time.time()

            self._apply_state(c, session_id, renew)
        return True

    def running_turn(self, session_id: str) -> CheckpointClaim | None:
        """The live lease of the session's running turn, if any (a dead holder's: None)."""
        lease = self.get_state(session_id).running
        return lease if claim_holds(lease) else None

    def recover(self) -> list[str]:
        """After a crash: fail the turns whose process died mid-turn and let checkpoints whose
        resume died wait again. Returns the sessions it repaired; live holders are untouched."""
        rows = self._conn().execute(
            "SELECT session_id FROM state WHERE json_extract(data, '$.running') IS NOT NULL "
            "OR json_extract(data, '$.checkpoint.claim') IS NOT NULL"
        ).fetchall()
        repaired: list[str] = []
        for row in rows:
            sid = row["session_id"]
            with self._tx() as c:
                state = self._load_state(c, sid)
                now = time.time()
                fixed = False
                if state.running is not None and not claim_holds(state.running, now=now):
                    self._interrupted(c, state.running.token, now)
                    fixed = True
                snap = state.checkpoint
                if snap is not None and snap.claim is not None and not claim_holds(
                    snap.claim, now=now
                ):
                    self._put_claim(c, sid, snap, None, "checkpoint", now)
                    fixed = True
            if fixed:
                repaired.append(sid)
        return repaired

    def _set_status(self, c: sqlite3.Connection, turn_id: str, status: TurnStatus,
                    now: float) -> None:
        result = self._read_turn(c, turn_id)
        self._write_turn(c, result.model_copy(update={"status": status}), now)

    # --- state ------------------------------------------------------------------------------
    @staticmethod
    def _load_state(c: sqlite3.Connection, session_id: str) -> SessionState:
        q = "SELECT data FROM state WHERE session_id = ?"
        row = c.execute(q, (session_id,)).fetchone()
        return SessionState.model_validate_json(row["data"]) if row else SessionState()

    def _apply_state(
        self,
        c: sqlite3.Connection,
        session_id: str,
        fn: Callable[[SessionState], SessionState | None],
    ) -> SessionState:
        state = self._load_state(c, session_id)
        new = fn(state)
        state = state if new is None else new
        c.execute(
            "INSERT INTO state (session_id, data, version) VALUES (?, ?, 1) "
            "ON CONFLICT(session_id) DO UPDATE SET data = excluded.data, version = version + 1",
            (session_id, state.model_dump_json()),
        )
        return state

    def get_state(self, session_id: str) -> SessionState:
        c = self._conn()
        self._require(c, session_id)
        return self._load_state(c, session_id)

    def update_state(
        self, session_id: str, fn: Callable[[SessionState], SessionState | None]
    ) -> SessionState:
        """Read-modify-write the state atomically: `fn` mutates the state (or returns a new one).

        `fn` runs while the write lock is held: keep it quick and free of I/O.
        """
        with self._tx() as c:
            self._require(c, session_id)
            state = self._apply_state(c, session_id, fn)
            self._touch(c, session_id, time.time())
        return state

    # --- checkpoints ------------------------------------------------------------------------
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
            snap = state.checkpoint
            if snap is None:
                raise NoPendingCheckpoint(
                    f"session {session_id} has no checkpoint waiting (it may have been "
                    "answered already)"
                )
            if interrupt_id and interrupt_id != snap.interrupt_id:
                raise NoPendingCheckpoint(
                    f"session {session_id} waits at {snap.interrupt_id}, not {interrupt_id}"
                )
            if claim_holds(snap.claim, lease=lease, now=now):
                raise CheckpointClaimed(session_id, snap)
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

def _drop_lease(state: SessionState) -> None:
    state.running = None


def _waiting_status(snap: CheckpointSnapshot) -> TurnStatus:
    """A waiting checkpoint's turn is at `checkpoint`; a failed answer's stays an `error`."""
    return "error" if snap.kind == "answer" else "checkpoint"


def _supersedable(snap: CheckpointSnapshot) -> bool:
    """A failed answer kept for a retry gives way to a new question (unless a retry runs)."""
    return snap.kind == "answer" and not claim_holds(snap.claim)


def _drop_checkpoint(state: SessionState) -> None:
    state.checkpoint = None


def _session(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        title=row["title"],
        created=to_datetime(row["created"]),
        updated=to_datetime(row["updated"]),
        turns=int(row["n"]),
    )


def _turn(row: sqlite3.Row) -> TurnResult:
    return TurnResult.model_validate_json(row["result"]).model_copy(
        update={"created": to_datetime(row["created"]), "updated": to_datetime(row["updated"])}
    )
