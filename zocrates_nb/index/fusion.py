"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

RRF uses ranks only, so BM25 scores and cosine distances never need a common scale:
score(d) = Σ_r 1 / (k + rank_r(d)), rank 1-based, summed over the retrievers that found d.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

# The paper's k = 60 flattens the top of each list; with only two retrievers a smaller k lets a
# passage ranked first by one of them count. Chosen on BEIR SciFact's *train* split (nDCG@10:
# k=60 0.716, 20 0.726, 10 0.726, 5 0.728, 1 0.732); 10 keeps a margin from the extreme.
RRF_K = 10


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
