"""The catalogue's format: its schema, its version, and how a row reads back as a record.

Kept apart from `lexical.Catalog` (which reads and writes the file) so the format, the one thing
that needs a version bump when it changes, is read in one place.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import fields

from zocrates_nb.index.model import Chunk, DocumentRecord, ItemRecord

CATALOGUE_VERSION = 2
"""The format of catalog.sqlite, kept in its `PRAGMA user_version`.

Bump it with any change to `SCHEMA` (a table, column, index, trigger, the FTS5 columns or
tokenizer) or to what a stored column means; every table belongs in `SCHEMA`, which is what a
new file and a rebuilt one get. A catalogue of another version is never read: `status`,
`search` and `ask` say so until `zocrates-nb index` rebuilds it and the vectors from the cached
bundles (no paper is converted again; bundles, settings and sessions are kept). A catalogue
newer than the code is refused. A change to how chunks are cut that keeps the columns bumps
`CHUNKER_VERSION` (index/chunking.py) instead: documents then re-chunk one by one.

History: 1 = the first release (user_version left at 0, `meta.schema_version` "1");
2 = the version kept in user_version.
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    key TEXT PRIMARY KEY,
    type TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    authors TEXT NOT NULL DEFAULT '[]',
    year INTEGER,
    date TEXT NOT NULL DEFAULT '',
    doi TEXT NOT NULL DEFAULT '',
    abstract TEXT NOT NULL DEFAULT '',
    venue TEXT NOT NULL DEFAULT '',
    url TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',
    collections TEXT NOT NULL DEFAULT '[]',
    version TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS collections (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    parent_key TEXT
);
CREATE TABLE IF NOT EXISTS documents (
    doc_key TEXT PRIMARY KEY,
    item_key TEXT NOT NULL,
    kind TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    file TEXT NOT NULL DEFAULT '',
    sha256 TEXT,
    file_size INTEGER,
    file_mtime_ns INTEGER,
    version TEXT NOT NULL DEFAULT '',
    fingerprint TEXT,           -- of the content currently indexed (NULL: none)
    attempt_fingerprint TEXT,   -- of the last attempt that failed (NULL: last attempt ok)
    status TEXT NOT NULL,       -- done | indexing | error | skipped
    error TEXT NOT NULL DEFAULT '',
    bundle_dir TEXT NOT NULL DEFAULT '',
    n_chunks INTEGER NOT NULL DEFAULT 0,
    indexed_at TEXT
);
CREATE INDEX IF NOT EXISTS documents_item ON documents(item_key);
CREATE INDEX IF NOT EXISTS documents_status ON documents(status);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,     -- stable rowid for the external-content FTS table
    chunk_id TEXT NOT NULL UNIQUE,
    item_key TEXT NOT NULL,
    attachment_key TEXT NOT NULL,
    line_start INTEGER NOT NULL,
    line_end INTEGER NOT NULL,
    section TEXT NOT NULL DEFAULT '',
    section_id TEXT NOT NULL DEFAULT '',
    chunk_type TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    authors TEXT NOT NULL DEFAULT '[]',
    year INTEGER,
    page INTEGER,
    page_end INTEGER,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(attachment_key, line_start);
CREATE INDEX IF NOT EXISTS chunks_item ON chunks(item_key);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    title, section, text,
    content='chunks', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts(rowid, title, section, text)
    VALUES (new.id, new.title, new.section, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, section, text)
    VALUES ('delete', old.id, old.title, old.section, old.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, title, section, text)
    VALUES ('delete', old.id, old.title, old.section, old.text);
    INSERT INTO chunks_fts(rowid, title, section, text)
    VALUES (new.id, new.title, new.section, new.text);
END;
"""


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def split_script(script: str) -> list[str]:
    """Statements of the schema script (triggers hold `;` inside BEGIN … END)."""
    out: list[str] = []
    buf: list[str] = []
    for line in script.strip().splitlines():
        buf.append(line)
        joined = "\n".join(buf).strip()
        if sqlite3.complete_statement(joined):
            out.append(joined)
            buf = []
    return out


def item_of(r: sqlite3.Row) -> ItemRecord:
    return ItemRecord(
        key=r["key"],
        item_type=r["type"],
        title=r["title"],
        authors=json.loads(r["authors"]),
        year=r["year"],
        date=r["date"],
        doi=r["doi"],
        abstract=r["abstract"],
        venue=r["venue"],
        url=r["url"],
        tags=json.loads(r["tags"]),
        collections=json.loads(r["collections"]),
        version=r["version"],
    )


def document_of(r: sqlite3.Row) -> DocumentRecord:
    return DocumentRecord(**{f.name: r[f.name] for f in fields(DocumentRecord)})


def chunk_of(r: sqlite3.Row) -> Chunk:
    """Columns are named after the fields; authors is stored as JSON."""
    values = {f.name: r[f.name] for f in fields(Chunk)}
    return Chunk(**{**values, "authors": json.loads(values["authors"])})
