"""What the retrieval tools return, as typed records defined once.

Callers match on the type (`isinstance(out, ReadResult)`) or `out.ok`, never on a status
string. The model gets `out.model_dump(mode="json")`: the same JSON the tools always sent
(`notice` last and only when there is one, `caption`/`csv` only when an asset has them).
Tool results read back from a message history are dicts: `succeeded`/`refused` judge those.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

RefusalStatus = Literal["error", "budget_exhausted", "out_of_scope", "unavailable"]
ToolStatus = Literal["success", RefusalStatus]
REFUSALS: tuple[RefusalStatus, ...] = ("error", "budget_exhausted", "out_of_scope", "unavailable")


def _absent(value: Any) -> bool:
    return value is None


class ToolResult(BaseModel):
    """One tool call's result: a status, and the notices the agent should read."""

    status: ToolStatus = "success"
    notice: str | None = Field(None, exclude_if=_absent)

    @property
    def ok(self) -> bool:
        return self.status == "success"

    @model_serializer(mode="wrap")
    def _notice_last(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if "notice" in out:
            out["notice"] = out.pop("notice")
        return out

    def add_notices(self, notices: Sequence[str | None]) -> None:
        """Append notices (the empty ones left out) to the one the result carries."""
        kept = [n for n in (self.notice, *notices) if n]
        self.notice = "\n".join(kept) if kept else None


class Refusal(ToolResult):
    """A call that gathered nothing: a bad argument, a spent budget, a key outside the scope."""

    status: RefusalStatus = "error"
    message: str


class SearchRow(BaseModel):
    """One passage of a search as the agent gets it (the run state keeps the rest)."""

    rank: int | None
    chunk_id: str
    item_key: str
    attachment_key: str
    title: str
    authors: list[str]
    year: int | None
    section: str
    section_id: str
    chunk_type: str
    page: int | None
    text: str


class SearchResult(ToolResult):
    query: str
    scope: str  # what was searched: keys, or a description of the scope
    results: list[SearchRow] = Field(default_factory=list)


class TocResult(ToolResult):
    """A document's compact outline, with the keys that name it."""

    item_key: str  # as asked (canonical spelling)
    doc_key: str  # the attachment or note whose outline it is
    parent_key: str
    title: str
    outline: str


class ReadAsset(BaseModel):
    """One section, figure, table, page or abstract read."""

    asset_id: str
    type: str  # section | figure | table | page | abstract
    heading: str
    title: str
    page: int | None
    words: int
    text: str
    caption: str | None = Field(None, exclude_if=_absent)
    csv: str | None = Field(None, exclude_if=_absent)


class ReadResult(ToolResult):
    item_key: str
    doc_key: str
    parent_key: str
    title: str
    authors: list[str]
    year: int | None
    assets: list[ReadAsset] = Field(default_factory=list)
    unresolved_asset_ids: list[str] = Field(default_factory=list)


class ConcludeResult(ToolResult):
    message: str
    evidence_passages: int
    words: int


class ExtensionResult(ToolResult):
    message: str
    pass_number: int


def succeeded(wire: Any) -> bool:
    """Whether a tool result as a message history holds it (a dict) was a success."""
    return isinstance(wire, dict) and wire.get("status") == "success"


def refused(wire: Any) -> bool:
    """Whether a tool result as a message history holds it refused the call."""
    return isinstance(wire, dict) and wire.get("status") in REFUSALS


__all__ = [
    "REFUSALS",
    "ConcludeResult",
    "ExtensionResult",
    "ReadAsset",
    "ReadResult",
    "Refusal",
    "RefusalStatus",
    "SearchResult",
    "SearchRow",
    "TocResult",
    "ToolResult",
    "ToolStatus",
    "refused",
    "succeeded",
]
