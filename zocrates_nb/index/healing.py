"""Rebuilding an index's damaged derived data from the cached bundles (health.py says what
counts as damaged and how it is named): the indexer's repairs and doctor's chunk-by-chunk
check."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from zocrates_nb.index.health import VECTORS_KEY, IndexDamaged, catalog_rebuilt

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index


def missing_vectors(index: Index) -> tuple[set[str], set[str]]:
    """(chunk ids without a vector, chunk ids of vectors without a chunk): chunk by chunk."""
    chunks = set(index.catalog.chunk_ids())
    owners = index.dense.ids()
    return chunks - owners, owners - chunks


def heal_catalog(index: Index) -> list[str]:
    """Under the writer lock, first of all: a damaged catalogue is replaced (report line)."""
    try:
        problem = index.catalog.quick_check()
        if problem is None:
            index.catalog.outdated  # noqa: B018 - reads the header, which may be what is damaged
    except IndexDamaged as e:
        problem = e.reason
    if problem is None:
        return []
    index.replace_catalog()
    return [catalog_rebuilt(problem)]


def heal(index: Index) -> tuple[list[str], set[str]]:
    """Under the writer lock, before indexing (after `heal_catalog` and a format rebuild):
    (report lines, doc keys to embed again)."""
    lines: list[str] = []
    try:
        vectors = index.dense.count_vectors()
    except IndexDamaged as e:
        where = index.dense_where
        index.reset_vectors()
        done = set(index.catalog.doc_keys_with_status("done"))
        lines.append(f"The vector store {where} could not be read ({e.reason}): it was rebuilt "
                     f"from the cached conversions ({len(done):,} documents embedded again, no "
                     "paper converted again).")  # fmt: skip
        return lines, done
    stored = index.catalog.get_meta(VECTORS_KEY)
    chunks = index.catalog.chunk_count()
    if stored == str(vectors) and vectors >= chunks:
        return lines, set()
    missing, orphans = missing_vectors(index)
    if orphans:
        index.dense.delete_chunks(sorted(orphans))
        if not chunks:  # a catalogue emptied (truncated to nothing, or deleted) under its vectors
            lines.append(f"The index catalogue was empty while the vector store held the vectors "
                         f"of {len(orphans):,} chunks: it was rebuilt from the cached conversions "
                         "(no paper converted again).")  # fmt: skip
    redo = index.catalog.doc_keys_of_chunks(sorted(missing))
    if missing:
        lines.append(f"The vector store was missing the vectors of {len(missing):,} of "
                     f"{chunks:,} chunks: {len(redo):,} documents were embedded again from the "
                     "cached conversions (no paper converted again).")  # fmt: skip
    return lines, redo


def record_vectors(index: Index) -> None:
    """After an indexing run: the vector count it left, for the next cheap check."""
    with contextlib.suppress(IndexDamaged):
        index.catalog.set_meta(VECTORS_KEY, str(index.dense.count_vectors()))
