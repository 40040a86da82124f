"""Damaged derived data: found, named, and rebuilt from the cached bundles.

The catalogue (`index/catalog.sqlite`) and the vectors (`index/chroma`, or a Chroma server's
collection) are derived from the library and the bundle cache, so neither is ever worth a
researcher's time to mend by hand:

- reading a damaged one fails with `IndexDamaged`, one sentence saying that `zocrates-nb index`
  rebuilds it, never "internal error";
- `status` compares the vectors with the chunks cheaply (`vector_problems`), `doctor` chunk by
  chunk (`missing_vectors`);
- `index` (`heal`, under the writer lock) replaces a damaged catalogue with an empty one and
  drops the vectors with it, resets a vector store it cannot read, and re-embeds the documents
  whose chunks lost their vectors — all from the cached bundles, no paper converted again — with
  one line in the report saying what it did.

Only derived files are replaced; the bundle cache, documents/, settings and sessions stay.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from zocrates_nb.errors import ZocratesError
from zocrates_nb.index.damage import damage_reason, is_damage

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index

VECTORS_KEY = "vectors"  # catalogue meta: the vector count the last indexing run left
REBUILD = "run `zocrates-nb index` to rebuild it from the cached conversions"


class IndexDamaged(ZocratesError):
    """A derived part of the index cannot be read; `zocrates-nb index` rebuilds it."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason  # what was found, in a few words ("file is not a database")


def catalog_damaged(path: Path, e: BaseException) -> IndexDamaged:
    reason = damage_reason(e)
    return IndexDamaged(f"The index catalogue {path} is damaged ({reason}): {REBUILD} "
                        "(no paper is converted again).", reason)  # fmt: skip


@contextlib.contextmanager
def catalog_guard(path: Path) -> Iterator[None]:
    """SQLite's corruption errors of the catalogue as `IndexDamaged`."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if is_damage(e):
            raise catalog_damaged(path, e) from None
        raise


def vectors_damaged(where: str, e: BaseException) -> IndexDamaged:
    reason = damage_reason(e)
    return IndexDamaged(f"The vector store {where} cannot be read ({reason}): {REBUILD}.", reason)


def vector_problems(index: Index) -> list[str]:
    """Cheap checks of the vectors against the chunks (a count each): what `status` shows."""
    chunks = index.catalog.chunk_count()
    try:
        vectors = index.dense.count_vectors()
    except ZocratesError as e:  # damaged, or a Chroma server that does not answer
        return [str(e)]
    stored = index.catalog.get_meta(VECTORS_KEY)
    if vectors < chunks:  # every chunk has at least one vector
        return [f"The vector store holds {vectors:,} vectors for {chunks:,} chunks, so dense "
                f"search misses papers: {REBUILD.replace('rebuild it', 'rebuild them')}."]
    if stored is not None and stored.isdigit() and int(stored) != vectors:
        return [f"The vector store holds {vectors:,} vectors where the last indexing run left "
                f"{int(stored):,}: run `zocrates-nb index` to check and repair it."]
    return []


def missing_vectors(index: Index) -> tuple[set[str], set[str]]:
    """(chunk ids without a vector, chunk ids of vectors without a chunk): chunk by chunk."""
    chunks = set(index.catalog.chunk_ids())
    owners = index.dense.ids()
    return chunks - owners, owners - chunks


def catalog_rebuilt(reason: str) -> str:
    return (f"The index catalogue was damaged ({reason}): it was rebuilt from the cached "
            "conversions (no paper converted again).")  # fmt: skip


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
