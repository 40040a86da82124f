"""Candidates that continue a returned passage join it, within the query's character budget.

A section's argument often runs over two chunks: the passage that matched the question ranks
high while the next one, which finishes the thought (Raft's joint consensus, then the rule
that it needs majorities of both configurations), ranks 26th. Returning ten unrelated passages
and leaving the continuation behind loses it; returning more passages spends more context.
So after a search, the next-best candidates (ranks `limit+1…`) that sit right before or after
a returned passage of the same section join it, best candidate first, as long as the whole
answer stays within `QUERY_CHARS`. Tables, figures and frontmatter never join: each is a
record of its own. The joined passage keeps the better passage's rank and score and spans
both line ranges, so a read or a citation of it is one contiguous stretch of the document.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import pairwise

from zocrates_nb.index.model import Chunk, Hit

QUERY_CHARS = 25_000  # text one search returns at most, joined passages included
CANDIDATES = 50  # how deep the ranking is searched for continuations
_JOINABLE = frozenset({"body", "abstract", "note"})


@dataclass
class Passage:
    """A returned hit, perhaps with neighbouring chunks joined; `chunk_ids` are all it holds."""

    hit: Hit
    chunk_ids: list[str]


def _position(chunk: Chunk) -> tuple[str, int] | None:
    doc, _, n = chunk.chunk_id.rpartition(":")
    return (doc, int(n)) if doc and n.isdigit() and chunk.chunk_type in _JOINABLE else None


def join_adjacent(
    hits: list[Hit], limit: int, budget: int = QUERY_CHARS, words_left: int | None = None
) -> list[Passage]:
    """The first `limit` hits (best first), each with the later candidates that continue it.

    `words_left` is what the run may still read: a join never pushes a returned passage past
    it (the returned passages come first, continuations only take what is spare), and then
    continuations never add more words than the returned passages hold."""
    top = hits[:limit]
    members: list[list[Chunk]] = [[h.chunk] for h in top]
    slot: dict[tuple[str, int], int] = {}
    for i, h in enumerate(top):
        if (pos := _position(h.chunk)) is not None:
            slot[pos] = i
    used = sum(len(h.chunk.text) for h in top)
    own = sum(h.chunk.words for h in top)
    # In a run, continuations at most double what was asked for: the rest of the run's words
    # stay for its other searches (each part of a compound question gets its share).
    spare = None if words_left is None else min(words_left - own, own)
    for cand in hits[limit:]:  # best remaining candidate first
        pos = _position(cand.chunk)
        if pos is None or pos in slot:
            continue
        doc, n = pos
        at = slot.get((doc, n - 1))
        if at is None:
            at = slot.get((doc, n + 1))
        cost = len(cand.chunk.text) + 2
        if at is None or members[at][0].section_id != cand.chunk.section_id:
            continue
        if used + cost > budget or (spare is not None and cand.chunk.words > spare):
            continue
        members[at].append(cand.chunk)
        slot[pos] = at
        used += cost
        spare = None if spare is None else spare - cand.chunk.words
    return [Passage(_joined(h, parts), [c.chunk_id for c in parts])
            for h, parts in zip(top, members, strict=True)]


def _joined(hit: Hit, parts: list[Chunk]) -> Hit:
    if len(parts) == 1:
        return hit
    parts = sorted(parts, key=lambda c: c.chunk_id)
    text = parts[0].text
    for prev, c in pairwise(parts):
        text += ("\n\n" if c.line_start > prev.line_end else " ") + c.text
    pages = [p for c in parts for p in (c.page, c.page_end) if p is not None]
    chunk = replace(
        hit.chunk, text=text, line_start=parts[0].line_start, line_end=parts[-1].line_end,
        page=min(pages) if pages else None, page_end=max(pages) if pages else None,
    )
    return Hit(chunk=chunk, score=hit.score, ranks=dict(hit.ranks))
