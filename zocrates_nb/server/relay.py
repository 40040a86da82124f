"""A turn that outlives its HTTP request.

Each turn runs as its own asyncio task that drains the App's event stream to the end (so the
answer or checkpoint is saved in the session store), buffering events for whichever handler is
listening. A client that disconnects only stops the forwarding, never the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable

from zocrates_nb.events import Event

log = logging.getLogger(__name__)

Item = Event | BaseException | None  # None marks the end of the stream


class TurnRun:
    """One running turn. `next()` hands out its events in order, then an exception (the stream
    failed) or None (it ended)."""

    def __init__(self, open_stream: Callable[[], AsyncIterator[Event]]) -> None:
        self._queue: asyncio.Queue[Item] = asyncio.Queue()
        self.task: asyncio.Task[None] = asyncio.create_task(self._drain(open_stream))

    async def _drain(self, open_stream: Callable[[], AsyncIterator[Event]]) -> None:
        try:
            async for event in open_stream():
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
    """Holds running turns so they are not garbage-collected and can be awaited at shutdown."""

    def __init__(self) -> None:
        self._runs: set[TurnRun] = set()

    def start(self, open_stream: Callable[[], AsyncIterator[Event]]) -> TurnRun:
        run = TurnRun(open_stream)
        self._runs.add(run)
        run.task.add_done_callback(lambda _t: self._runs.discard(run))
        return run

    @property
    def running(self) -> int:
        return len(self._runs)

    async def drain(self, timeout: float) -> None:
        """Let running turns finish (they save themselves); cancel what is left after `timeout`."""
        tasks = [r.task for r in self._runs]
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            log.warning("zocrates: cancelling a turn still running at shutdown")
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=5)
