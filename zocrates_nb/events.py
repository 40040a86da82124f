"""Typed events of a turn: the one stream every surface (CLI, widget, HTTP) consumes.

A turn yields these in order; it ends with exactly one `Final`, `CheckpointEvent` or `ErrorEvent`.
Every event serialises to a JSON object with a `type` field (the SSE/widget wire format).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter


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


class Source(BaseModel):
    """One paper in the Sources block (tier 'cited' or 'other')."""

    n: int | None = None  # its first citation number when cited
    numbers: list[int] = Field(default_factory=list)  # every [n] that cites this paper
    item_key: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    tier: Literal["cited", "other"] = "other"


class Citation(BaseModel):
    """What a `[n]` marker points at (for popovers)."""

    n: int
    chunk_id: str
    item_key: str
    title: str
    authors: list[str] = Field(default_factory=list)
    year: int | None = None
    section: str = ""
    page: int | None = None
    text: str = ""
    support: float | None = None  # verification support probability


class CheckpointEvent(_Event):
    """The search paused: the researcher may grant a deep-research extension or synthesize now."""

    type: Literal["checkpoint"] = "checkpoint"
    interrupt_id: str
    extension: int  # the extension this would grant: 1 or 2
    max_extensions: int = 2
    calls_used: int
    budget: int
    words_used: int
    word_ceiling: int
    covered_summary: str = ""
    missing_aspects: list[str] = Field(default_factory=list)
    cost_usd: float | None = None


class Final(_Event):
    """The turn's answer with its sources and citations."""

    type: Literal["final"] = "final"
    answer: str
    cited_sources: list[Source] = Field(default_factory=list)
    other_sources: list[Source] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    seconds: float = 0.0
    model: str = ""  # which model answered ("embedded offline engine (no language model)" …)


class ErrorEvent(_Event):
    """The turn failed (dead endpoint, bad config…); the session stays usable."""

    type: Literal["error"] = "error"
    message: str
    retryable: bool = True


Event = Annotated[
    TextDelta | Thinking | Step | CheckpointEvent | Final | ErrorEvent, Field(discriminator="type")
]
EVENT_ADAPTER: TypeAdapter[Event] = TypeAdapter(Event)


def event_from_json(data: dict[str, Any]) -> Event:
    return EVENT_ADAPTER.validate_python(data)
