"""One model of a reference library, whatever source it was read from.

Every source (Zotero data directory, Zotero local/Web API, plain folder) produces a
`Library`; everything downstream (ingest, index, retrieval) reads only this model.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from zocrates_nb.errors import ZocratesError

# Zotero's attachment link modes, by name (Zotero stores 0..4).
LINK_MODES = ("imported_file", "imported_url", "linked_file", "linked_url", "embedded_image")


@dataclass(frozen=True)
class Creator:
    last: str
    first: str = ""
    creator_type: str = "author"

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}".strip()


@dataclass
class Attachment:
    """A file (or link) attached to an item, or standing alone in the library."""

    key: str
    parent_key: str | None
    title: str
    content_type: str  # MIME type, e.g. "application/pdf"; "" when unknown
    link_mode: str  # one of LINK_MODES
    path: Path | None = None  # resolved local file, None for links / remote files
    url: str = ""
    filename: str = ""
    version: str = ""  # change marker: Zotero version or dateModified
    fulltext_cache: Path | None = None  # storage/<key>/.zotero-ft-cache when present
    skip_reason: str | None = None  # why this attachment cannot be converted (link-only…)


@dataclass
class Note:
    """A Zotero note (child or standalone); `html` is the note-editor HTML."""

    key: str
    parent_key: str | None
    title: str
    html: str
    version: str = ""
    collections: list[str] = field(default_factory=list)


@dataclass
class Collection:
    key: str
    name: str
    parent_key: str | None = None


@dataclass
class Item:
    """A regular (bibliographic) item: a paper, book, report…"""

    key: str
    item_type: str
    title: str
    creators: list[Creator] = field(default_factory=list)
    date: str = ""
    year: int | None = None
    doi: str = ""
    abstract: str = ""
    venue: str = ""
    url: str = ""
    tags: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)  # collection keys
    attachments: list[Attachment] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    version: str = ""  # change marker: Zotero version or dateModified
    fields: dict[str, str] = field(default_factory=dict)  # every other field, by name

    @property
    def authors(self) -> list[str]:
        """Author names (other creator roles only when no author is listed)."""
        people = [c for c in self.creators if c.creator_type == "author"] or self.creators
        return [c.name for c in people]


@dataclass(frozen=True)
class SkippedPath:
    """Something a library reader found but will not read (a link leaving the library
    folder, a special file): not a document, but the index report names it."""

    path: str  # for display (odd characters made printable)
    reason: str


@dataclass
class Library:
    """Items, standalone notes/attachments and collections of one library."""

    source: str  # human-readable origin, e.g. "zotero-dir:/home/me/Zotero"
    items: dict[str, Item] = field(default_factory=dict)
    collections: dict[str, Collection] = field(default_factory=dict)
    standalone_notes: list[Note] = field(default_factory=list)
    standalone_attachments: list[Attachment] = field(default_factory=list)
    skipped: list[SkippedPath] = field(default_factory=list)

    def attachments(self) -> Iterator[Attachment]:
        for item in self.items.values():
            yield from item.attachments
        yield from self.standalone_attachments

    def notes(self) -> Iterator[Note]:
        for item in self.items.values():
            yield from item.notes
        yield from self.standalone_notes

    def collection_descendants(self, key: str) -> set[str]:
        """A collection key plus the keys of all its sub-collections."""
        out = {key}
        changed = True
        while changed:
            changed = False
            for c in self.collections.values():
                if c.parent_key in out and c.key not in out:
                    out.add(c.key)
                    changed = True
        return out

    def collection_path(self, key: str) -> str:
        """'Parent/Child' path of a collection, for display and name lookup."""
        parts: list[str] = []
        seen: set[str] = set()
        cur: str | None = key
        while cur and cur in self.collections and cur not in seen:
            seen.add(cur)
            parts.append(self.collections[cur].name)
            cur = self.collections[cur].parent_key
        return "/".join(reversed(parts))

    def find_collections(self, name_or_key: str) -> list[str]:
        """Collection keys matching a key, a name or a 'Parent/Child' path (case-insensitive)."""
        if name_or_key in self.collections:
            return [name_or_key]
        want = name_or_key.strip().strip("/").casefold()
        return [
            k
            for k, c in self.collections.items()
            if c.name.casefold() == want or self.collection_path(k).casefold() == want
        ]


class LibraryError(ZocratesError):
    """A library cannot be opened or read; the message says what to do about it."""
