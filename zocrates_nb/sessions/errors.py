"""What the session store refuses with: no such session, a checkpoint waiting or claimed, a
busy session. Surfaces map each to its answer (most to HTTP 409)."""

from __future__ import annotations

import os

from zocrates_nb.errors import ZocratesError
from zocrates_nb.sessions.claims import describe_claim, host_name
from zocrates_nb.sessions.state import CheckpointClaim, CheckpointSnapshot


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


class WrongCheckpoint(NoPendingCheckpoint):
    """A resume named another checkpoint than the one waiting (a stale card, a retried request).

    Surfaces map it to a bad request (HTTP 400): the caller's id is wrong, not the session.
    """

    def __init__(self, session_id: str, snapshot: CheckpointSnapshot, asked: str) -> None:
        self.session_id = session_id
        self.interrupt_id = snapshot.interrupt_id
        super().__init__(
            f"interrupt_id {asked!r} is not the checkpoint waiting in session {session_id} "
            f"({snapshot.interrupt_id})"
        )


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
