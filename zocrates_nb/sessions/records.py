"""Typed rows of `sessions.db`, as the store hands them out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic_ai.messages import ModelMessage

TurnStatus = Literal["running", "answered", "checkpoint", "error", "cancelled"]
TURN_STATUSES: tuple[TurnStatus, ...] = ("running", "answered", "checkpoint", "error", "cancelled")
COMPLETED_STATUSES: frozenset[str] = frozenset({"answered", "error", "cancelled"})
TITLE_CHARS = 80


def to_datetime(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def make_title(prompt: str) -> str:
    """A session title from its first question: one line, at most TITLE_CHARS characters."""
    text = " ".join(prompt.split())
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1].rstrip() + "…"


@dataclass(frozen=True)
class SessionRecord:
    id: str
    title: str
    created: datetime
    updated: datetime
    turns: int = 0


@dataclass(frozen=True)
class TurnRecord:
    """One question and what became of it.

    `payload` conventions (set by the agent layer, read by `history`): `cited_sources`,
    `other_sources`, `citations`, `evidence`, `checkpoint` (the CheckpointEvent payload),
    `usage`, `timings`, `error`, `model`.
    """

    turn_id: str
    session_id: str
    index: int
    prompt: str
    scope: dict[str, Any]
    status: TurnStatus
    answer: str
    payload: dict[str, Any]
    created: datetime
    updated: datetime


@dataclass(frozen=True)
class HistoryTurn:
    """A turn ready for display: the user's prompt and the assistant's side of it."""

    turn_id: str
    index: int
    prompt: str
    status: TurnStatus
    answer: str
    cited_sources: list[dict[str, Any]] = field(default_factory=list)
    other_sources: list[dict[str, Any]] = field(default_factory=list)
    citations: list[dict[str, Any]] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None  # set only while this turn's checkpoint is pending
    error: str | None = None
    scope: dict[str, Any] = field(default_factory=dict)
    created: datetime | None = None

    def as_messages(self) -> list[dict[str, Any]]:
        """Chat bubbles: a user message, then the assistant's (when there is one)."""
        out: list[dict[str, Any]] = [{"role": "user", "text": self.prompt, "turn_id": self.turn_id}]
        if self.answer or self.status != "running":
            out.append(
                {
                    "role": "assistant",
                    "text": self.answer,
                    "turn_id": self.turn_id,
                    "status": self.status,
                    "cited_sources": self.cited_sources,
                    "other_sources": self.other_sources,
                    "citations": self.citations,
                    "checkpoint": self.checkpoint,
                    "error": self.error,
                }
            )
        return out


@dataclass(frozen=True)
class MessageBlock:
    """Coordinator messages appended together (one turn's run, or one compaction summary)."""

    seq: int
    turn_id: str | None
    kind: Literal["turn", "summary"]
    messages: list[ModelMessage]
