"""The per-session state document: one JSON object per session, read-modified-written atomically.

It holds what outlives a turn but is not conversation: the active scope, the audit trail of the
last turns, a paused checkpoint's snapshot, cached document outlines, the research profile and the
compaction summary. Unknown keys in a stored document are ignored, so older and newer versions of
the program can share a `sessions.db`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from zocrates_nb.retrieval.state import CompletionReport
from zocrates_nb.turn import Scope

MAX_AUDIT_TURNS = 5
MAX_CACHED_OUTLINES = 10


class _Doc(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ActiveItem(_Doc):
    """A selected Zotero item as the agents present it (children: attachments and notes)."""

    item_key: str
    title: str = ""
    children: list[dict[str, Any]] = Field(default_factory=list)


class AuditRecord(_Doc):
    """What one turn's search was about and what it concluded, for the next turn's continuity
    (kept for the last MAX_AUDIT_TURNS turns). What it found, cited and cost is in the turn's
    `TurnResult`."""

    turn_id: str
    user_query: str = ""
    search_goal: str = ""
    active_items: list[ActiveItem] = Field(default_factory=list)
    scope: Scope = Field(default_factory=Scope)
    report: CompletionReport | None = None  # what the search concluded

    @field_validator("report", mode="before")
    @classmethod
    def _no_report(cls, value: Any) -> Any:
        return value or None  # earlier versions stored a turn without one as {}
    created: float = Field(default_factory=time.time)
    updated: float = Field(default_factory=time.time)


class CheckpointClaim(_Doc):
    """Who is resuming a checkpoint (or running a session's turn): one process on one host,
    holding a token (random for a resume, the turn id for a running turn).

    `started` (the process's start time, where the OS tells it) tells a reused pid apart from
    the process that claimed; `renewed` is the holder's last heartbeat, which the lease counts
    from.
    """

    token: str
    pid: int
    host: str
    started: float | None = None
    claimed: float = Field(default_factory=time.time)
    renewed: float = Field(default_factory=time.time)


class CheckpointSnapshot(_Doc):
    """A paused search run: everything needed to continue it after a restart.

    `claim` is set while a resume runs (see `SessionStore.claim_checkpoint`); a new snapshot
    starts unclaimed.
    """

    interrupt_id: str
    turn_id: str
    # "checkpoint": a paused search; "answer": a search whose answer failed to be written, kept
    # so `synthesize` can write it again without searching (a new question drops it).
    kind: Literal["checkpoint", "answer"] = "checkpoint"
    payload: dict[str, Any] = Field(default_factory=dict)  # run state, opaque to the store
    created: float = Field(default_factory=time.time)
    claim: CheckpointClaim | None = None


class CachedOutline(_Doc):
    """A compact document outline, reachable under every key it was stored with.

    One document may be known by its parent item key and its attachment key; both name this one
    entry, and it counts once towards the cache bound.
    """

    keys: list[str]
    outline: str
    title: str = ""
    touched: float = Field(default_factory=time.time)


class CompactedTurn(_Doc):
    """One compacted turn as the summary keeps it: its question as asked, its answer's gist."""

    question: str
    answer: str = ""  # the gist of its answer ("" when it had none)


class CompactionInfo(_Doc):
    """The rolling summary that replaced the oldest coordinator messages, and one record per
    turn it covers (what its text is rendered from, whatever a model summarizer wrote)."""

    summary: str
    turns: list[CompactedTurn] = Field(default_factory=list)
    compacted_turns: int = 0  # how many turns the summary covers in total
    through_turn_index: int = 0  # the last turn index it covers
    times: int = 1  # how many compactions rolled into it
    updated: float = Field(default_factory=time.time)


class SessionState(_Doc):
    """The session-persistent state. Mutate it inside `SessionStore.update_state`."""

    active_items: list[ActiveItem] = Field(default_factory=list)
    scope: Scope = Field(default_factory=Scope)
    audit: list[AuditRecord] = Field(default_factory=list)
    checkpoint: CheckpointSnapshot | None = None
    # The turn running now, leased to one process (token: its turn id): one turn per session at
    # a time, across processes; a dead holder's lease is taken over (see `claims.claim_holds`).
    running: CheckpointClaim | None = None
    outlines: list[CachedOutline] = Field(default_factory=list)  # least recently used first
    research_profile: str | None = None
    compaction: CompactionInfo | None = None
    extras: dict[str, Any] = Field(default_factory=dict)  # agent-layer odds and ends

    # --- audit -----------------------------------------------------------------------------
    def record_audit(self, record: AuditRecord) -> None:
        """Add a turn's record, or update it in place when the turn already has one (a resumed
        turn), then keep only the last MAX_AUDIT_TURNS."""
        record.updated = time.time()
        for i, existing in enumerate(self.audit):
            if existing.turn_id == record.turn_id:
                record.created = existing.created
                self.audit[i] = record
                break
        else:
            self.audit.append(record)
        del self.audit[:-MAX_AUDIT_TURNS]

    def audit_for(self, turn_id: str) -> AuditRecord | None:
        return next((r for r in self.audit if r.turn_id == turn_id), None)

    # --- outlines --------------------------------------------------------------------------
    def cache_outline(self, keys: Sequence[str], outline: str, title: str = "") -> None:
        """Store an outline under all `keys` (e.g. parent and attachment key) as one document.

        An entry sharing any key with `keys` is replaced (its keys merged); the least recently
        used documents are evicted beyond MAX_CACHED_OUTLINES.
        """
        wanted = [k for k in dict.fromkeys(keys) if k]
        if not wanted:
            raise ValueError("an outline needs at least one key")
        merged = list(wanted)
        kept: list[CachedOutline] = []
        for entry in self.outlines:
            if set(entry.keys) & set(wanted):
                merged += [k for k in entry.keys if k not in merged]
            else:
                kept.append(entry)
        kept.append(CachedOutline(keys=merged, outline=outline, title=title))
        self.outlines = kept[-MAX_CACHED_OUTLINES:]

    def get_outline(self, key: str, *, touch: bool = False) -> CachedOutline | None:
        """The outline stored under `key`; `touch` marks it recently used (inside update_state)."""
        for i, entry in enumerate(self.outlines):
            if key in entry.keys:
                if touch:
                    entry.touched = time.time()
                    self.outlines.append(self.outlines.pop(i))
                return entry
        return None

    def has_outlines_for(self, keys: Sequence[str]) -> bool:
        """True when every key has a cached outline (the complete-coverage gate)."""
        return bool(keys) and all(self.get_outline(k) is not None for k in keys)

    @property
    def outline_count(self) -> int:
        """Documents cached (an outline under two keys counts once)."""
        return len(self.outlines)
