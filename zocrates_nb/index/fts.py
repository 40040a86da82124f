"""What the catalogue's BM25 side is asked: any user text as a safe FTS5 query, and a
`SearchFilter` as SQL over the chunks table."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from zocrates_nb.index.model import SearchFilter

_WORD = re.compile(r"\w+")
_MAX_TERMS = 64


def query_words(text: str) -> list[str]:
    """The distinct words of any user text, case-folded, in order (at most `_MAX_TERMS`)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(text):
        seen.setdefault(word.casefold(), None)
        if len(seen) >= _MAX_TERMS:
            break
    return list(seen)


def fts_query(words: str | Sequence[str]) -> str:
    """Any user text (or its words) as a safe FTS5 query: each word quoted, OR-ed ("" when
    none). Quoting makes FTS5 read every term as a plain string, so AND/OR/NOT/NEAR, `*`,
    `^`, `:`, parentheses and quotes in the user's text can never be syntax errors."""
    if isinstance(words, str):
        words = query_words(words)
    return " OR ".join(f'"{w}"' for w in words)


def filter_sql(flt: SearchFilter, alias: str) -> tuple[str, list[Any]]:
    """` AND …` clauses (with parameters) for a SearchFilter over the chunks table."""
    parts: list[str] = []
    params: list[Any] = []
    if flt.item_keys is not None:
        keys = json.dumps(list(flt.item_keys))
        parts.append(
            f"({alias}.item_key IN (SELECT value FROM json_each(?))"
            f" OR {alias}.attachment_key IN (SELECT value FROM json_each(?)))"
        )
        params += [keys, keys]
    if flt.chunk_types is not None:
        parts.append(f"{alias}.chunk_type IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(flt.chunk_types)))
    if flt.exclude_chunk_ids:
        parts.append(f"{alias}.chunk_id NOT IN (SELECT value FROM json_each(?))")
        params.append(json.dumps(list(flt.exclude_chunk_ids)))
    return "".join(" AND " + p for p in parts), params
