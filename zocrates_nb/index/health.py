"""Damaged derived data: found, named, and rebuilt from the cached bundles.

The catalogue (`index/catalog.sqlite`) and the vectors (`index/chroma`, or a Chroma server's
collection) are derived from the library and the bundle cache, so neither is ever worth a
researcher's time to mend by hand:

- reading a damaged one fails with `IndexDamaged`, one sentence saying that `zocrates-nb index`
  rebuilds it, never "internal error";
- `status` compares the vectors with the chunks cheaply (`Index.status`), `doctor` chunk by
  chunk (`healing.missing_vectors`);
- `index` (`healing.heal`, under the writer lock) replaces a damaged catalogue with an empty one and
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

from zocrates_nb.errors import ZocratesError
from zocrates_nb.index.damage import damage_reason, is_damage

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


def catalog_rebuilt(reason: str) -> str:
    return (f"The index catalogue was damaged ({reason}): it was rebuilt from the cached "
            "conversions (no paper converted again).")  # fmt: skip
