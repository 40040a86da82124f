"""`Index`: the one door to a data home's index (catalogue, BM25, vectors, bundles).

Layout under the data home:
    bundles/v<N>/<sha256>/   converted bundles cached by content (file bytes, note HTML)
                             and converter version N
    documents/<doc_key>/     the bundle of one attachment/note with its item's metadata applied
    index/catalog.sqlite     items, collections, documents, chunks, FTS5 (source of truth)
    index/chroma/            Chroma PersistentClient (embedded mode)
Opening an index never loads an embedding model: that happens on the first dense search or
indexing run.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from zocrates_nb.config import Settings, load_settings
from zocrates_nb.errors import ZocratesError
from zocrates_nb.index import health
from zocrates_nb.index.dedup import distinct
from zocrates_nb.index.dense import DenseStore
from zocrates_nb.index.embedder import (
    DEFAULT_MODEL,
    REMOTE_PREFIX,
    EmbeddingBackend,
    embedding_identity,
    make_embedder,
)
from zocrates_nb.index.fusion import fuse
from zocrates_nb.index.health import REBUILD, VECTORS_KEY, IndexDamaged
from zocrates_nb.index.lexical import Catalog
from zocrates_nb.index.model import (
    Chunk,
    DocumentRecord,
    Hit,
    ItemRecord,
    SearchFilter,
)
from zocrates_nb.ingest import bundle as ingest_bundle
from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.library.paths import UnsafePath, within

try:  # POSIX advisory locks; elsewhere only one indexer per home is assumed.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

INDEX_DIR = "index"
CATALOG_FILE = "catalog.sqlite"
CHROMA_DIR = "chroma"
BUNDLES_DIR = "bundles"
DOCUMENTS_DIR = "documents"
LOCK_FILE = "indexer.lock"

SearchMode = Literal["hybrid", "bm25", "dense"]
_KIND_ORDER = {"pdf": 0, "html": 1, "markdown": 2, "text": 3, "note": 4}


GENERATION_KEY = "generation"  # catalogue meta: changes whenever a writer lets go of the index


# When the last indexing run began and ended (catalogue meta): a start after the last end is
# a run that stopped before it finished.
RUN_STARTED, RUN_FINISHED = "run_started", "run_finished"


class IndexBusyError(ZocratesError, RuntimeError):
    """Another process is indexing this data home (one writer at a time)."""


class Index:
    """Hybrid (BM25 + dense, fusion.py) search over one data home, plus catalogue look-ups."""

    def __init__(self, home: Path, settings: Settings, *, repair: bool = False) -> None:
        self.home = Path(home)
        self.settings = settings
        self.index_dir = self.home / INDEX_DIR
        self.repairs: list[str] = []  # what opening had to rebuild (the next report says so)
        self._dense: DenseStore | None = None
        self._generation: str | None = None  # the writers' generation `_dense` was opened at
        self._embedder: EmbeddingBackend | None = None
        try:
            self.catalog = Catalog(self.index_dir / CATALOG_FILE)
            self.purge_unfinished()
        except IndexDamaged as e:
            if not repair:
                raise
            if hasattr(self, "catalog"):
                self.catalog.close()
            self._discard_catalog()
            self.catalog = Catalog(self.index_dir / CATALOG_FILE)
            self.reset_vectors()
            self.repairs.append(health.catalog_rebuilt(e.reason))

    @classmethod
    def open(cls, home: Path, settings: Settings | None = None, *, repair: bool = False) -> Index:
        """The index of a data home. `repair` (for indexing): a catalogue too damaged to open
        is replaced by an empty one, refilled by the indexing run from the cached bundles."""
        home = Path(home).expanduser()
        return cls(home, settings if settings is not None else load_settings(home),
                   repair=repair)  # fmt: skip

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.catalog.close()
        self._dense = None

    # -- parts ----------------------------------------------------------------------------

    @property
    def model_name(self) -> str:
        """The embedding model of the stored vectors (the configured one before any run)."""
        if self.catalog.outdated:
            return self.configured_model
        return self.catalog.get_meta("embedding_model") or self.configured_model

    @property
    def configured_model(self) -> str:
        """The identity of the configured embedding (a model name, or `openai-compatible:…`)."""
        return embedding_identity(self.settings.index)

    @property
    def offline_model_name(self) -> str:
        """A local sentence model for the offline engine: the index's own when it is local."""
        name = self.model_name
        return DEFAULT_MODEL if name.startswith(REMOTE_PREFIX) else name

    @property
    def embedder(self) -> EmbeddingBackend:
        """The backend that produced the stored vectors (queries must match them)."""
        if self._embedder is None or self._embedder.name != self.model_name:
            self._embedder = make_embedder(self.settings.index, self.model_name)
        return self._embedder

    @property
    def dense_open(self) -> bool:
        """Whether the vector store is open in this process (a first search opens it)."""
        return self._dense is not None

    @property
    def dense(self) -> DenseStore:
        """The vector store, reopened when another process wrote the index since: embedded
        Chroma keeps the vectors it loaded in memory and never sees another process's writes
        (nor should a writer persist such a stale copy over them)."""
        self.follow_replacement()
        generation = self.catalog.generation()
        if self._dense is not None and generation != self._generation:
            self._reopen_dense()
        if self._dense is None:
            self._dense = DenseStore(
                self.settings.index.chroma, self.index_dir / CHROMA_DIR, self.model_name
            )
            self._generation = generation
        return self._dense

    @property
    def dense_where(self) -> str:
        """Where the vectors are: a folder, or a Chroma server's address."""
        chroma = self.settings.index.chroma
        if chroma.mode == "server":
            return f"http://{chroma.host}:{chroma.port}/{chroma.collection}"
        return str(self.index_dir / CHROMA_DIR)

    def follow_replacement(self) -> None:
        """Reopen the catalogue when another process replaced a damaged one (see health.py):
        this process would otherwise read the old file for good."""
        if self.catalog.replaced():
            with contextlib.suppress(Exception):
                self.catalog.close()
            self.catalog = Catalog(self.index_dir / CATALOG_FILE)
            self._reopen_dense()

    def _discard_catalog(self) -> None:
        path = self.index_dir / CATALOG_FILE
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)

    def replace_catalog(self) -> None:
        """A damaged catalogue gives way to an empty one (derived data: the indexing run fills
        it again from the cached bundles); the vectors go with it, their chunks gone."""
        with contextlib.suppress(Exception):
            self.catalog.close()
        self._discard_catalog()
        self.catalog = Catalog(self.index_dir / CATALOG_FILE)
        self.reset_vectors()

    def reset_vectors(self) -> None:
        """An empty vector store: a server's collection dropped, an embedded store's folder
        (derived data only) removed and created anew."""
        if self.settings.index.chroma.mode == "server":
            self._dense = None
            self.dense.reset()
            return
        self._reopen_dense()
        shutil.rmtree(within(self.index_dir, CHROMA_DIR), ignore_errors=True)
        self._dense = None

    def _reopen_dense(self) -> None:
        self._dense = None
        if self.settings.index.chroma.mode != "server":
            from chromadb.api.client import SharedSystemClient

            SharedSystemClient.clear_system_cache()  # Chroma's per-path clients, in-process

    def bundle_cache_dir(self, sha256: str) -> Path:
        """Cached bundle of some content, per converter version (an upgrade converts anew)."""
        root = self.home / BUNDLES_DIR / f"v{ingest_bundle.CONVERTER_VERSION}"
        return within(root, sha256, where="the bundle cache")

    def prune_bundle_cache(self) -> int:
        """Delete bundles cached by other converter versions (this version never reads them,
        and a library's bundles take as much room as its text); how many entries went."""
        root = self.home / BUNDLES_DIR
        current = self.bundle_cache_dir("-").parent.name
        gone = 0
        for entry in root.iterdir() if root.is_dir() else ():
            if entry.name != current:
                if entry.is_dir() and not entry.is_symlink():  # a link: only the link goes
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
                gone += 1
        return gone

    def document_dir(self, doc_key: str) -> Path:
        """Where a document's bundle is kept: `documents/<doc_key>`, checked to be there (a
        key from library data is never trusted as a path: `UnsafePath` otherwise)."""
        return within(self.home / DOCUMENTS_DIR, doc_key, where=f"{self.home / DOCUMENTS_DIR}")

    def run_state(self) -> Literal["running", "interrupted", ""]:
        """Whether an indexing run holds this index now (`running`: in any process), or the
        last one stopped before it finished (`interrupted`: killed, the machine off), else ""."""
        lock = self.index_dir / LOCK_FILE
        if fcntl is not None and lock.is_file():
            with open(lock) as fh:
                try:
                    fcntl.flock(fh, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    return "running"
                fcntl.flock(fh, fcntl.LOCK_UN)
        try:
            started = self.catalog.get_meta(RUN_STARTED) or ""
            finished = self.catalog.get_meta(RUN_FINISHED) or ""
        except Exception:  # an unreadable catalogue is said by status and doctor themselves
            return ""
        return "interrupted" if started > finished else ""

    @contextlib.contextmanager
    def writer_lock(self, *, wait: bool = False) -> Iterator[None]:
        """Exclusive right to write this index (held by `index_library`), across processes.

        The holder's pid is written in the lock file for the refusal's message. On release the
        catalogue's generation changes, so every reader (a kernel, the Jupyter server) reopens
        its vectors at its next search and sees the new index. A killed holder's lock goes with
        its process (flock).
        """
        self.index_dir.mkdir(parents=True, exist_ok=True)
        with open(self.index_dir / LOCK_FILE, "a+") as fh:
            if fcntl is not None:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
                except BlockingIOError:
                    fh.seek(0)
                    pid = fh.read().strip()
                    who = f" (pid {pid})" if pid.isdigit() else ""
                    raise IndexBusyError(
                        f"The index of {self.home} is being updated by another process{who}; "
                        "try again when it finishes."
                    ) from None
                fh.seek(0)
                fh.truncate()
                fh.write(str(os.getpid()))
                fh.flush()
            if self._dense is not None and self.catalog.generation() != self._generation:
                self._reopen_dense()  # write over what is on disk now, never a stale copy
            try:
                yield
            finally:
                generation = uuid.uuid4().hex
                with contextlib.suppress(Exception):  # readers then reopen at their next use
                    self.catalog.set_meta(GENERATION_KEY, generation)
                    if self._dense is not None:
                        self._generation = generation  # this process's copy is current
                if fcntl is not None:
                    fh.seek(0)
                    fh.truncate()
                    fcntl.flock(fh, fcntl.LOCK_UN)

    def rebuild(self) -> None:
        """Start the derived data afresh in the current catalogue format (held by the writer).

        The vectors go first, so an interrupted rebuild leaves the catalogue outdated and is
        redone. The bundle cache, documents/, settings and sessions stay: the next indexing run
        re-chunks and re-embeds from cached bundles without converting any paper again.
        """
        self._dense = None
        self.dense.reset()
        self.catalog.rebuild()
        self._dense = None

    def purge_unfinished(self) -> list[str]:
        """Drop the vectors of documents left `indexing` by an interrupted run.

        Skipped while another process holds the writer lock (its documents are in flight), and
        for an outdated catalogue (its rebuild drops every vector).
        """
        if self.catalog.outdated:
            return []
        keys = self.catalog.doc_keys_with_status("indexing")
        if not keys:
            return []
        try:
            with self.writer_lock():
                self.dense.delete_documents(keys)
        except IndexBusyError:
            return []
        return keys

    # -- search ---------------------------------------------------------------------------

    def search(
        self,
        query: str,
        flt: SearchFilter | None = None,
        limit: int = 10,
        *,
        mode: SearchMode = "hybrid",
        merge_twins: bool = True,
    ) -> list[Hit]:
        """Best chunks for `query`: BM25 and dense rankings fused (fusion.py), filters inside both,
        near-duplicate passages of a paper merged (see dedup.py) unless `merge_twins` is off:
        a check that ranks papers by their best passage wants every passage (an abstract
        merged into a longer introduction holding it scores lower than it alone)."""
        if mode not in ("hybrid", "bm25", "dense"):
            raise ValueError(f"unknown search mode {mode!r}: use hybrid, bm25 or dense")
        self.follow_replacement()
        flt = flt or SearchFilter()
        if not query.strip() or limit <= 0 or (flt.item_keys is not None and not flt.item_keys):
            return []
        depth = max(50, 5 * limit)
        rankings: dict[str, list[tuple[str, float]]] = {}
        if mode in ("hybrid", "bm25"):
            rankings["bm25"] = self.catalog.bm25_scored(query, flt, depth)
        if mode in ("hybrid", "dense"):
            rankings["dense"] = self._dense_ranking(query, flt, depth)
        fused = fuse(rankings)
        chunks = self.catalog.get_chunks([f.id for f in fused])  # SQLite is the truth
        passes = _checker(flt)
        candidates = (
            Hit(chunk=chunks[f.id], score=f.score, ranks=dict(f.ranks))
            for f in fused
            if f.id in chunks and passes(chunks[f.id])
        )
        if not merge_twins:
            return list(itertools.islice(candidates, limit))
        # A larger twin takes the better place with its score (scores stay best first).
        return distinct(
            candidates,
            lambda h: h.chunk.text,
            limit,
            lambda earlier, later: Hit(chunk=later.chunk, score=earlier.score, ranks=later.ranks),
            lambda h: h.chunk.item_key,
        )

    def _dense_ranking(
        self, query: str, flt: SearchFilter, depth: int
    ) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity of its nearest window), nearest first."""
        if not self.catalog.has_chunks():  # not count(*): that scans every chunk row
            return []
        vector = self.embedder.embed_query(query)
        found = self.dense.query(vector, flt, depth)
        if not found and self.dense.count_vectors() == 0:  # never silently BM25 alone
            raise IndexDamaged(f"The vector store {self.dense.where} is empty while the "
                               f"catalogue holds chunks: {REBUILD}.")
        return [(chunk_id, 1.0 - dist) for chunk_id, dist in found]

    # -- catalogue ------------------------------------------------------------------------

    def item(self, key: str) -> ItemRecord | None:
        return self.catalog.item(key)

    def items(self) -> list[ItemRecord]:
        return self.catalog.items()

    def documents(self, item_key: str | None = None) -> list[DocumentRecord]:
        """Documents of an item (or a standalone document itself); all when None."""
        return self.catalog.documents(item_key)

    def resolve_doc_keys(self, key: str) -> list[str]:
        """Parent item key → its indexed documents (PDF first); attachment/note key → itself."""
        doc = self.catalog.document(key)
        if doc is not None:
            return [key]
        docs = [d for d in self.catalog.documents(key) if d.status == "done"]
        docs.sort(key=lambda d: (_KIND_ORDER.get(d.kind, 9), d.doc_key))
        return [d.doc_key for d in docs]

    def known_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of `keys` name an item, a standalone note or attachment, or a document."""
        wanted = json.dumps(list(dict.fromkeys(keys)))
        rows = self.catalog.query(
            "SELECT key AS k FROM items WHERE key IN (SELECT value FROM json_each(?)) UNION "
            "SELECT doc_key FROM documents WHERE doc_key IN (SELECT value FROM json_each(?))",
            (wanted, wanted),
        )
        return {r["k"] for r in rows}

    def bundle(self, doc_key: str) -> Bundle:
        """The bundle of one document, with its item's metadata (title, authors, abstract)."""
        try:
            directory = self.document_dir(doc_key)
        except UnsafePath:
            raise KeyError(f"no indexed document {doc_key!r}") from None
        if not Bundle.exists(directory):
            raise KeyError(f"no indexed document {doc_key!r}")
        return Bundle.load(directory)

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self.catalog.get_chunks([chunk_id]).get(chunk_id)

    def chunks(self, chunk_ids: list[str]) -> list[Chunk]:
        """Chunks by id, in the order asked (unknown ids left out)."""
        got = self.catalog.get_chunks(chunk_ids)
        return [got[i] for i in chunk_ids if i in got]

    def chunks_of(self, doc_key: str) -> list[Chunk]:
        return self.catalog.chunks_of(doc_key)

    def chunks_intersecting(self, doc_key: str, line_start: int, line_end: int) -> list[str]:
        """Ids of the chunks of a document whose line range meets line_start..line_end."""
        return self.catalog.chunks_intersecting(doc_key, line_start, line_end)

    def collection_paths(self) -> dict[str, str]:
        """Collection key → 'Parent/Child' path."""
        cols = {k: (name, parent) for k, name, parent in self.catalog.collections()}

        def path(key: str) -> str:
            parts: list[str] = []
            cur: str | None = key
            seen: set[str] = set()
            while cur and cur in cols and cur not in seen:
                seen.add(cur)
                parts.append(cols[cur][0])
                cur = cols[cur][1]
            return "/".join(reversed(parts))

        return {k: path(k) for k in cols}

    def collection_item_keys(self, names_or_keys: list[str]) -> set[str]:
        """Keys of the items (and standalone notes/attachments) filed in these collections.

        A collection includes its sub-collections; each entry matches a key, a name or a
        'Parent/Child' path, case-insensitively. Unknown → ValueError naming the known ones.
        """
        paths = self.collection_paths()
        parents = {k: parent for k, _name, parent in self.catalog.collections()}
        names = {k: name for k, name, _parent in self.catalog.collections()}
        chosen: set[str] = set()
        for wanted in names_or_keys:
            w = wanted.strip().strip("/").casefold()
            keys = [
                k
                for k in paths
                if k == wanted.strip() or w in (k.casefold(), names[k].casefold(),
                                                paths[k].casefold())
            ]
            if not keys:
                known = ", ".join(sorted(paths.values(), key=str.casefold)) or "(none)"
                raise ValueError(f"unknown collection {wanted!r}; known collections: {known}")
            chosen.update(keys)
        grown = True
        while grown:
            grown = False
            for k, parent in parents.items():
                if parent in chosen and k not in chosen:
                    chosen.add(k)
                    grown = True
        return {it.key for it in self.catalog.items() if chosen & set(it.collections)}

    def status(self) -> dict[str, Any]:
        """Counts, sizes and the vectors checked against the chunks, without loading any
        embedding model."""
        self.follow_replacement()
        by_status: dict[str, int] = {}
        for row in self.catalog.query(
            "SELECT status, count(*) AS n FROM documents GROUP BY status"
        ):
            by_status[row["status"]] = int(row["n"])
        items = self.catalog.query(
            "SELECT count(*) AS n FROM items WHERE type NOT IN ('note', 'attachment')"
        )[0]["n"]
        last = self.catalog.query("SELECT max(indexed_at) AS t FROM documents")[0]["t"]
        chroma = self.settings.index.chroma
        out: dict[str, Any] = {
            "home": str(self.home),
            "items": int(items),
            "documents": by_status,
            "chunks": self.catalog.chunk_count(),
            "vectors": _vectors(self),
            "problems": _vector_problems(self),
            "last_indexed": last,
            "embedding_model": self.model_name,
            "chroma_mode": chroma.mode,
            "chroma": self.dense_where,
            "sizes": {
                **self.catalog.sizes(),
                "chroma": dir_size(self.index_dir / CHROMA_DIR),
                "bundles": dir_size(self.home / BUNDLES_DIR),
                "documents": dir_size(self.home / DOCUMENTS_DIR),
            },
        }
        return out


