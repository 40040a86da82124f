"""Request and response bodies of the HTTP API.

The same pydantic models validate requests (strictly: JSON types as written, no unknown keys) and
generate the OpenAPI document, so the published schema and the server cannot drift apart.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from zocrates_nb.sessions.records import HistoryTurn, TurnStatus

Action = Literal["extend_budget", "synthesize"]


class _Body(BaseModel):
    # python-re: the same regex dialect as JSON-Schema tools written in Python (hypothesis).
    model_config = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")


class ChatRequest(_Body):
    """A new question, in a new session unless `session_id` names one."""

    prompt: str = Field(min_length=1, pattern=r"\S", description="The question or message.")
    session_id: str | None = Field(None, description="Continue this session (default: a new one).")
    items: list[str] | None = Field(None, description="Zotero item or attachment keys in scope.")
    collections: list[str] | None = Field(None, description="Collection names or keys in scope.")
    model: str | None = Field(
        None, min_length=1, description="A model string for this turn (default: the config's)."
    )
    hitl: bool = Field(True, description="Pause at deep-research checkpoints (false: never).")
    budget: int | None = Field(
        None, ge=1, le=100, description="Retrieval tool calls for this turn's search run."
    )
    word_ceiling: int | None = Field(
        None, ge=100, le=200_000, description="Evidence words for this turn's search run."
    )


class ResumeRequest(_Body):
    """The researcher's decision at a checkpoint."""

    session_id: str
    interrupt_id: str = Field(description="The `interrupt_id` of the pending checkpoint.")
    action: Action
    guidance: str = Field("", description="Optional steering for an extension.")


class ErrorReply(BaseModel):
    """Jupyter's API error body."""

    message: str
    reason: str | None = None


class SessionSummary(BaseModel):
    session_id: str
    title: str
    turns: int
    created: datetime
    updated: datetime
    pending_checkpoint: str | None = Field(
        None, description="The interrupt id of the checkpoint awaiting a decision, if any."
    )


class SessionList(BaseModel):
    sessions: list[SessionSummary]


class SessionDetail(BaseModel):
    """A session ready for display: its turns and chat bubbles, and the checkpoint awaiting a
    decision (so a reloaded client shows the checkpoint card again)."""

    session_id: str
    title: str
    created: datetime
    updated: datetime
    turns: list[HistoryTurn]
    messages: list[dict[str, Any]] = Field(description="The turns as chat bubbles, in order.")
    pending_checkpoint: dict[str, Any] | None = Field(
        None, description="The pending `CheckpointEvent` (with `interrupt_id`), or null."
    )


class TurnDetail(BaseModel):
    """One turn as stored: answer, sources, the evidence with its text and support, usage."""

    model_config = ConfigDict(extra="allow")

    turn_id: str
    session_id: str
    index: int
    prompt: str
    status: TurnStatus
    answer: str
    evidence: list[dict[str, Any]] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    checkpoint: dict[str, Any] | None = None


def explain(err: ValidationError) -> str:
    """A one-line message naming each bad field."""
    parts = []
    for e in err.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"]) or "body"
        parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


__all__ = [
    "Action",
    "ChatRequest",
    "ErrorReply",
    "HistoryTurn",
    "ResumeRequest",
    "SessionDetail",
    "SessionList",
    "SessionSummary",
    "TurnDetail",
    "TurnStatus",
    "explain",
]
