"""The catalogue: one SQLite file holding items, collections, documents, chunks and BM25.

SQLite is the source of truth of the index: a chunk exists when its row exists here, and chunk
rows (with their FTS rows, kept in step by triggers) are only written in the transaction that
marks their document `done`. Chroma holds vectors for these rows and nothing else of value.

Everything in the file is derived from the library and the bundle cache, so a file in another
format (`CATALOGUE_VERSION`) is not migrated: it is rebuilt by the next indexing run.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from zocrates_nb.config import ConfigError
from zocrates_nb.index.catalog_schema import (
    CATALOGUE_VERSION,
    SCHEMA,
    chunk_of,
    document_of,
    item_of,
    quote_name,
    split_script,
)
from zocrates_nb.index.damage import damage_reason, is_damage
from zocrates_nb.index.fts import filter_sql, fts_query, query_words
from zocrates_nb.index.health import catalog_guard
from zocrates_nb.index.model import Chunk, DocumentRecord, ItemRecord, SearchFilter

# BM25 column weights (title, section, text). The title is repeated on every chunk of a paper,
# which BM25's length normalisation already discounts. Weight 1 against 0.5 before: SciFact train
# nDCG@10 hybrid 0.725 → 0.729; dev recall unchanged (1.5 lost a compound-dev passage).
BM25_WEIGHTS = (1.0, 1.0, 1.0)

# A word in more than half the chunks ("the", "of", the library's own field) adds little to a
# passage's BM25 score (idf < 0.7, a rare word's ≈ 7) while FTS5 scores every chunk holding
# it, so the query leaves it out: on `bench scale`'s 2,000 papers (21,500 chunks) 999 of the
# top 1,000 of 100 SciFact queries stayed and BM25 ran 2.8× faster (with ranking inside FTS).
MAX_DOC_FRACTION = 0.5


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def set_wal(db: sqlite3.Connection, wait: float = 10.0) -> None:
    """Put the catalogue in WAL mode. Two processes opening a new catalogue at once race for
    the change of journal mode, and SQLite answers the loser "database is locked" at once,
    without its busy handler, so the loser tries again for a while."""
    deadline = time.monotonic() + wait
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


class IndexVersionError(ConfigError):
    """The catalogue is in a format this code does not read: older (rebuild it) or newer.

    A ConfigError, as a setting the user must act on, so every surface (CLI, a turn's error
    event, the panel) already prints it as one plain line.
    """


@dataclass
class DocumentState:
    """What the indexer needs to know about a document it indexed before."""

    doc_key: str
    status: str
    fingerprint: str | None
    attempt_fingerprint: str | None
    sha256: str | None
    file_size: int | None
    file_mtime_ns: int | None
    error: str


class Catalog:
    """Typed access to `catalog.sqlite` (WAL; one connection guarded by a lock).

    A catalogue of an older format opens (so that indexing can rebuild it) but every read or
    write raises IndexVersionError until it is rebuilt, here or by another process; a newer
    one is refused on open.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.RLock()
        # Chunks holding a word, by word, for the catalogue state they were counted in.
        self._df: dict[str, int] = {}
        self._df_state: tuple[str | None, int] | None = None  # (generation, newest chunk id)
        self._df_total = 0
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        try:
            with catalog_guard(path):  # a damaged file says so, in one sentence
                set_wal(self._db)
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute("PRAGMA foreign_keys=OFF")
                self._db.execute("PRAGMA busy_timeout=10000")
                self.version = self._stored_version()
                if self.version == 0:  # a new file (or one another process is creating)
                    with self._immediate():
                        if self._stored_version() == 0:
                            self._create()
                    self.version = self._stored_version()
            self._check_not_newer()
        except BaseException:
            self._db.close()
            raise
        self.inode = path.stat().st_ino

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def replaced(self) -> bool:
        """Whether another file now stands at this path (`index` replaced a damaged one)."""
        try:
            return self.path.stat().st_ino != self.inode
        except OSError:
            return False

    def quick_check(self) -> str | None:
        """None when SQLite finds the file sound, else what it found (`index` then rebuilds).
        On a connection of its own: this one may hold the pages it read before the damage."""
        try:
            fresh = sqlite3.connect(self.path, timeout=10)
            try:
                row = fresh.execute("PRAGMA quick_check(1)").fetchone()
            finally:
                fresh.close()
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise
            return damage_reason(e)
        return None if row is None or row[0] == "ok" else str(row[0])

    # -- format ---------------------------------------------------------------------------

    @property
    def outdated(self) -> bool:
        """Whether the file is in an older format (looked up again: another process may have
        rebuilt it since this one opened it)."""
        if self.version != CATALOGUE_VERSION:
            with self._lock, catalog_guard(self.path):
                self.version = self._stored_version()
            self._check_not_newer()
        return self.version < CATALOGUE_VERSION

    def rebuild(self) -> None:
        """Drop every table and create the current schema, in one transaction.

        All of it is derived data: the next indexing run fills it again from the library and
        the bundle cache.
        """
        with self._immediate():
            self.version = self._stored_version()
            self._check_not_newer()
            db = self._db
            tables = (
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
                " AND name NOT LIKE 'sqlite%'"
            )
            for name, sql in db.execute(tables).fetchall():
                if str(sql or "").upper().startswith("CREATE VIRTUAL TABLE"):
                    db.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")  # and its shadow tables
            for name, _sql in db.execute(tables).fetchall():
                db.execute(f"DROP TABLE IF EXISTS {quote_name(name)}")
            for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'view'"):
                db.execute(f"DROP VIEW IF EXISTS {quote_name(name)}")
            self._create()
        self.version = CATALOGUE_VERSION

    def _create(self) -> None:
        for statement in split_script(SCHEMA):
            self._db.execute(statement)
        self._db.execute(f"PRAGMA user_version = {CATALOGUE_VERSION}")

    def _stored_version(self) -> int:
        """The file's format; 0 for a new, empty file."""
        version = int(self._db.execute("PRAGMA user_version").fetchone()[0])
        if version == 0 and self._db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone():
            return 1  # the first release kept its version in the meta table only
        return version

    def _check_not_newer(self) -> None:
        if self.version > CATALOGUE_VERSION:
            raise IndexVersionError(
                f"the index in {self.path.parent} was built by a newer version of zocrates-nb "
                f"(catalogue format {self.version}; this version reads {CATALOGUE_VERSION}): "
                "upgrade zocrates-nb, or use another data home (--home)"
            )

    def _require_current(self) -> None:
        if self.outdated:
            raise IndexVersionError(
                f"the index in {self.path.parent} was built by an older version of zocrates-nb; "
                "run `zocrates-nb index` to rebuild it (bundles, settings and sessions are kept)"
            )

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        with self._lock, catalog_guard(self.path):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- access ---------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error), serialised within the process."""
        self._require_current()
        with self._immediate() as db:
            yield db

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        self._require_current()
        with self._lock, catalog_guard(self.path):
            return self._db.execute(sql, params).fetchall()

    # -- meta -----------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        rows = self.query("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0]["value"]) if rows else None

    def generation(self) -> str | None:
        """The writers' generation (`Index.writer_lock` changes it on release): readable in
        any catalogue format, None before the first write."""
        try:
            with self._lock:
                row = self._db.execute(
                    "SELECT value FROM meta WHERE key = 'generation'"
                ).fetchone()
        except sqlite3.Error:
            return None
        return str(row[0]) if row else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- items and collections ------------------------------------------------------------

    def replace_items(self, items: Iterable[ItemRecord], collections: Iterable[Any]) -> int:
        """Make the items and collections tables hold exactly these; returns rows removed."""
        items = list(items)
        with self.transaction() as db:
            db.execute("CREATE TEMP TABLE IF NOT EXISTS keep_items (key TEXT PRIMARY KEY)")
            db.execute("DELETE FROM keep_items")
            for it in items:
                db.execute(
                    "INSERT OR REPLACE INTO items(key, type, title, authors, year, date, doi,"
                    " abstract, venue, url, tags, collections, version)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        it.key, it.item_type, it.title, json.dumps(it.authors), it.year,
                        it.date, it.doi, it.abstract, it.venue, it.url, json.dumps(it.tags),
                        json.dumps(it.collections), it.version,
                    ),
                )
                db.execute("INSERT OR IGNORE INTO keep_items(key) VALUES (?)", (it.key,))
            removed = db.execute(
                "DELETE FROM items WHERE key NOT IN (SELECT key FROM keep_items)"
            ).rowcount
            db.execute("DELETE FROM collections")
            db.executemany(
                "INSERT OR REPLACE INTO collections(key, name, parent_key) VALUES (?,?,?)",
                [(c.key, c.name, c.parent_key) for c in collections],
            )
        return int(removed)

    def item(self, key: str) -> ItemRecord | None:
        rows = self.query("SELECT * FROM items WHERE key = ?", (key,))
        return item_of(rows[0]) if rows else None

    def items(self) -> list[ItemRecord]:
        return [item_of(r) for r in self.query("SELECT * FROM items ORDER BY key")]

    def collections(self) -> list[tuple[str, str, str | None]]:
        rows = self.query("SELECT key, name, parent_key FROM collections ORDER BY name")
        return [(r["key"], r["name"], r["parent_key"]) for r in rows]

    # -- documents --------------------------------------------------------------------------

    def document_states(self) -> dict[str, DocumentState]:
        rows = self.query(
            "SELECT doc_key, status, fingerprint, attempt_fingerprint, sha256, file_size,"
            " file_mtime_ns, error FROM documents"
        )
        return {r["doc_key"]: DocumentState(**dict(r)) for r in rows}

    def documents(self, item_key: str | None = None) -> list[DocumentRecord]:
        if item_key is None:
            rows = self.query("SELECT * FROM documents ORDER BY item_key, doc_key")
        else:
            rows = self.query(
                "SELECT * FROM documents WHERE item_key = ? OR doc_key = ? ORDER BY doc_key",
                (item_key, item_key),
            )
        return [document_of(r) for r in rows]

    def document(self, doc_key: str) -> DocumentRecord | None:
        rows = self.query("SELECT * FROM documents WHERE doc_key = ?", (doc_key,))
        return document_of(rows[0]) if rows else None

    def doc_keys_with_status(self, status: str) -> list[str]:
        rows = self.query("SELECT doc_key FROM documents WHERE status = ?", (status,))
        return [r["doc_key"] for r in rows]

    def record_problem(
        self,
        doc: DocumentRecord,
        *,
        status: str,
        error: str,
        attempt_fingerprint: str | None,
    ) -> None:
        """Note a failed/skipped attempt; a document already indexed keeps its content."""
        with self.transaction() as db:
            row = db.execute(
                "SELECT status FROM documents WHERE doc_key = ?", (doc.doc_key,)
            ).fetchone()
            if row is not None and row["status"] == "done":
                db.execute(
                    "UPDATE documents SET error = ?, attempt_fingerprint = ? WHERE doc_key = ?",
                    (error, attempt_fingerprint, doc.doc_key),
                )
                return
            db.execute(
                "DELETE FROM chunks WHERE attachment_key = ?", (doc.doc_key,)
            )
            db.execute(
                "INSERT OR REPLACE INTO documents(doc_key, item_key, kind, title, file, sha256,"
                " file_size, file_mtime_ns, version, fingerprint, attempt_fingerprint, status,"
                " error, bundle_dir, n_chunks, indexed_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,NULL,?,?,?,'',0,?)",
                (
                    doc.doc_key, doc.item_key, doc.kind, doc.title, doc.file, doc.sha256,
                    doc.file_size, doc.file_mtime_ns, doc.version, attempt_fingerprint, status,
                    error, _now(),
                ),
            )

    def begin_document(self, doc: DocumentRecord) -> None:
        """Mark a document `indexing` and drop its chunks: the first step of a (re)index."""
        self.begin_documents([doc])

    def finish_document(self, doc: DocumentRecord, fingerprint: str, chunks: list[Chunk]) -> None:
        """Write chunks (and, by trigger, their FTS rows) and mark the document done: atomic."""
        self.finish_documents([(doc, fingerprint, chunks)])

    def begin_documents(self, docs: Sequence[DocumentRecord]) -> None:
        """`begin_document` for a group of documents, in one transaction."""
        with self.transaction() as db:
            db.executemany(
                "DELETE FROM chunks WHERE attachment_key = ?", [(d.doc_key,) for d in docs]
            )
            db.executemany(
                "INSERT OR REPLACE INTO documents(doc_key, item_key, kind, title, file, sha256,"
                " file_size, file_mtime_ns, version, fingerprint, attempt_fingerprint, status,"
                " error, bundle_dir, n_chunks, indexed_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,NULL,NULL,'indexing','',?,0,NULL)",
                [
                    (
                        d.doc_key, d.item_key, d.kind, d.title, d.file, d.sha256, d.file_size,
                        d.file_mtime_ns, d.version, d.bundle_dir,
                    )
                    for d in docs
                ],
            )

    def finish_documents(
        self, done: Sequence[tuple[DocumentRecord, str, list[Chunk]]]
    ) -> None:
        """`finish_document` for a group (record, fingerprint, chunks): one transaction, so
        the whole group becomes searchable at once."""
        with self.transaction() as db:
            db.executemany(
                "DELETE FROM chunks WHERE attachment_key = ?", [(d.doc_key,) for d, _f, _c in done]
            )
            db.executemany(
                "INSERT INTO chunks(chunk_id, item_key, attachment_key, line_start, line_end,"
                " section, section_id, chunk_type, title, authors, year, page, page_end, text)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        c.chunk_id, c.item_key, c.attachment_key, c.line_start, c.line_end,
                        c.section, c.section_id, c.chunk_type, c.title, json.dumps(c.authors),
                        c.year, c.page, c.page_end, c.text,
                    )
                    for _d, _f, chunks in done
                    for c in chunks
                ],
            )
            now = _now()
            db.executemany(
                "INSERT OR REPLACE INTO documents(doc_key, item_key, kind, title, file, sha256,"
                " file_size, file_mtime_ns, version, fingerprint, attempt_fingerprint, status,"
                " error, bundle_dir, n_chunks, indexed_at)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,NULL,'done','',?,?,?)",
                [
                    (
                        d.doc_key, d.item_key, d.kind, d.title, d.file, d.sha256, d.file_size,
                        d.file_mtime_ns, d.version, fingerprint, d.bundle_dir, len(chunks), now,
                    )
                    for d, fingerprint, chunks in done
                ],
            )

    def touch_document(self, doc: DocumentRecord) -> None:
        """Refresh the descriptive columns of an unchanged document (mtime…); clear errors."""
        with self.transaction() as db:
            db.execute(
                "UPDATE documents SET item_key = ?, title = ?, file = ?, file_size = ?,"
                " file_mtime_ns = ?, version = ?, error = '', attempt_fingerprint = NULL"
                " WHERE doc_key = ?",
                (
                    doc.item_key, doc.title, doc.file, doc.file_size, doc.file_mtime_ns,
                    doc.version, doc.doc_key,
                ),
            )

    def doc_keys_of_chunks(self, chunk_ids: Sequence[str]) -> set[str]:
        rows = self.query("SELECT DISTINCT attachment_key FROM chunks WHERE chunk_id IN "
                          "(SELECT value FROM json_each(?))", (json.dumps(list(chunk_ids)),))
        return {r["attachment_key"] for r in rows}

    def mark_indexing(self, doc_keys: Sequence[str]) -> None:
        """First step of removing documents: their chunks go, their vectors are then purged."""
        with self.transaction() as db:
            for key in doc_keys:
                db.execute("DELETE FROM chunks WHERE attachment_key = ?", (key,))
                db.execute(
                    "UPDATE documents SET status = 'indexing', fingerprint = NULL, n_chunks = 0"
                    " WHERE doc_key = ?",
                    (key,),
                )

    def delete_documents(self, doc_keys: Sequence[str]) -> None:
        with self.transaction() as db:
            for key in doc_keys:
                db.execute("DELETE FROM chunks WHERE attachment_key = ?", (key,))
                db.execute("DELETE FROM documents WHERE doc_key = ?", (key,))

    # -- chunks ---------------------------------------------------------------------------

    def chunk_count(self) -> int:
        return int(self.query("SELECT count(*) AS n FROM chunks")[0]["n"])

    def has_chunks(self) -> bool:
        """Whether any chunk exists, in constant time (a search asks it every time)."""
        return bool(self.query("SELECT EXISTS (SELECT 1 FROM chunks) AS x")[0]["x"])

    def chunk_ids(self, doc_key: str | None = None) -> list[str]:
        if doc_key is None:
            rows = self.query("SELECT chunk_id FROM chunks ORDER BY chunk_id")
        else:
            rows = self.query(
                "SELECT chunk_id FROM chunks WHERE attachment_key = ? ORDER BY line_start, id",
                (doc_key,),
            )
        return [r["chunk_id"] for r in rows]

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        if not chunk_ids:
            return {}
        rows = self.query(
            "SELECT * FROM chunks WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(chunk_ids)),),
        )
        return {r["chunk_id"]: chunk_of(r) for r in rows}

    def chunks_of(self, doc_key: str) -> list[Chunk]:
        rows = self.query(
            "SELECT * FROM chunks WHERE attachment_key = ? ORDER BY chunk_id", (doc_key,)
        )
        return [chunk_of(r) for r in rows]

    def chunks_intersecting(self, doc_key: str, line_start: int, line_end: int) -> list[str]:
        rows = self.query(
            "SELECT chunk_id FROM chunks WHERE attachment_key = ? AND line_start <= ?"
            " AND line_end >= ? ORDER BY chunk_id",
            (doc_key, line_end, line_start),
        )
        return [r["chunk_id"] for r in rows]

    def bm25(self, text: str, flt: SearchFilter, limit: int) -> list[str]:
        """Chunk ids best first by BM25 (see `bm25_scored`)."""
        return [chunk_id for chunk_id, _ in self.bm25_scored(text, flt, limit)]

    def bm25_scored(self, text: str, flt: SearchFilter, limit: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score, higher better) best first, with the filter applied inside
        the query.

        Across the library the query drops its commonest words (`discriminating`); when the
        rest match fewer than `limit` chunks, the whole query fills the list after them.
        Inside chosen papers every word counts: there a word common in the library may be
        the one that matches."""
        every = query_words(text)
        if not every or limit <= 0:
            return []
        words = every if flt.item_keys is not None else self.discriminating(every)
        hits = self._bm25(words, flt, limit)
        if len(hits) < limit and len(words) < len(every):
            have = {i for i, _ in hits}
            more = [h for h in self._bm25(every, flt, limit) if h[0] not in have]
            hits += more[: limit - len(hits)]
        return hits

    def _bm25(self, words: Sequence[str], flt: SearchFilter, limit: int) -> list[tuple[str, float]]:
        where, params = filter_sql(flt, "c")
        w = BM25_WEIGHTS
        score = f"bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]})"
        if where:
            sql = (
                f"SELECT c.chunk_id, {score} AS s FROM chunks_fts"
                " JOIN chunks c ON c.id = chunks_fts.rowid"
                f" WHERE chunks_fts MATCH ? {where} ORDER BY s, c.id LIMIT ?"
            )
        else:  # rank inside the FTS table, then join the few kept (not every match)
            sql = (
                f"SELECT c.chunk_id, f.s FROM (SELECT rowid AS id, {score} AS s FROM chunks_fts"
                " WHERE chunks_fts MATCH ? ORDER BY s, rowid LIMIT ?) f"
                " JOIN chunks c ON c.id = f.id ORDER BY f.s, f.id"
            )
        rows = self.query(sql, [fts_query(words), *params, limit])
        return [(r["chunk_id"], -float(r["s"])) for r in rows]  # FTS5's bm25(): lower is better

    def has_phrase(self, phrase: str, flt: SearchFilter) -> bool:
        """Whether the words of `phrase` stand together, in order, in a chunk ("lines of
        code"; stemmed as the index is, so "line of code" too)."""
        words = query_words(phrase)
        if not words:
            return False
        where, params = filter_sql(flt, "c")
        sql = ("SELECT 1 FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
               f" WHERE chunks_fts MATCH ? {where} LIMIT 1")  # fmt: skip
        return bool(self.query(sql, ['"' + " ".join(words) + '"', *params]))

    def discriminating(self, words: Sequence[str]) -> list[str]:
        """`words` without those in more than `MAX_DOC_FRACTION` of the chunks (all of them
        when every one is that common: a query of common words must still rank)."""
        if not words:
            return []
        generation = self.generation()
        with self._lock, catalog_guard(self.path):  # max(id): one index step; a write moves it
            newest = self._db.execute("SELECT max(id) FROM chunks").fetchone()[0]
            state = (generation, int(newest or 0))
            if state != self._df_state:
                self._df, self._df_state, self._df_total = {}, state, self.chunk_count()
            for w in words:
                if w not in self._df:
                    row = self._db.execute(
                        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (f'"{w}"',)
                    ).fetchone()
                    self._df[w] = int(row[0])
            ceiling = MAX_DOC_FRACTION * self._df_total
            kept = [w for w in words if self._df[w] <= ceiling]
        return kept or list(words)

    def sizes(self) -> dict[str, int]:
        out = {}
        for suffix in ("", "-wal"):
            p = Path(str(self.path) + suffix)
            out["catalog" + suffix.replace("-", "_")] = p.stat().st_size if p.exists() else 0
        return out
