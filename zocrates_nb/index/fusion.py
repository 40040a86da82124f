"""Hybrid fusion: Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009) plus a small
score term.

RRF uses ranks only, so BM25 scores and cosine similarities never need a common scale:
rrf(d) = Σ_r 1 / (k + rank_r(d)), rank 1-based, summed over the retrievers that found d.
Ranks alone cannot tell a passage far ahead of the next from one a hair ahead, so `fuse` adds
`SCORE_WEIGHT` × a convex mix of each retriever's scores divided by its best score (a passage
a retriever did not list gets that list's lowest). The term reorders near-ties and rarely
more: with a single retriever it keeps that retriever's order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The paper's k = 60 flattens the top of each list; with only two retrievers a smaller k lets a
# passage ranked first by one of them count. Chosen on BEIR SciFact's *train* split (nDCG@10:
# k=60 0.716, 20 0.726, 10 0.726, 5 0.728, 1 0.732); 10 keeps a margin from the extreme.
RRF_K = 10
# Chosen on SciFact train (nDCG@10, BM25 title weight 1: RRF alone 0.729, weight 0.1 0.736,
# 0.2 0.738) and the dev questions (phrase-only recall@10 unchanged at 0.913 up to 0.2, one
# passage lost at 0.3; score fusion alone reaches 0.742 on train but loses two of 23 on dev).
SCORE_WEIGHT = 0.2
SCORE_SHARES = {"bm25": 0.4, "dense": 0.6}


@dataclass
class Fused:
    id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(rankings: Mapping[str, Sequence[str]], k: int = RRF_K) -> list[Fused]:
    """Fuse ranked id lists (best first) by retriever name; best fused first.

    Ties keep the order of the best single rank, then the retriever order given.
    """
    fused: dict[str, Fused] = {}
    for name, ids in rankings.items():
        for rank, doc_id in enumerate(ids, start=1):
            if doc_id in fused and name in fused[doc_id].ranks:
                continue  # a retriever listing an id twice counts it once
            f = fused.setdefault(doc_id, Fused(doc_id, 0.0))
            f.score += 1.0 / (k + rank)
            f.ranks[name] = rank
    order = {doc_id: i for i, doc_id in enumerate(fused)}
    return sorted(
        fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), order[f.id])
    )


def fuse(
    scored: Mapping[str, Sequence[tuple[str, float]]],
    k: int = RRF_K,
    weight: float = SCORE_WEIGHT,
    shares: Mapping[str, float] = SCORE_SHARES,
) -> list[Fused]:
    """RRF of (id, score) lists (best first, higher score better) plus `weight` × the
    share-weighted scores, each list divided by its best; best fused first."""
    fused = rrf({name: [i for i, _ in pairs] for name, pairs in scored.items()}, k)
    present = {name: pairs for name, pairs in scored.items() if pairs}
    total = sum(shares.get(name, 0.0) for name in present)
    if not fused or weight <= 0 or total <= 0:
        return fused
    for name, pairs in present.items():
        top = max(s for _, s in pairs)
        scale = top if top > 0 else 1.0
        norm: dict[str, float] = {}
        for i, s in pairs:
            norm.setdefault(i, s / scale)  # a retriever listing an id twice: its first
        floor = min(norm.values())
        share = weight * shares.get(name, 0.0) / total
        for f in fused:
            f.score += share * norm.get(f.id, floor)
    order = {f.id: n for n, f in enumerate(fused)}  # RRF's order breaks exact ties
    return sorted(fused, key=lambda f: (-f.score, order[f.id]))
