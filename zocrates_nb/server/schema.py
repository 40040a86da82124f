"""Request and response bodies of the HTTP API.

The same pydantic models validate requests (strictly: JSON types as written, no unknown keys) and
generate the OpenAPI document, so the published schema and the server cannot drift apart. A
question's options are `AskOptions` itself and a turn is `TurnResult` itself (zocrates_nb/turn.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from zocrates_nb.app import SaveResult
from zocrates_nb.errors import explain
from zocrates_nb.events import CheckpointEvent
from zocrates_nb.turn import AskOptions, Candidate, Discovery, SessionSummary, TurnResult, TurnView

Action = Literal["extend_budget", "synthesize"]

_STRICT = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")
# python-re: the same regex dialect as JSON-Schema tools written in Python (hypothesis).


class ChatRequest(AskOptions):
    """A new question, in a new session unless `session_id` names one, with its options."""

    model_config = _STRICT

    prompt: str = Field(min_length=1, pattern=r"\S", description="The question or message.")
    session_id: str | None = Field(None, description="Continue this session (default: a new one).")

    def options(self) -> AskOptions:
        return AskOptions.of(self)


class ResumeRequest(BaseModel):
    """The researcher's decision at a checkpoint."""

    model_config = _STRICT

    session_id: str
    interrupt_id: str = Field(description="The `interrupt_id` of the pending checkpoint.")
    action: Action
    guidance: str = Field("", description="Optional steering for an extension.")


class CancelReply(BaseModel):
    """A stop accepted: the turn ends as cancelled (its stream ends with that error event)."""

    session_id: str
    turn_id: str | None = Field(None, description="The turn stopped (null: not started yet).")
    cancelled: bool = True


class ErrorReply(BaseModel):
    """Jupyter's API error body."""

    message: str
    reason: str | None = None


class SessionList(BaseModel):
    sessions: list[SessionSummary]


class SessionDetail(BaseModel):
    """A session ready for display: its turns and chat bubbles, and the checkpoint awaiting a
    decision (so a reloaded client shows the checkpoint card again)."""

    session_id: str
    title: str
    created: datetime
    updated: datetime
    turns: list[TurnView]
    messages: list[dict[str, Any]] = Field(description="The turns as chat bubbles, in order.")
    pending_checkpoint: CheckpointEvent | None = Field(
        None, description="The pending `CheckpointEvent` (with `interrupt_id`), or null."
    )

    def summary(self) -> SessionSummary:
        return SessionSummary(
            session_id=self.session_id,
            title=self.title,
            turns=len(self.turns),
            created=self.created,
            updated=self.updated,
            pending_checkpoint=self.pending_checkpoint.interrupt_id
            if self.pending_checkpoint
            else None,
        )


class DiscoverRequest(BaseModel):
    """Papers beyond the library (only when `online.enabled`; otherwise 400 saying how)."""

    model_config = _STRICT

    query: str = Field(min_length=1, pattern=r"\S", description="What to look for.")
    limit: int = Field(10, ge=1, le=100)
    session_id: str | None = Field(None, description="The session's list (default: the home's).")


class StageRequest(BaseModel):
    """Candidate ids (from a discover run of the same list) to stage or to take off the list."""

    model_config = _STRICT

    ids: list[str] = Field(min_length=1)
    session_id: str | None = None


class SaveRequest(BaseModel):
    """Save the staging list: nothing is written unless `confirmed` is true."""

    model_config = _STRICT

    to: Literal["connector", "web", "ris", "bibtex"]
    confirmed: bool = False
    session_id: str | None = None
    collection: str | None = Field(None, description="web: a collection key for the items.")


class NoteRequest(BaseModel):
    """Save an answer as a Zotero note: nothing is written unless `confirmed` is true."""

    model_config = _STRICT

    session_id: str
    turn_id: str | None = Field(None, description="Default: the last answered turn.")
    to: Literal["connector", "web"]
    confirmed: bool = False
    collection: str | None = Field(None, description="web: a collection key (standalone note).")
    tag_cited: bool = Field(False, description="web: also tag the cited items zocrates:cited.")


class StagingList(BaseModel):
    staged: list[Candidate]


class SaveReply(BaseModel):
    result: SaveResult
    text: str | None = Field(None, description="ris/bibtex: the exported file's text.")


__all__ = [
    "Action",
    "ChatRequest",
    "DiscoverRequest",
    "Discovery",
    "ErrorReply",
    "NoteRequest",
    "ResumeRequest",
    "SaveReply",
    "SaveRequest",
    "SessionDetail",
    "SessionList",
    "SessionSummary",
    "StageRequest",
    "StagingList",
    "TurnResult",
    "explain",
]
