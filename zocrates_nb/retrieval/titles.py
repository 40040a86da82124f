"""Items and collections whose title, authors or name match a few typed words: what a scope
picker offers (the panel's chips, a notebook looking for a key)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from zocrates_nb.index import Index


@dataclass(frozen=True)
class TitleMatch:
    kind: Literal["item", "collection"]
    key: str
    title: str  # an item's title, or a collection's 'Parent/Child' path
    authors: list[str] = field(default_factory=list)
    year: int | None = None


def search_titles(index: Index, query: str, limit: int = 10) -> list[TitleMatch]:
    """Best matches first: the share of words found, plus a bonus for the whole phrase."""
    q = " ".join(query.casefold().split())
    if not q:
        return []
    words = re.findall(r"\w+", q) or [q]
    scored: list[tuple[float, TitleMatch]] = []
    for it in index.items():
        if it.item_type in ("note", "attachment"):
            continue
        title = it.title.casefold()
        hay = f"{title} {' '.join(it.authors).casefold()} {it.year or ''}"
        hits = sum(1 for w in words if w in hay)
        if hits:
            score = hits / len(words) + (q in title) + 0.5 * title.startswith(q)
            scored.append((score, TitleMatch("item", it.key, it.title, list(it.authors), it.year)))
    for key, path in index.collection_paths().items():
        name = path.casefold()
        hits = sum(1 for w in words if w in name)
        if hits:
            scored.append((hits / len(words) + (q in name) + 0.1, TitleMatch("collection", key,
                                                                                path)))
    scored.sort(key=lambda s: -s[0])
    return [m for _, m in scored[:limit]]
