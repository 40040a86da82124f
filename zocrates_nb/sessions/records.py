"""Typed rows of `sessions.db`, as the store hands them out (a turn is a `turn.TurnResult`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from pydantic_ai.messages import ModelMessage

from zocrates_nb.turn import TURN_STATUSES, TurnStatus

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
class MessageBlock:
    """Coordinator messages appended together (one turn's run, or one compaction summary)."""

    seq: int
    turn_id: str | None
    kind: Literal["turn", "summary"]
    messages: list[ModelMessage]


__all__ = [
    "COMPLETED_STATUSES",
    "TURN_STATUSES",
    "MessageBlock",
    "SessionRecord",
    "TurnStatus",
    "make_title",
    "to_datetime",
]
