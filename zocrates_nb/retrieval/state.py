"""Per-run retrieval state: what one search run has seen, gathered and spent.

Pydantic models, so a checkpoint snapshot can persist a run mid-way and restore it exactly
(`RunState.from_json(state.to_json())` gives back an equal object).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from zocrates_nb.config import RetrievalSettings
from zocrates_nb.turn import PlacedPassage, Scope

# An extension adds these on top of the current ceilings (10→15→20, 7500→11250→15000, 15→20→25).
EXTENSION_CALLS = 5
EXTENSION_WORDS = 3750
EXTENSION_CHUNKS = 5
MAX_EXTENSIONS = 2


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Evidence(PlacedPassage):
    """One retrieved passage: an index chunk (search) or a synthetic one (a section read)."""

    model_config = ConfigDict(extra="forbid")

    chunk_type: str = "body"
    csv: str | None = None  # tables: rows as CSV
    caption: str = ""  # figures/tables: the printed caption
    label: str = ""  # figures/tables: "Figure 3"
    tool: str = ""  # which tool found it: search_corpus | read_document
    query: str = ""  # the search query that found it (search_corpus)
    rank: int | None = None  # 1-based rank within its tool call
    score: float | None = None  # retrieval score (fused, higher is better)
    ranks: dict[str, int] = Field(default_factory=dict)  # per-retriever ranks (bm25, dense)
    rerank_method: str = ""  # how the final ordering was made (set by rerank)
    rerank_score: float | None = None


class CompletionReport(_Model):
    summary: str
    notes: str = ""
    gaps: list[str] = Field(default_factory=list)
    source: Literal["agent", "auto_generated"] = "agent"


class FollowUp(_Model):
    """What a follow-up builds on, carried as a field of the run (never appended to its goal
    and split back out): the earlier subject, the earlier question, and, for a question that
    contrasts ("How is that different in Bigtable?"), the earlier answer's first sentence."""

    subject: str = ""  # "GFS": what the earlier turn was about
    question: str = ""  # the earlier turn's search goal
    answer: str = ""  # the earlier answer's first answering sentence ("" when not needed)
    correction: bool = False  # "no, I meant the other paper": the researcher corrects it
    not_papers: list[str] = Field(default_factory=list)  # titles the researcher did not mean

    def context(self, goal: str) -> str:
        """The goal with the earlier question beside it, when the goal says little by itself
        ("Why?", "and its limits?"): what is searched and matched."""
        if not self.question or len(re.findall(r"[A-Za-z]{3,}", goal)) >= 4:
            return goal
        return f"{goal} {self.question}"


class ExtensionRequest(_Model):
    justification: str
    covered_summary: str = ""
    missing_aspects: list[str] = Field(default_factory=list)
    pass_number: int  # extension_count + 1 when requested: which pass asked for it


class RunState(_Model):
    """Everything one search run carries between tool calls."""

    goal: str = ""  # the standalone search goal the run serves
    scope: Scope = Field(default_factory=Scope)  # what the question asked to search
    # Bound to an index when the run starts: the parent item keys a selection or collection
    # run may read, and the keys `item_key="active"` means (the selection, or items selected
    # in Zotero during a library-wide run).
    allowed_keys: list[str] = Field(default_factory=list)
    active_keys: list[str] = Field(default_factory=list)
    seen_chunk_ids: list[str] = Field(default_factory=list)
    seen_assets: list[str] = Field(default_factory=list)  # "{key}:{asset}" / "{key}:full"
    evidence: list[Evidence] = Field(default_factory=list)
    tool_count: int = 0
    budget: int = 10
    words: int = 0  # words of evidence gathered so far
    word_ceiling: int = 7500
    max_rerank_chunks: int = 15
    extension_count: int = 0
    extension_request: ExtensionRequest | None = None
    follow_up: FollowUp | None = None  # what a follow-up question builds on
    report: CompletionReport | None = None
    tool_log: list[dict[str, Any]] = Field(default_factory=list)  # (tool, args, status) per call

    @classmethod
    def new(
        cls,
        settings: RetrievalSettings | None = None,
        *,
        goal: str = "",
        scope: Scope | None = None,
        allowed_keys: list[str] | None = None,
        active_keys: list[str] | None = None,
    ) -> RunState:
        s = settings or RetrievalSettings()
        scope = scope or Scope()
        if active_keys is None:  # a selection: its items as `allowed_keys` resolved them (an
            # attachment or note key stands for its parent item), else as given
            bound = allowed_keys is not None and scope.kind == "selection"
            active_keys = allowed_keys if bound else scope.items
        return cls(
            goal=goal,
            scope=scope,
            allowed_keys=list(allowed_keys or []),
            active_keys=list(active_keys or []),
            budget=s.budget,
            word_ceiling=s.word_ceiling,
            max_rerank_chunks=s.max_rerank_chunks,
        )

    @model_validator(mode="before")
    @classmethod
    def _first_release_scope(cls, data: Any) -> Any:
        """A snapshot written by the first release kept a second scope type
        (`{kind, item_keys, collections, allowed_keys}`); read it into today's fields."""
        scope = data.get("scope") if isinstance(data, dict) else None
        if not isinstance(scope, dict) or "kind" not in scope:
            return data
        keys = list(scope.get("item_keys") or [])
        return {
            **data,
            "scope": {
                "items": keys if scope["kind"] == "selection" else [],
                "collections": list(scope.get("collections") or []),
            },
            "allowed_keys": list(scope.get("allowed_keys") or []),
            "active_keys": keys,
        }

    @property
    def restricted(self) -> bool:
        """Only `allowed_keys` may be read (a selection or collection run)."""
        return self.scope.kind != "library"

    # ------------------------------------------------------------------ persistence
    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunState:
        return cls.model_validate(data)

    # ------------------------------------------------------------------ bookkeeping
    def mark_seen(self, chunk_ids: list[str]) -> None:
        have = set(self.seen_chunk_ids)
        self.seen_chunk_ids.extend(c for c in dict.fromkeys(chunk_ids) if c not in have)

    def mark_asset(self, canonical: str) -> None:
        if canonical not in self.seen_assets:
            self.seen_assets.append(canonical)

    def add_evidence(self, items: list[Evidence]) -> list[Evidence]:
        """Append items not already held (by chunk id); returns the ones added."""
        have = {e.chunk_id for e in self.evidence}
        added = []
        for e in items:
            if e.chunk_id in have:
                continue
            have.add(e.chunk_id)
            self.evidence.append(e)
            added.append(e)
        self.words = sum(e.words for e in self.evidence)
        return added

    def drop_evidence(self, chunk_ids: set[str]) -> None:
        """Remove passages a later whole-section read now holds in full."""
        self.evidence = [e for e in self.evidence if e.chunk_id not in chunk_ids]
        self.words = sum(e.words for e in self.evidence)

    @property
    def remaining_calls(self) -> int:
        return max(self.budget - self.tool_count, 0)

    @property
    def extension_pending(self) -> bool:
        """A request made during the current pass and not yet granted."""
        r = self.extension_request
        return r is not None and r.pass_number == self.extension_count + 1

    def grant_extension(self) -> bool:
        """+5 calls, +3,750 words, +5 rerank chunks; at most two extensions per run."""
        if self.extension_count >= MAX_EXTENSIONS:
            return False
        self.extension_count += 1
        self.budget += EXTENSION_CALLS
        self.word_ceiling += EXTENSION_WORDS
        self.max_rerank_chunks += EXTENSION_CHUNKS
        return True
