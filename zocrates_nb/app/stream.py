"""A turn as an async stream of events.

The turn runs as a task that puts its events on a queue; the stream ends when the task does.
Setting `cancel`, or closing the stream early, cancels the task (which reports its own end).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from zocrates_nb.events import Event

EventQueue = asyncio.Queue[Event | None]


async def event_stream(
    run: Callable[[EventQueue], Coroutine[Any, Any, None]], cancel: asyncio.Event | None = None
) -> AsyncIterator[Event]:
    queue: EventQueue = asyncio.Queue()
    task = asyncio.create_task(run(queue))
    task.add_done_callback(lambda _: queue.put_nowait(None))  # the end, however it came
    stopper = asyncio.create_task(_cancel_when(cancel, task)) if cancel is not None else None
    try:
        while (event := await queue.get()) is not None:
            yield event
    finally:
        if stopper is not None:
            stopper.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task


async def _cancel_when(cancel: asyncio.Event, task: asyncio.Task[None]) -> None:
    await cancel.wait()
    task.cancel()
