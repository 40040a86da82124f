"""Chroma: one collection of chunk vectors, embedded (PersistentClient) or a `chroma run` server.

Only ids, vectors and the metadata the pre-filters need (item_key, attachment_key, chunk_type,
chunk_id) are stored; chunk text lives in SQLite. A chunk has one vector per window of its text
(see passages.py): the first is stored under the chunk id, the others under `{chunk_id}#{n}`,
so upserts are idempotent and the `chunk_id` metadata names the owner of every vector.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import chromadb
from chromadb.config import Settings as ChromaClientSettings

from zocrates_nb.config import ChromaSettings
from zocrates_nb.errors import ZocratesError
from zocrates_nb.index.embedder import ZocratesEmbeddingFunction
from zocrates_nb.index.health import vectors_damaged
from zocrates_nb.index.model import Chunk, SearchFilter

_BATCH = 1000
# Vectors fetched per chunk wanted: a body chunk has 2-3 windows, and several may be near.
_WINDOWS_PER_CHUNK = 3


def chroma_where(flt: SearchFilter) -> dict[str, Any] | None:
    """A SearchFilter as a Chroma `where` clause (None when nothing filters)."""
    clauses: list[dict[str, Any]] = []
    if flt.item_keys is not None:
        keys = list(flt.item_keys)
        clauses.append(
            {"$or": [{"item_key": {"$in": keys}}, {"attachment_key": {"$in": keys}}]}
        )
    if flt.chunk_types is not None:
        clauses.append({"chunk_type": {"$in": list(flt.chunk_types)}})
    if flt.exclude_chunk_ids:
        clauses.append({"chunk_id": {"$nin": list(flt.exclude_chunk_ids)}})
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


class DenseStore:
    """The vector side of the index. Opening it never loads an embedding model."""

    def __init__(self, settings: ChromaSettings, persist_dir: Path, model: str) -> None:
        self.settings = settings
        self.model = model
        self.persist_dir = persist_dir
        client_settings = ChromaClientSettings(anonymized_telemetry=False)
        self.client: Any
        self._ef = ZocratesEmbeddingFunction(model)
        with self.errors():
            if settings.mode == "server":
                self.client = chromadb.HttpClient(
                    host=settings.host, port=settings.port, settings=client_settings
                )
            else:
                persist_dir.mkdir(parents=True, exist_ok=True)
                self.client = chromadb.PersistentClient(
                    path=str(persist_dir), settings=client_settings
                )
            self.collection = self._open_collection()

    @property
    def where(self) -> str:
        s = self.settings
        return f"http://{s.host}:{s.port}" if s.mode == "server" else str(self.persist_dir)

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Chroma's failures in words: an embedded store that cannot be read is damaged
        (`index` rebuilds it); a server that fails is named, and left alone."""
        try:
            yield
        except ZocratesError:
            raise
        except Exception as e:
            if self.settings.mode == "server":
                raise ZocratesError(
                    f"The Chroma server at {self.where} could not be reached or failed "
                    f"({' '.join(str(e).split())[:160] or 'no answer'}): check that it runs "
                    "(`chroma run`) and index.chroma in the configuration."
                ) from None
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()  # a half-started store is not kept
            raise vectors_damaged(self.where, e) from None

    def count_vectors(self) -> int:
        """Vectors stored (a chunk has one per window of its text)."""
        with self.errors():
            return int(self.collection.count())

    def delete_chunks(self, chunk_ids: Sequence[str]) -> None:
        """Every vector of these chunks (orphans of chunks the catalogue no longer holds)."""
        with self.errors():
            for i in range(0, len(chunk_ids), _BATCH):
                part = list(chunk_ids[i : i + _BATCH])
                self.collection.delete(where={"chunk_id": {"$in": part}})

    def _open_collection(self) -> Any:
        return self.client.get_or_create_collection(
            name=self.settings.collection,
            embedding_function=self._ef,
            configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedding_model": self.model},
        )

    def reset(self) -> None:
        """Drop every vector (the embedding model changed)."""
        with contextlib.suppress(Exception):  # an absent collection: nothing to drop
            self.client.delete_collection(self.settings.collection)
        self.collection = self._open_collection()

    def count(self) -> int:
        """Chunks that have vectors (not vectors: a chunk may have several windows)."""
        return len(self.ids())

    def upsert(self, chunks: Sequence[Chunk], embeddings: Sequence[Sequence[float]]) -> None:
        """Vectors by owner chunk; a chunk listed n times gets n window vectors, in order."""
        seen: dict[str, int] = {}
        ids = []
        for c in chunks:
            n = seen.get(c.chunk_id, 0)
            seen[c.chunk_id] = n + 1
            ids.append(c.chunk_id if n == 0 else f"{c.chunk_id}#{n}")
        for i in range(0, len(chunks), _BATCH):
            part = chunks[i : i + _BATCH]
            self.collection.upsert(
                ids=ids[i : i + _BATCH],
                embeddings=[list(e) for e in embeddings[i : i + _BATCH]],
                metadatas=[
                    {
                        "item_key": c.item_key,
                        "attachment_key": c.attachment_key,
                        "chunk_type": c.chunk_type,
                        "chunk_id": c.chunk_id,
                    }
                    for c in part
                ],
            )

    def delete_documents(self, doc_keys: Sequence[str]) -> None:
        for i in range(0, len(doc_keys), _BATCH):
            keys = list(doc_keys[i : i + _BATCH])
            self.collection.delete(where={"attachment_key": {"$in": keys}})

    def ids(self, doc_keys: Sequence[str] | None = None) -> set[str]:
        """Ids of the chunks that have vectors (of some documents, or all): for consistency
        checks."""
        where = {"attachment_key": {"$in": list(doc_keys)}} if doc_keys is not None else None
        if doc_keys is not None and not doc_keys:
            return set()
        out: set[str] = set()
        offset = 0
        while True:
            with self.errors():
                got = self.collection.get(
                    where=where, include=["metadatas"], limit=_BATCH, offset=offset
                )
            metas = got.get("metadatas") or [None] * len(got["ids"])
            out.update(_owner(i, m) for i, m in zip(got["ids"], metas, strict=True))
            if len(got["ids"]) < _BATCH:
                return out
            offset += _BATCH

    def vectors(self, chunk_ids: Sequence[str]) -> dict[str, list[list[float]]]:
        """The stored window vectors of these chunks, each chunk's in window order (its
        `#n` suffix): what search compared the query with, for reuse instead of re-embedding."""
        wanted = list(dict.fromkeys(chunk_ids))
        found: dict[str, list[tuple[int, list[float]]]] = {}
        for i in range(0, len(wanted), _BATCH):
            got = self.collection.get(
                where={"chunk_id": {"$in": wanted[i : i + _BATCH]}},
                include=["embeddings", "metadatas"],
            )
            vecs = got.get("embeddings")
            metas = got.get("metadatas") or [None] * len(got["ids"])
            if vecs is None:
                continue
            for vid, vec, meta in zip(got["ids"], vecs, metas, strict=True):
                n = vid.rsplit("#", 1)[1] if "#" in vid else "0"
                order = int(n) if n.isdigit() else 0
                found.setdefault(_owner(vid, meta), []).append((order, list(vec)))
        return {k: [v for _, v in sorted(pairs, key=lambda p: p[0])] for k, pairs in found.items()}

    def query(
        self, embedding: Sequence[float], flt: SearchFilter, n: int
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine distance of its nearest window), nearest first, at most `n`
        chunks, with the filter applied inside Chroma."""
        if n <= 0:
            return []
        with self.errors():
            got = self.collection.query(
                query_embeddings=[list(embedding)],
                n_results=n * _WINDOWS_PER_CHUNK,
                where=chroma_where(flt),
                include=["distances", "metadatas"],
            )
        ids = got["ids"][0] if got["ids"] else []
        dists = (got.get("distances") or [[]])[0] or [0.0] * len(ids)
        metas = (got.get("metadatas") or [[]])[0] or [None] * len(ids)
        best: dict[str, float] = {}
        for vid, dist, meta in zip(ids, dists, metas, strict=False):
            best.setdefault(_owner(vid, meta), float(dist))  # nearest first: keep the first
        return list(best.items())[:n]


def _owner(vector_id: str, meta: Any) -> str:
    """The chunk a vector belongs to (its metadata; else the id before any `#n`)."""
    if isinstance(meta, dict) and meta.get("chunk_id"):
        return str(meta["chunk_id"])
    return vector_id.split("#", 1)[0]
