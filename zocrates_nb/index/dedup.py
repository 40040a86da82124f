"""Near-identical passages out of one result list.

A figure or table chunk repeats its caption (and rows) that the body chunk around it also holds,
and a paper's frontmatter repeats its abstract: without care both take a place in the ten
passages an agent reads. Of two passages one of which mostly lies inside the other, the larger
is kept, at the better rank of the two. Only passages of one paper are compared: two items
holding the same text (a preprint and its published version) both stay findable.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

SHINGLE = 5  # words per shingle
# Share of the smaller passage's shingles found in the larger one that makes them duplicates.
CONTAINED = 0.5
_WORD = re.compile(r"\w+")


def shingles(text: str, size: int = SHINGLE) -> frozenset[tuple[str, ...]]:
    words = _WORD.findall(text.casefold())
    if len(words) < size:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + size]) for i in range(len(words) - size + 1))


def containment(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]]) -> float:
    """How much of the smaller shingle set lies in the other (0..1)."""
    small = min(len(a), len(b))
    return len(a & b) / small if small else 0.0


def distinct(
    items: Iterable[T],
    text: Callable[[T], str],
    limit: int,
    promote: Callable[[T, T], T] = lambda _earlier, later: later,
    group: Callable[[T], str] = lambda _item: "",
) -> list[T]:
    """The first `limit` items (best first) with near-duplicates of the same `group` merged
    into the larger one.

    `promote(earlier, later)` is what takes the earlier place when the later item is larger.
    """
    kept: list[T] = []
    sets: list[frozenset[tuple[str, ...]]] = []
    groups: list[str] = []
    for item in items:
        s = shingles(text(item))
        g = group(item)
        twin = next((i for i, k in enumerate(sets)
                     if groups[i] == g and containment(s, k) > CONTAINED), None)
        if twin is None:
            if len(kept) >= limit:
                break
            kept.append(item)
            sets.append(s)
            groups.append(g)
        elif len(s) > len(sets[twin]):  # the later one holds more: it takes the earlier place
            kept[twin] = promote(kept[twin], item)
            sets[twin] = s
    return kept