def _vector_problems(index: Index) -> list[str]:
    """Cheap checks of the vectors against the chunks (a count each): what `status` shows."""
    chunks = index.catalog.chunk_count()
    try:
        vectors = index.dense.count_vectors()
    except ZocratesError as e:  # damaged, or a Chroma server that does not answer
        return [str(e)]
    stored = index.catalog.get_meta(VECTORS_KEY)
    if vectors < chunks:  # every chunk has at least one vector
        return [f"The vector store holds {vectors:,} vectors for {chunks:,} chunks, so dense "
                f"search misses papers: {REBUILD.replace('rebuild it', 'rebuild them')}."]
    if stored is not None and stored.isdigit() and int(stored) != vectors:
        return [f"The vector store holds {vectors:,} vectors where the last indexing run left "
                f"{int(stored):,}: run `zocrates-nb index` to check and repair it."]
    return []


def _vectors(index: Index) -> int | None:
    try:
        return index.dense.count_vectors()
    except ZocratesError:
        return None


def _checker(flt: SearchFilter) -> Callable[[Chunk], bool]:
    """The filter checked again on SQLite's rows (Chroma metadata could be stale)."""
    keys = set(flt.item_keys) if flt.item_keys is not None else None
    types = set(flt.chunk_types) if flt.chunk_types is not None else None
    excluded = set(flt.exclude_chunk_ids)

    def passes(chunk: Chunk) -> bool:
        if keys is not None and chunk.item_key not in keys and chunk.attachment_key not in keys:
            return False
        if types is not None and chunk.chunk_type not in types:
            return False
        return chunk.chunk_id not in excluded

    return passes


def dir_size(path: Path) -> int:
    """Bytes of the files under `path` (files that vanish meanwhile are skipped)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(root) / name).stat().st_size
    return total
