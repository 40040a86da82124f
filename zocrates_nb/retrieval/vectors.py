"""The vectors a turn already has: each passage's window vectors as the index stored them (what
dense search compared the query with), fetched by chunk id, and each query's vector, embedded
once.

A passage is an index chunk, several neighbouring chunks joined, or a whole section read: it is
covered by the chunks whose line ranges meet its own, and each chunk by the windows
`index.passages` embedded at index time. Judging a passage against a goal is then a dot product
with vectors on disk, never a second run of the embedding model over text it already read.
One `PassageVectors` per search run (its caches live as long as the run's index generation).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from zocrates_nb.index.passages import windows as window_texts
from zocrates_nb.retrieval.state import Evidence

if TYPE_CHECKING:
    from zocrates_nb.index import Index
    from zocrates_nb.index.model import Chunk


@dataclass(frozen=True)
class Window:
    """One stored window of a chunk: its words (without the context head) and its vector."""

    chunk_id: str
    text: str
    vector: np.ndarray


class PassageVectors:
    """Stored window vectors of passages and embedded queries, cached for one run."""

    def __init__(self, index: Index) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._queries: dict[str, np.ndarray] = {}
        self._windows: dict[str, list[Window]] = {}  # by chunk id
        self._covering: dict[tuple[str, str, int | None, int | None], list[str]] = {}

    # ------------------------------------------------------------------ queries
    def query(self, text: str) -> np.ndarray:
        """The query's vector in the index's embedding space (unit length)."""
        with self._lock:
            got = self._queries.get(text)
        if got is None:
            got = np.asarray(self.index.embedder.embed_query(text), dtype=np.float32)
            with self._lock:
                self._queries[text] = got
        return got

    # ------------------------------------------------------------------ passages
    def chunk_ids(self, e: Evidence) -> list[str]:
        """The index chunks a passage covers (its own id first when it is one)."""
        key = (e.chunk_id, e.attachment_key, e.line_start, e.line_end)
        with self._lock:
            cached = self._covering.get(key)
        if cached is not None:
            return cached
        ids: list[str] = []
        if e.line_start is not None and e.line_end is not None and e.chunk_type != "frontmatter":
            ids = self.index.chunks_intersecting(e.attachment_key, e.line_start, e.line_end)
        if e.chunk_id not in ids and ":" in e.chunk_id and e.chunk_id.rsplit(":", 1)[1].isdigit():
            ids = [e.chunk_id, *ids]
        with self._lock:
            self._covering[key] = ids
        return ids

    def windows(self, e: Evidence) -> list[Window]:
        """The stored windows of every chunk the passage covers, in document order."""
        ids = self.chunk_ids(e)
        self._load(ids)
        with self._lock:
            return [w for cid in ids for w in self._windows.get(cid, [])]

    def _load(self, chunk_ids: Sequence[str]) -> None:
        with self._lock:
            missing = [c for c in dict.fromkeys(chunk_ids) if c not in self._windows]
        if not missing:
            return
        vectors = self.index.dense.vectors(missing)
        chunks: dict[str, Chunk] = {c.chunk_id: c for c in self.index.chunks(missing)}
        loaded: dict[str, list[Window]] = {}
        for cid in missing:
            vecs = vectors.get(cid) or []
            chunk = chunks.get(cid)
            texts = window_texts(chunk.text) if chunk is not None else []
            if len(texts) != len(vecs):  # an older passage version: vectors without words
                texts = [chunk.text if chunk is not None else ""] * len(vecs)
            loaded[cid] = [
                Window(cid, t, _unit(np.asarray(v, dtype=np.float32)))
                for t, v in zip(texts, vecs, strict=True)
            ]
        with self._lock:
            self._windows.update(loaded)

    def prefetch(self, items: Sequence[Evidence]) -> None:
        """Load the windows of many passages in one round trip."""
        self._load([cid for e in items for cid in self.chunk_ids(e)])

    # ------------------------------------------------------------------ similarity
    def similarity(self, query: str, items: Sequence[Evidence]) -> list[float | None]:
        """Each passage's best window cosine to the query (None: no stored vector)."""
        if not items:
            return []
        self.prefetch(items)
        q = self.query(query)
        out: list[float | None] = []
        for e in items:
            ws = self.windows(e)
            out.append(float(max(float(w.vector @ q) for w in ws)) if ws else None)
        return out

    def chunk_similarity(self, query: str, chunk_ids: Sequence[str]) -> list[float | None]:
        """Each index chunk's best window cosine to the query (None: no stored vector)."""
        self._load(chunk_ids)
        q = self.query(query)
        out: list[float | None] = []
        with self._lock:
            for cid in chunk_ids:
                ws = self._windows.get(cid) or []
                out.append(max(float(w.vector @ q) for w in ws) if ws else None)
        return out

    def window_scores(self, query: str, e: Evidence) -> list[tuple[Window, float]]:
        """The passage's windows with their cosine to the query, best first."""
        q = self.query(query)
        scored = [(w, float(w.vector @ q)) for w in self.windows(e)]
        return sorted(scored, key=lambda ws: ws[1], reverse=True)


def _unit(v: np.ndarray) -> np.ndarray:
    n = float(np.linalg.norm(v))
    return v / n if n > 0 else v


__all__ = ["PassageVectors", "Window"]
