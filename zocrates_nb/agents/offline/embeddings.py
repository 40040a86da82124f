"""Sentence embeddings for the offline roles: one model load, a bounded cache shared by the
planner, the writer and the support score (the same sentences recur across a turn's steps)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np


class SentenceEmbeddings:
    """Normalised sentence embeddings with a bounded in-process cache (shared model load)."""

    def __init__(self, model_name: str | None = None, cache_size: int = 20000) -> None:
        from zocrates_nb.index.embedder import Embedder

        self._embedder = Embedder(model_name)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._embedder.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = np.asarray(self._embedder.embed(list(missing)), dtype=np.float32)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._cache[t] = v
                    self._cache.move_to_end(t)
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        with self._lock:
            rows = []
            for t in texts:
                v = self._cache.get(t)
                if v is None:  # evicted between the two locks: embed again
                    v = np.asarray(self._embedder.embed([t])[0], dtype=np.float32)
                rows.append(v)
        if not rows:
            return np.zeros((0, 1), dtype=np.float32)
        return np.vstack(rows)

    def similarity(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        m = self.embed([query, *texts])
        return np.asarray(m[1:] @ m[0], dtype=np.float32)
