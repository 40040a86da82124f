"""Boundary types of the index: chunks in, hits out."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from zocrates_nb.turn import CHUNK_TYPES as CHUNK_TYPES  # declared with the passage record


@dataclass
class Chunk:
    """A section-aware passage of one document (attachment or note)."""

    chunk_id: str  # "{attachment_key}:{n:04d}", stable for a given bundle
    item_key: str  # parent item key (the note/attachment key itself when standalone)
    attachment_key: str  # the document: attachment key or note key
    line_start: int  # 1-based inclusive range in the bundle's document.md
    line_end: int
    section: str  # heading of the section the chunk lies in ("" for frontmatter)
    section_id: str  # "s3", "f1", "t2", "abstract"
    chunk_type: str  # one of CHUNK_TYPES
    text: str
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    page: int | None = None  # first page of the chunk, when known
    page_end: int | None = None

    @property
    def words(self) -> int:
        return len(self.text.split())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchFilter:
    """Pre-filters applied inside both stores (never after the fact)."""

    item_keys: list[str] | None = None  # parent or attachment/note keys; None = all
    chunk_types: list[str] | None = None
    exclude_chunk_ids: list[str] = field(default_factory=list)


@dataclass
class Hit:
    chunk: Chunk
    score: float  # fused score (higher is better)
    ranks: dict[str, int] = field(default_factory=dict)  # 1-based rank per retriever

    def to_json(self) -> dict[str, Any]:
        c = self.chunk
        return {
            "chunk_id": c.chunk_id,
            "item_key": c.item_key,
            "attachment_key": c.attachment_key,
            "title": c.title,
            "authors": c.authors,
            "year": c.year,
            "section": c.section,
            "chunk_type": c.chunk_type,
            "text": c.text,
            "score": round(self.score, 6),
        }


@dataclass
class ItemRecord:
    """An item as the catalogue holds it (regular item, or a standalone note/attachment)."""

    key: str
    item_type: str  # Zotero item type; "note" / "attachment" for standalone documents
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    date: str = ""
    doi: str = ""
    abstract: str = ""
    venue: str = ""
    url: str = ""
    tags: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)  # collection keys
    version: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class DocumentRecord:
    """One indexed (or not indexable) document: an attachment or a note."""

    doc_key: str  # attachment or note key
    item_key: str  # parent item key (the doc key itself when standalone)
    kind: str  # pdf | html | markdown | text | note
    title: str = ""
    file: str = ""  # local path ("" for notes and links)
    sha256: str | None = None  # of the file bytes (of the HTML for notes)
    file_size: int | None = None
    file_mtime_ns: int | None = None
    version: str = ""  # Zotero's change marker of the attachment/note
    status: str = "indexing"  # done | indexing | error | skipped
    error: str = ""  # why it failed / was skipped (a done document may keep an older version)
    bundle_dir: str = ""  # relative to the data home
    n_chunks: int = 0
    indexed_at: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)
