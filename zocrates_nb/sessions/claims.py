"""Whether a checkpoint claim still holds: its process is alive and its lease is fresh.

A resume claims its checkpoint in `sessions.db` so two processes (the notebook kernel, the
Jupyter server, a CLI) cannot continue the same search twice. A crash must never lock a session,
so a claim lapses when its process is gone (same host: the pid no longer runs, or now names
another process) or when its holder stopped renewing it for a whole lease (any host).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from functools import cache

from zocrates_nb.sessions.state import CheckpointClaim

LEASE_SECONDS = 30 * 60.0  # a claim not renewed for this long can be taken over
RENEW_SECONDS = 5 * 60.0  # how often a running resume renews its claim


@cache
def host_name() -> str:
    return socket.gethostname()


def process_started(pid: int) -> float | None:
    """The process's start time in clock ticks since boot (Linux), or None where unknown.

    Compared with the value recorded at claim time, it tells a reused pid apart.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()  # the name may hold spaces and parentheses
    try:
        return float(fields[19])  # field 22 of proc(5); fields[0] is field 3 (state)
    except (IndexError, ValueError):
        return None


def _zombie(pid: int) -> bool:
    """A killed process its parent has not reaped yet: gone, though its pid still answers."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode("ascii", "replace")
    except OSError:
        return False
    state = stat[stat.rfind(")") + 2 :][:1]
    return state in ("Z", "X")


def new_claim(token: str | None = None) -> CheckpointClaim:
    """A claim for this process, with `token` or a fresh one."""
    pid = os.getpid()
    return CheckpointClaim(
        token=token or uuid.uuid4().hex, pid=pid, host=host_name(), started=process_started(pid)
    )


def process_alive(pid: int, started: float | None = None) -> bool:
    """Whether `pid` still runs on this host (and is the process that started at `started`)."""
    if os.name == "nt":  # os.kill(pid, 0) would terminate the process there: trust the lease
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by another user
    except OSError:
        return False
    if _zombie(pid):
        return False
    if started is not None:
        now_started = process_started(pid)
        if now_started is not None and now_started != started:
            return False  # the pid was reused
    return True


def claim_holds(
    claim: CheckpointClaim | None, *, lease: float = LEASE_SECONDS, now: float | None = None
) -> bool:
    """True while a claim blocks other resumes: renewed within the lease, and — on this
    host — its process still alive."""
    if claim is None:
        return False
    now = time.time() if now is None else now
    if now - claim.renewed > lease:
        return False
    if claim.host == host_name():
        return process_alive(claim.pid, claim.started)
    return True


def describe_claim(claim: CheckpointClaim) -> str:
    """'pid 123 on host x since 12:03:04 UTC' for error messages."""
    since = time.strftime("%H:%M:%S UTC", time.gmtime(claim.claimed))
    return f"pid {claim.pid} on host {claim.host} since {since}"
