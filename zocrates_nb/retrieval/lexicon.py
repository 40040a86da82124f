"""Whether a word occurs anywhere in the library: the offline engine's vocabulary check."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zocrates_nb.index import Index


def library_lexicon(index: Index) -> Callable[[str], bool]:
    """A cached BM25 term look-up (one matching chunk id is enough; no chunk is loaded)."""
    from zocrates_nb.index import SearchFilter

    @lru_cache(maxsize=4096)
    def has(word: str) -> bool:
        try:
            return bool(index.catalog.bm25(word, SearchFilter(), 1))
        except Exception:
            return True  # unsure: assume present (never refuse on a lookup failure)

    return has
