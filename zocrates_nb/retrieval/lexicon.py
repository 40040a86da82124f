"""Whether a word occurs anywhere in the library: the offline engine's vocabulary check."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from zocrates_nb.index import Index


class Lexicon(Protocol):
    """Whether a word occurs in the library, or in one item of it (`within`: its key)."""

    def __call__(self, word: str, within: str = "") -> bool: ...


def library_lexicon(index: Index) -> Lexicon:
    """A cached BM25 term look-up (one matching chunk id is enough; no chunk is loaded):
    `has(word)` in the library, `has(word, within=key)` in one item (its passages and notes);
    words with spaces between them are a phrase ("lines of code")."""
    from zocrates_nb.index import SearchFilter

    @lru_cache(maxsize=4096)
    def found(word: str, within: str) -> bool:
        flt = SearchFilter(item_keys=[within]) if within else SearchFilter()
        try:
            if " " in word.strip():
                return index.catalog.has_phrase(word, flt)
            return bool(index.catalog.bm25(word, flt, 1))
        except Exception:
            return True  # unsure: assume present (never refuse on a lookup failure)

    def has(word: str, within: str = "") -> bool:
        return any(found(w, within) for w in spellings(word))

    return has


_VARIANTS = (  # British ↔ American spellings: "initialised" is the library's "initialized"
    (r"is(e|es|ed|ing|ation|ations|er|ers)$", r"iz\1"),
    (r"iz(e|es|ed|ing|ation|ations|er|ers)$", r"is\1"),
    (r"ys(e|es|ed|ing)$", r"yz\1"),
    (r"our(s|ed|ing|ite|ites)?$", r"or\1"),
    (r"tre(s)?$", r"ter\1"),
    (r"ogue(s)?$", r"og\1"),
    (r"ll(ed|ing|er|ers)$", r"l\1"),
)


def spellings(word: str) -> list[str]:
    """The word and its other spellings (British and American): a question's spelling must not
    make a word the library uses look unknown to it."""
    out = [word]
    for pattern, repl in _VARIANTS:
        other = re.sub(pattern, repl, word)
        if other != word and other not in out:
            out.append(other)
    return out
