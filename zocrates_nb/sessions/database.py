"""The session database's core: per-thread connections, transactions, and the turn and state
rows every part of the store reads and writes.

Safe for several processes at once (a kernel and a CLI, two kernels): WAL journal, a busy
timeout, short transactions, and `BEGIN IMMEDIATE` wherever a value is read and then written, so
two writers serialise instead of overwriting each other.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from zocrates_nb.index.lexical import set_wal
from zocrates_nb.sessions.errors import SessionNotFound
from zocrates_nb.sessions.migrations import migrate, result_json
from zocrates_nb.sessions.records import SessionRecord, TurnStatus, to_datetime
from zocrates_nb.sessions.state import SessionState
from zocrates_nb.turn import TurnResult

DB_FILE = "sessions.db"
INTERRUPTED = "The turn was interrupted: the process running it ended before it finished."


class Database:
    """One `sessions.db`: its connections (one per thread and process) and the rows shared by
    the store's parts (a turn's record, a session's state)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        path = Path(path)
        self.path = path / DB_FILE if path.is_dir() else path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._timeout = timeout
        self._local = threading.local()
        conn = self._conn()
        set_wal(conn)  # two processes making a new home race for it
        self.schema_version = migrate(self._tx, self.path)

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

    @staticmethod
    def _require(c: sqlite3.Connection, session_id: str) -> None:
        if c.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is None:
            raise SessionNotFound(f"no session {session_id!r}")

    @staticmethod
    def _touch(c: sqlite3.Connection, session_id: str, now: float) -> None:
        c.execute("UPDATE sessions SET updated = ? WHERE id = ?", (now, session_id))

    @staticmethod
    def _read_turn(c: sqlite3.Connection, turn_id: str) -> TurnResult:
        row = c.execute("SELECT * FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
        if row is None:
            raise SessionNotFound(f"no turn {turn_id!r}")
        return turn_record(row)

    def _write_turn(self, c: sqlite3.Connection, result: TurnResult, now: float) -> None:
        done = c.execute(
            "UPDATE turns SET status = ?, result = ?, updated = ? "
            "WHERE turn_id = ? AND session_id = ?",
            (result.status, result_json(result), now, result.turn_id, result.session_id),
        )
        if not done.rowcount:
            raise SessionNotFound(f"no turn {result.turn_id!r} in session {result.session_id!r}")
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

    def _set_status(
        self, c: sqlite3.Connection, turn_id: str, status: TurnStatus, now: float
    ) -> None:
        result = self._read_turn(c, turn_id)
        self._write_turn(c, result.model_copy(update={"status": status}), now)

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


def _drop_lease(state: SessionState) -> None:
    state.running = None


def session_record(row: sqlite3.Row) -> SessionRecord:
    return SessionRecord(
        id=row["id"],
        title=row["title"],
        created=to_datetime(row["created"]),
        updated=to_datetime(row["updated"]),
        turns=int(row["n"]),
    )


def turn_record(row: sqlite3.Row) -> TurnResult:
    return TurnResult.model_validate_json(row["result"]).model_copy(
        update={"created": to_datetime(row["created"]), "updated": to_datetime(row["updated"])}
    )
