"""The catalogue of a library's names, built from its index once per index generation: the
item records, the opening of each introduction and the abstract each bundle gives (each
in one query)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

from zocrates_nb.index.names import Catalogue, CatalogueItem

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index


def catalogue_of(records: Iterable[object], intros: dict[str, str] | None = None,
                 abstracts: dict[str, str] | None = None) -> Catalogue:  # fmt: skip
    """A catalogue from the index's item records (notes and attachments left out), with the
    opening of each item's introduction where known, and the abstract its PDF gives where
    the library record has none (where "a new EULER algorithm" is named)."""
    items = []
    intros = intros or {}
    abstracts = abstracts or {}
    for r in records:
        if getattr(r, "item_type", "") in ("note", "attachment"):
            continue
        key = str(getattr(r, "key", ""))
        items.append(
            CatalogueItem(
                key,
                str(getattr(r, "title", "")),
                tuple(getattr(r, "authors", ()) or ()),
                str(getattr(r, "abstract", "") or "") or abstracts.get(key, ""),
                intros.get(key, ""),
                tuple(str(t) for t in getattr(r, "tags", ()) or ()),
            )
        )
    return Catalogue(items)


INTRO_CHARS = 3000  # of each introduction: where a paper says what it presents

_INTRO_SQL = (
    "SELECT item_key, text FROM chunks WHERE chunk_type = 'body' AND "
    "(lower(section) LIKE '%introduction%' OR lower(section) LIKE '%overview%') "
    "ORDER BY item_key, line_start"
)


def _intros(index: Index) -> dict[str, str]:
    """The first characters of every item's introduction, in one query."""
    out: dict[str, str] = {}
    for row in index.catalog.query(_INTRO_SQL):
        key = str(row["item_key"])
        have = out.get(key, "")
        if len(have) < INTRO_CHARS:
            out[key] = (have + "\n\n" + str(row["text"]))[:INTRO_CHARS].strip()
    return out


# The abstract a document's bundle holds: its own chunk, else the front matter's line.
_ABSTRACT_SQL = (
    "SELECT item_key, chunk_type, text FROM chunks WHERE chunk_type IN ('abstract', "
    "'frontmatter') ORDER BY item_key, line_start"
)
_FRONT_ABSTRACT_RE = re.compile(r"^Abstract:\s*(.+)$", re.M)


def _abstracts(index: Index) -> dict[str, str]:
    """Each document's abstract as its bundle gives it, in one query."""
    out: dict[str, str] = {}
    for row in index.catalog.query(_ABSTRACT_SQL):
        key, text = str(row["item_key"]), str(row["text"])
        if row["chunk_type"] == "frontmatter":
            m = _FRONT_ABSTRACT_RE.search(text)
            text = m.group(1) if m else ""
        else:
            text = re.sub(r"^#+\s*Abstract\s*", "", text.strip(), flags=re.I)
        if text and key not in out:
            out[key] = text[:INTRO_CHARS]
    return out


_CATALOGUES: dict[tuple[str, str], Catalogue] = {}
_CATALOGUES_LOCK = threading.Lock()


def names_for(index: Index) -> Catalogue | None:
    """The library's names, built once per index generation (None: the catalogue is
    unreadable, and questions are decomposed by their own names)."""
    try:
        key = (str(index.home), index.catalog.generation() or "")
        with _CATALOGUES_LOCK:
            got = _CATALOGUES.get(key)
        if got is None:
            got = catalogue_of(index.items(), _intros(index), _abstracts(index))
            with _CATALOGUES_LOCK:
                _CATALOGUES.clear()  # one library's names at a time
                _CATALOGUES[key] = got
        return got
    except Exception:
        return None


__all__ = ["INTRO_CHARS", "catalogue_of", "names_for"]
