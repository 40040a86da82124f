"""Sentence embeddings for the offline roles, as arrays (the planner, the writer and the
support score share one model load, and the embedder's process-wide cache of vectors)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class SentenceEmbeddings:
    """Normalised sentence embeddings of the offline engine's local model."""

    def __init__(self, model_name: str | None = None) -> None:
        from zocrates_nb.index.embedder import Embedder

        self._embedder = Embedder(model_name)

    @property
    def name(self) -> str:
        return self._embedder.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return np.asarray(self._embedder.embed(list(texts)), dtype=np.float32)

    def similarity(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        m = self.embed([query, *texts])
        return np.asarray(m[1:] @ m[0], dtype=np.float32)
