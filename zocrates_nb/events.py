"""Typed events of a turn: the one stream every surface (CLI, widget, HTTP) consumes.

A turn yields these in order; it ends with exactly one `Final`, `CheckpointEvent` or `ErrorEvent`.
Every event serialises to a JSON object with a `type` field (the SSE/widget wire format).
`Final` is the turn's `TurnResult` itself (zocrates_nb/turn.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from zocrates_nb.turn import CheckpointInfo, Citation, Source, TrailStep, TurnResult


class _Event(BaseModel):
    session_id: str = ""
    turn_id: str = ""


class TextDelta(_Event):
    """A piece of the answer's markdown, streamed as it is written."""

    type: Literal["text_delta"] = "text_delta"
    text: str


class Thinking(_Event):
    """A piece of a model's thinking, shown collapsed."""

    type: Literal["thinking"] = "thinking"
    role: str = ""
    text: str


class Step(_Event):
    """A visible step: 'Searching the library for …', 'Reading §2 … of …', 'Reranking 23 …'."""

    type: Literal["step"] = "step"
    phase: str  # route | search | read | toc | rerank | synthesize | verify | checkpoint | done
    label: str
    detail: dict[str, Any] = Field(default_factory=dict)


class CheckpointEvent(_Event, CheckpointInfo):
    """The search paused: the researcher may grant a deep-research extension or synthesize now.

    The event envelope around `CheckpointInfo`, which the turn's record keeps while it waits.
    """

    type: Literal["checkpoint"] = "checkpoint"

    @classmethod
    def of(cls, result: TurnResult) -> CheckpointEvent | None:
        """The checkpoint a stored turn waits at, as the event that announced it."""
        if result.checkpoint is None:
            return None
        return cls(
            session_id=result.session_id,
            turn_id=result.turn_id,
            **result.checkpoint.model_dump(),
        )


class Final(TurnResult):
    """The turn's answer: its whole record (sources, citations, evidence, usage…), so the
    stream's last event and what `sessions.db` keeps are the same data."""

    type: Literal["final"] = "final"

    @classmethod
    def of(cls, result: TurnResult) -> Final:
        return cls(**dict(result))

    def result(self) -> TurnResult:
        """The record without the event's `type`."""
        return TurnResult(**{k: v for k, v in self if k != "type"})


class ErrorEvent(_Event):
    """The turn failed (dead endpoint, bad config…); the session stays usable."""

    type: Literal["error"] = "error"
    message: str
    retryable: bool = True
    # The search was kept but its answer failed: resume this id with `synthesize` to write the
    # answer again without searching again ("Retry answer").
    retry_id: str | None = None


Event = Annotated[
    TextDelta | Thinking | Step | CheckpointEvent | Final | ErrorEvent, Field(discriminator="type")
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def event_from_json(data: dict[str, Any]) -> Event:
    return EVENT_ADAPTER.validate_python(data)


__all__ = [
    "EVENT_ADAPTER",
    "CheckpointEvent",
    "Citation",
    "ErrorEvent",
    "Event",
    "Final",
    "Source",
    "Step",
    "TextDelta",
    "Thinking",
    "event_from_json",
]


@dataclass
class StepTimer:
    """A turn's visible steps as its `Step` events arrive, each timed up to the next one (the
    last up to now): the one clock behind a turn's stored trail and the panel's live one."""

    steps: list[TrailStep] = field(default_factory=list)
    since: float = field(default_factory=time.monotonic)  # when the last step began

    def add(self, step: Step) -> None:
        now = time.monotonic()
        self._close(now)
        self.since = now
        if step.phase != "done":
            self.steps.append(TrailStep(phase=step.phase, label=step.label, detail=step.detail))

    def trail(self) -> list[TrailStep]:
        """The steps so far, the last one timed up to now."""
        self._close(time.monotonic())
        return list(self.steps)

    def _close(self, now: float) -> None:
        if self.steps and self.steps[-1].seconds is None:
            self.steps[-1].seconds = round(now - self.since, 3)
