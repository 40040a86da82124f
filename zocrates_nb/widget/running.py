"""What the panel keeps while a turn runs: the live turn, the models' warm-up, the event loop.

A turn runs as a background task on the kernel's event loop (or, outside one, on a private loop
thread), so the notebook stays usable while it streams. The live turn is what a view that opens
mid-turn is shown; the warm-up loads an App's models while the researcher types.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zocrates_nb.events import Event, Final, Step, StepTimer, TextDelta, Thinking
from zocrates_nb.turn import TurnView

if TYPE_CHECKING:
    from zocrates_nb.app import App


@dataclass
class LiveTurn:
    """What the kernel knows of the turn it is running, for views that open mid-turn."""

    prompt: str
    session_id: str
    turn_id: str = ""
    answer: str = ""
    thinking: str = ""
    steps: StepTimer = field(default_factory=StepTimer)
    started: float = field(default_factory=time.monotonic)

    def apply(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self.answer += event.text
        elif isinstance(event, Thinking):
            self.thinking += event.text
        elif isinstance(event, Step):
            self.steps.add(event)
        elif isinstance(event, Final):
            self.answer = event.answer

    def view(self, stored: TurnView | None = None) -> TurnView:
        """The running turn: its stored view (sources, checkpoint so far) with what streamed."""
        base = stored or TurnView(turn_id=self.turn_id, session_id=self.session_id)
        return base.model_copy(update={
            "prompt": base.prompt or self.prompt, "answer": self.answer, "status": "running",
            "steps": [s.model_copy() for s in self.steps.steps], "thinking": self.thinking,
            "seconds": round(time.monotonic() - self.started, 1)})  # fmt: skip


@dataclass
class WarmUp:
    """The models of one App loading in a background thread (once per App and process)."""

    done: threading.Event = field(default_factory=threading.Event)
    stage: str = ""  # what is loading now
    seconds: float = 0.0


_WARM_UPS: weakref.WeakKeyDictionary[App, WarmUp] = weakref.WeakKeyDictionary()
_WARM_LOCK = threading.Lock()


def start_warm_up(app: App) -> WarmUp:
    """Start loading `app`'s models in a daemon thread (or return the load already started)."""
    with _WARM_LOCK:
        warm = _WARM_UPS.get(app)
        if warm is None:
            warm = _WARM_UPS[app] = WarmUp()
            threading.Thread(
                target=_warm, args=(app, warm), name="zocrates-warm-up", daemon=True
            ).start()
    return warm


def _warm(app: App, warm: WarmUp) -> None:
    t0 = time.monotonic()

    def progress(stage: str) -> None:
        warm.stage = stage

    try:
        app.warm_up(progress)
    finally:  # a failure is the turn's to report (it loads the models itself then)
        warm.seconds = time.monotonic() - t0
        warm.done.set()


def running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


_BACKGROUND: asyncio.AbstractEventLoop | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """One daemon thread with an event loop, for hosts without a running loop."""
    global _BACKGROUND
    if _BACKGROUND is None or _BACKGROUND.is_closed():
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="zocrates-chat", daemon=True).start()
        _BACKGROUND = loop
    return _BACKGROUND
