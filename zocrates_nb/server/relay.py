"""A turn that outlives its HTTP request, and the few a server runs at once.

Each turn runs as its own asyncio task that drains the App's event stream to the end (so the
answer or checkpoint is saved in the session store), buffering events for whichever handler is
listening. A client that disconnects only stops the forwarding, never the turn; a cancel request
(or the server's shutdown) sets the turn's cancel event, and the turn ends as cancelled, saved.

At most `limits.concurrent_turns` run at once: a slot is taken before any work, on the event
loop (nothing can interleave between the count and the taking), and a request over the limit is
refused with 429 and a Retry-After, so the light endpoints stay instant under load.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from tornado import web

from zocrates_nb.events import Event

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


@dataclass(frozen=True)
class Begun:
    """The turn holds its session (or checkpoint): nothing can refuse it any more."""

    session_id: str
    turn_id: str


Item = Event | Begun | BaseException | None  # None marks the end of the stream
Opener = Callable[[asyncio.Event, Callable[[str, str], None]], AsyncIterator[Event]]


class ServerBusy(web.HTTPError):
    """Too many turns running on this server: 429 with a Retry-After (see `write_error`)."""

    def __init__(self, running: int) -> None:
        super().__init__(
            429,
            f"this server is answering {running} questions already (limits.concurrent_turns); "
            f"try again in a few seconds",
            reason="Too Many Requests",
        )
        self.retry_after = RETRY_AFTER_SECONDS


class TurnRun:
    """One running turn. `next()` hands out its events in order, then an exception (the stream
    failed) or None (it ended). `session_id` is known from its first event."""

    def __init__(self, open_stream: Opener) -> None:
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self.cancel = asyncio.Event()
        self.session_id: str | None = None
        self.turn_id: str | None = None
        self.task: asyncio.Task[None] = asyncio.create_task(self._drain(open_stream))

    def _begun(self, session_id: str, turn_id: str) -> None:
        self.session_id, self.turn_id = session_id, turn_id
        self._queue.put_nowait(Begun(session_id, turn_id))

    async def _drain(self, open_stream: Opener) -> None:
        try:
            async for event in open_stream(self.cancel, self._begun):
                self._queue.put_nowait(event)
        except Exception as e:
            self._queue.put_nowait(e)
        finally:
            self._queue.put_nowait(None)

    async def next(self, timeout: float | None = None) -> Item:
        """The next event; raises TimeoutError when none arrives within `timeout` seconds."""
        return await asyncio.wait_for(self._queue.get(), timeout)

    @property
    def done(self) -> bool:
        return self.task.done()


class TurnRegistry:
    """The turns running on this server: counted, cancellable, awaited at shutdown."""

    def __init__(self) -> None:
        self._runs: set[TurnRun] = set()
        self._reserved = 0

    def reserve(self, limit: int) -> None:
        """Take a slot for a turn about to start, or refuse (429). Synchronous on purpose:
        between the count and the taking no other request can run."""
        if len(self._runs) + self._reserved >= limit:
            raise ServerBusy(len(self._runs) + self._reserved)
        self._reserved += 1

    def release(self) -> None:
        """Give back a slot whose turn never started (its request was refused meanwhile)."""
        self._reserved = max(self._reserved - 1, 0)

    def start(self, open_stream: Opener) -> TurnRun:
        """Start a turn in a slot taken by `reserve`."""
        self.release()
        run = TurnRun(open_stream)
        self._runs.add(run)
        run.task.add_done_callback(lambda _t: self._runs.discard(run))
        return run

    @property
    def running(self) -> int:
        return len(self._runs)

    def cancel(self, session_id: str) -> TurnRun | None:
        """Stop the turn running in a session (it ends as cancelled, saved); None if none."""
        for run in self._runs:
            if run.session_id == session_id and not run.done:
                run.cancel.set()
                return run
        return None

    async def drain(self, grace: float) -> None:
        """Let running turns finish for `grace` seconds, then cancel the rest (each ends as
        cancelled and saves itself); a turn still there after that is stopped outright."""
        tasks = [r.task for r in self._runs]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=grace)
        if not pending:
            return
        log.warning("zocrates: cancelling %d turn(s) still running at shutdown", len(pending))
        for run in list(self._runs):
            run.cancel.set()
        _done, pending = await asyncio.wait(pending, timeout=10)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
