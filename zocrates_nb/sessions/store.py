"""`sessions.db`: sessions, coordinator messages, turns and per-session state in one SQLite file.

`SessionStore` is the one object callers use: this module holds the sessions, messages and turns;
`checkpoints` the paused turns and their claims; `database` the connections and shared rows.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from zocrates_nb.sessions.checkpoints import CheckpointStore, drop_checkpoint, refuse_new_turn
from zocrates_nb.sessions.claims import claim_holds, host_name, new_claim
from zocrates_nb.sessions.database import DB_FILE, session_record, turn_record
from zocrates_nb.sessions.errors import SessionNotFound
from zocrates_nb.sessions.migrations import result_json
from zocrates_nb.sessions.records import TURN_STATUSES, MessageBlock, SessionRecord, make_title
from zocrates_nb.sessions.state import SessionState
from zocrates_nb.turn import AskOptions, TurnResult


class SessionStore(CheckpointStore):
    """The session store. One instance per process is enough; it is safe across threads."""

    @classmethod
    def open(cls, home: str | Path) -> SessionStore:
        """The store of a data home (`<home>/sessions.db`)."""
        return cls(Path(home) / DB_FILE)

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
        return session_record(row)

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
        return [session_record(r) for r in rows]

    def rename_session(self, session_id: str, title: str) -> None:
        with self._tx() as c:
            self._require(c, session_id)
            c.execute("UPDATE sessions SET title = ? WHERE id = ?", (make_title(title), session_id))

    def delete_session(self, session_id: str) -> None:
        with self._tx() as c:
            c.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

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
            refuse_new_turn(session_id, state, now)
            if state.checkpoint is not None:  # a failed answer kept for a retry gives way
                self._apply_state(c, session_id, drop_checkpoint)
            if state.running is not None:  # its holder died
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
        return [turn_record(r) for r in self._conn().execute(q, (session_id,)).fetchall()]

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

    def recover(self) -> list[str]:
        """After a crash: fail the turns whose process died mid-turn and let checkpoints whose
        resume died wait again. Returns the sessions it repaired; live holders are untouched."""
        rows = (
            self._conn()
            .execute(
                "SELECT session_id FROM state WHERE json_extract(data, '$.running') IS NOT NULL "
                "OR json_extract(data, '$.checkpoint.claim') IS NOT NULL"
            )
            .fetchall()
        )
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
                if (
                    snap is not None
                    and snap.claim is not None
                    and not claim_holds(snap.claim, now=now)
                ):
                    self._put_claim(c, sid, snap, None, "checkpoint", now)
                    fixed = True
            if fixed:
                repaired.append(sid)
        return repaired

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
