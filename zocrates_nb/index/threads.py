"""Embedding a group of passages on this machine's cores: sorted by length, in slices, with
torch's thread count picked by measured throughput (the indexer's embedding step)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index

EMBED_SLICE = 64  # passages per embedding call (a group sorted by length, then sliced)


def embed_sorted(texts: list[str], index: Index, tuner: ThreadTuner) -> list[list[float]]:
    """Vectors of `texts` (in order), embedded longest first in slices of `EMBED_SLICE`:
    texts of a length share a batch (little padding), and each slice lets the tuner measure
    and pick torch's thread count again."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    vectors: list[list[float]] = [[] for _ in texts]
    for start in range(0, len(order), EMBED_SLICE):
        part = order[start : start + EMBED_SLICE]
        batch = [texts[i] for i in part]
        threads = tuner.pick()
        t0 = time.perf_counter()
        got = index.embedder.embed(batch, threads=threads)
        tuner.record(threads, batch, time.perf_counter() - t0)
        for i, v in zip(part, got, strict=True):
            vectors[i] = v
    return vectors


class ThreadTuner:
    """Picks torch's thread count for passage batches by measured throughput.

    On a shared 2-core machine (the converter worker, other programs) two torch threads can
    spin-wait on each other and run 3x slower than one; on an idle machine they run ~1.7x
    faster. Measuring beats guessing: try each option, then keep the faster one, probing the
    other now and then as the load changes.
    """

    PROBE_EVERY = 12

    def __init__(self, cores: int) -> None:
        self.options = sorted({1, max(cores, 1)})
        self.rate: dict[int, float] = {}
        self.calls = 0

    def pick(self) -> int:
        self.calls += 1
        untried = [n for n in self.options if n not in self.rate]
        if untried:
            return untried[-1]
        best = max(self.rate, key=lambda n: self.rate[n])
        if self.calls % self.PROBE_EVERY == 0:
            return min(self.rate, key=lambda n: self.rate[n])
        return best

    def record(self, threads: int, texts: list[str], seconds: float) -> None:
        # Work ≈ tokens the model sees (it truncates at ~256 word pieces ≈ 190 words).
        work = sum(min(len(t.split()), 190) + 8 for t in texts)
        if work < 400 or seconds <= 0:
            return  # too small to tell anything
        rate = work / seconds
        old = self.rate.get(threads)
        self.rate[threads] = rate if old is None else 0.5 * old + 0.5 * rate
