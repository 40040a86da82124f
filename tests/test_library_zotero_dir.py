"""Reading the real Zotero data directory built from the corpus (../shared/corpus)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import pytest
from conftest import ZOTERO_DIR, corpus_path

from zocrates_nb.library import Item, Library, LibraryError, read_zotero_dir
from zocrates_nb.library.zotero_dir import open_snapshot

pytestmark = pytest.mark.corpus


def _need_corpus() -> None:
    corpus_path("zotero-library", "zotero.sqlite")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def library() -> Library:
    _need_corpus()
    return read_zotero_dir(ZOTERO_DIR)


@pytest.fixture(scope="module")
def manifest() -> dict[str, dict[str, Any]]:
    papers = json.loads(corpus_path("papers", "manifest.json").read_text(encoding="utf-8"))
    return {p["title"]: p for p in papers}


@pytest.fixture(scope="session")
def legacy_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The same library as a pre-5.0.8x database (note=1, journalArticle=4, attachment=14).

    Built without the full-text index (pypdf over 37 PDFs: ~15 s CPU; it has nothing to do
    with type ids) and on tmpfs when there is one: the script's SQLite fsyncs take 20 s+
    on a busy disk and 0.3 s in RAM.
    """
    _need_corpus()
    build_script = corpus_path("build_zotero_library.py")

    def build(out: Path) -> Path:
        flags = ["--legacy-type-ids", "--no-fulltext", "--copy", "--out", str(out)]
        subprocess.run(
            [sys.executable, str(build_script), *flags],
            check=True,
            capture_output=True,
            timeout=600,
        )
        return out

    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        with tempfile.TemporaryDirectory(dir=shm, prefix="zocrates-legacy-") as tmp:
            yield build(Path(tmp) / "zotero")
    else:
        yield build(tmp_path_factory.mktemp("legacy") / "zotero")


@pytest.fixture()
def db_copy(tmp_path: Path) -> Path:
    """A writable copy of zotero.sqlite (no storage/), for edits Zotero itself would make."""
    _need_corpus()
    data_dir = tmp_path / "Zotero"
    data_dir.mkdir()
    shutil.copyfile(ZOTERO_DIR / "zotero.sqlite", data_dir / "zotero.sqlite")
    return data_dir


def by_title(library: Library, title: str) -> Item:
    return next(i for i in library.items.values() if i.title == title)


def test_regular_items_and_types(library: Library) -> None:
    assert len(library.items) == 37
    assert Counter(i.item_type for i in library.items.values()) == {
        "conferencePaper": 19,
        "journalArticle": 12,
        "report": 3,
        "preprint": 3,
    }
    assert library.source == f"zotero-dir:{ZOTERO_DIR}"


def test_metadata_matches_the_manifest(
    library: Library, manifest: dict[str, dict[str, Any]]
) -> None:
    assert {i.title for i in library.items.values()} == set(manifest)
    for item in library.items.values():
        paper = manifest[item.title]
        assert item.authors == paper["authors"], item.title
        assert item.date == paper["date"]  # the human part of '2017-12-00 2017-12'
        assert item.year == paper["year"]
        assert item.doi == (paper.get("doi") or "")
        assert item.item_type == paper["item_type"]


def test_fields_venue_and_version(library: Library) -> None:
    lib = library
    paxos = by_title(lib, "Paxos Made Simple")
    assert paxos.venue == "ACM SIGACT News"
    assert paxos.fields["volume"] == "32" and paxos.fields["pages"] == "51-58"
    assert paxos.abstract.startswith("The Paxos algorithm")
    assert "classic" in paxos.tags and "paxos" in paxos.tags
    # never synced (version 0): the marker still carries dateModified
    assert paxos.version == f"v0:{paxos.fields['dateModified']}"
    attention = by_title(lib, "Attention Is All You Need")
    assert attention.fields["extra"] == "arXiv: 1706.03762"
    assert attention.venue == "Advances in Neural Information Processing Systems 30"
    assert attention.fields["conferenceName"] == "NIPS 2017"
    raft = by_title(lib, "In Search of an Understandable Consensus Algorithm")
    assert (raft.item_type, raft.venue) == ("preprint", "Stanford University")  # repository


def test_creators_in_order_and_non_ascii(library: Library) -> None:
    spanner = by_title(library, "Spanner: Google's Globally-Distributed Database")
    assert len(spanner.creators) == 26
    assert spanner.authors[0] == "James C. Corbett" and spanner.authors[1] == "Jeffrey Dean"
    assert spanner.authors[-1] == "Dale Woodford"
    assert all(c.creator_type == "author" for c in spanner.creators)
    attention = by_title(library, "Attention Is All You Need")
    kaiser = next(c for c in attention.creators if c.last == "Kaiser")
    assert kaiser.first == "Łukasz"
    assert any(c.name == "François Rousseau" for i in library.items.values() for c in i.creators)


def test_attachments_resolve_into_storage(
    library: Library, manifest: dict[str, dict[str, Any]]
) -> None:
    atts = list(library.attachments())
    assert len(atts) == 38
    files = [a for a in atts if a.link_mode == "imported_file"]
    assert len(files) == 37
    for a in files:
        assert a.path is not None and a.path.is_file()
        assert a.path.parent == ZOTERO_DIR / "storage" / a.key
        assert a.content_type == "application/pdf" and a.skip_reason is None
        assert a.fulltext_cache == ZOTERO_DIR / "storage" / a.key / ".zotero-ft-cache"
    for title in ("Attention Is All You Need", "Bitcoin: A Peer-to-Peer Electronic Cash System"):
        item = by_title(library, title)
        pdf = next(a for a in item.attachments if a.link_mode == "imported_file")
        assert pdf.parent_key == item.key
        assert pdf.path is not None and _sha256(pdf.path) == manifest[title]["sha256"]
    link = next(a for a in atts if a.link_mode == "linked_url")
    assert link.path is None and link.url == "https://arxiv.org/abs/1706.03762"
    assert link.skip_reason == "link-only URL attachment (no file)"
    assert link.parent_key == by_title(library, "Attention Is All You Need").key
    assert library.standalone_attachments == []


def test_notes_without_the_trashed_one(library: Library) -> None:
    notes = list(library.notes())
    assert len(notes) == 4
    assert not any("scratch" in n.title.lower() for n in notes)
    transformer = by_title(library, "Attention Is All You Need").notes[0]
    assert transformer.title == "Reading notes: the Transformer"
    assert transformer.html.startswith('<div class="zotero-note znv1">')
    assert "<table>" in transformer.html
    [standalone] = library.standalone_notes
    assert standalone.title == "Reading list: consensus" and standalone.parent_key is None
    assert [library.collection_path(c) for c in standalone.collections] == ["Distributed Systems"]


def test_nested_collections(library: Library) -> None:
    paths = sorted(library.collection_path(k) for k in library.collections)
    assert paths == [
        "Bioinformatics",
        "Distributed Systems",
        "Distributed Systems/Consensus",
        "Distributed Systems/Storage",
        "Information Retrieval",
        "Machine Learning",
        "Machine Learning/Self-Supervised Learning",
    ]
    bert = next(i for i in library.items.values() if i.title.startswith("BERT"))
    assert sorted(library.collection_path(c) for c in bert.collections) == [
        "Information Retrieval",
        "Machine Learning",
    ]
    [consensus] = library.find_collections("distributed systems/consensus")
    assert sum(consensus in i.collections for i in library.items.values()) == 8
    [systems] = library.find_collections("Distributed Systems")
    assert len(library.collection_descendants(systems)) == 3
    unfiled = sorted(i.title for i in library.items.values() if not i.collections)
    assert unfiled == ["Bitcoin: A Peer-to-Peer Electronic Cash System", "Tidy Data"]


def test_reading_leaves_the_database_untouched() -> None:
    _need_corpus()
    before = _sha256(ZOTERO_DIR / "zotero.sqlite")
    names_before = sorted(p.name for p in ZOTERO_DIR.iterdir())
    read_zotero_dir(ZOTERO_DIR)
    assert _sha256(ZOTERO_DIR / "zotero.sqlite") == before
    assert sorted(p.name for p in ZOTERO_DIR.iterdir()) == names_before
    assert not [p for p in ZOTERO_DIR.iterdir() if p.name.endswith(("-wal", "-shm", "-journal"))]


def _comparable(library: Library, data_dir: Path) -> dict[str, Any]:
    """The library as plain data: paths relative to the data dir, no file stats, no ft-cache."""
    for att in library.attachments():
        att.fulltext_cache = None

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, Path):
            return value.relative_to(data_dir).as_posix()
        if isinstance(value, str) and "|file:" in value:  # size:mtime of a copied file
            return value.split("|file:")[0]
        return value

    return strip(asdict(replace(library, source="")))


def test_legacy_type_ids_read_identically(legacy_dir: Path) -> None:
    with open_snapshot(legacy_dir / "zotero.sqlite") as conn:
        ids = dict(conn.execute("SELECT typeName, itemTypeID FROM itemTypesCombined"))
    assert (ids["note"], ids["journalArticle"], ids["attachment"]) == (1, 4, 14)
    legacy = read_zotero_dir(legacy_dir)
    assert _comparable(legacy, legacy_dir) == _comparable(read_zotero_dir(ZOTERO_DIR), ZOTERO_DIR)
    assert len(legacy.items) == 37 and len(list(legacy.notes())) == 4


def test_missing_files_are_reported(db_copy: Path) -> None:
    # a writable copy of the database without its storage/ folder: SQLite *could* create
    # side files here, and must not
    sha = _sha256(db_copy / "zotero.sqlite")
    lib = read_zotero_dir(db_copy)
    assert [p.name for p in db_copy.iterdir()] == ["zotero.sqlite"]
    assert _sha256(db_copy / "zotero.sqlite") == sha
    pdfs = [a for a in lib.attachments() if a.link_mode == "imported_file"]
    assert len(pdfs) == 37
    for a in pdfs:
        assert a.path is None and a.fulltext_cache is None
        assert a.skip_reason == f"file not found: {db_copy / 'storage' / a.key / a.filename}"


def test_doi_from_extra_and_edits_change_the_version(db_copy: Path) -> None:
    title = "The PageRank Citation Ranking: Bringing Order to the Web"
    before = by_title(read_zotero_dir(db_copy), title)
    assert before.doi == ""
    conn = sqlite3.connect(db_copy / "zotero.sqlite")
    with conn:  # what Zotero writes when a DOI is pasted into Extra
        [item_id] = conn.execute("SELECT itemID FROM items WHERE key = ?", (before.key,)).fetchone()
        field_id = conn.execute(
            "SELECT fieldID FROM fieldsCombined WHERE fieldName = 'extra'"
        ).fetchone()[0]
        value_id = conn.execute("SELECT MAX(valueID) + 1 FROM itemDataValues").fetchone()[0]
        conn.execute(
            "INSERT INTO itemDataValues VALUES (?, ?)",
            (value_id, "Type: report\nDOI: 10.1000/pagerank.1999"),
        )
        conn.execute("INSERT INTO itemData VALUES (?, ?, ?)", (item_id, field_id, value_id))
        conn.execute(
            "UPDATE items SET dateModified = '2025-01-02 03:04:05' WHERE itemID = ?", (item_id,)
        )
    conn.close()
    after = by_title(read_zotero_dir(db_copy), title)
    assert after.doi == "10.1000/pagerank.1999"
    assert after.version == "v0:2025-01-02T03:04:05Z" != before.version


def test_pending_wal_of_a_locked_database_is_read_from_a_copy(db_copy: Path) -> None:
    db = db_copy / "zotero.sqlite"
    writer = sqlite3.connect(db)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("PRAGMA locking_mode = EXCLUSIVE")  # as Zotero holds it while running
    with writer:
        writer.execute(
            """UPDATE itemDataValues SET value = 'Paxos Made Simple (WAL edit)'
               WHERE value = 'Paxos Made Simple'"""
        )
    try:
        wal = db.with_name("zotero.sqlite-wal")
        assert wal.stat().st_size > 0
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            sqlite3.connect(db, timeout=0).execute("SELECT COUNT(*) FROM items").fetchone()
        files_before = {p.name: _sha256(p) for p in db_copy.iterdir()}
        lib = read_zotero_dir(db_copy)
        assert "Paxos Made Simple (WAL edit)" in {i.title for i in lib.items.values()}
        assert len(lib.items) == 37
        assert {p.name: _sha256(p) for p in db_copy.iterdir()} == files_before
    finally:
        writer.close()


def _add_linked_file(conn: sqlite3.Connection, parent_key: str, key: str, path: str) -> None:
    """A linked-file attachment (linkMode 2) the way Zotero stores one."""
    parent_id = conn.execute("SELECT itemID FROM items WHERE key = ?", (parent_key,)).fetchone()[0]
    type_id = conn.execute(
        "SELECT itemTypeID FROM itemTypesCombined WHERE typeName = 'attachment'"
    ).fetchone()[0]
    cur = conn.execute(
        "INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, 1, ?)", (type_id, key)
    )
    conn.execute(
        "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
        "VALUES (?, ?, 2, 'application/pdf', ?)",
        (cur.lastrowid, parent_id, path),
    )


def test_linked_files_absolute_and_relative_to_the_base_directory(
    db_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no Zotero profile: no base directory
    paper = corpus_path("papers", "raft.pdf")
    base = tmp_path / "papers-base"
    (base / "consensus").mkdir(parents=True)
    shutil.copyfile(paper, base / "consensus" / "raft.pdf")
    lib = read_zotero_dir(db_copy)
    raft = by_title(lib, "In Search of an Understandable Consensus Algorithm")
    conn = sqlite3.connect(db_copy / "zotero.sqlite")
    with conn:
        _add_linked_file(conn, raft.key, "LINKABS2", str(paper))
        _add_linked_file(conn, raft.key, "LINKREL2", "attachments:consensus/raft.pdf")
    conn.close()

    without_base = by_title(read_zotero_dir(db_copy), raft.title)
    linked = {a.key: a for a in without_base.attachments if a.link_mode == "linked_file"}
    assert linked["LINKABS2"].path == paper and linked["LINKABS2"].skip_reason is None
    assert linked["LINKREL2"].path is None
    assert "Linked Attachment Base Directory" in (linked["LINKREL2"].skip_reason or "")

    profile = tmp_path / "home" / ".zotero" / "zotero" / "x1y2z3.default"
    profile.mkdir(parents=True)
    (profile / "prefs.js").write_text(
        f'user_pref("extensions.zotero.dataDir", {json.dumps(str(db_copy))});\n'
        'user_pref("extensions.zotero.useDataDir", true);\n'
        f'user_pref("extensions.zotero.baseAttachmentPath", {json.dumps(str(base))});\n',
        encoding="utf-8",
    )
    with_base = by_title(read_zotero_dir(db_copy), raft.title)
    rel = next(a for a in with_base.attachments if a.key == "LINKREL2")
    assert rel.path == base / "consensus" / "raft.pdf" and rel.skip_reason is None


def test_not_a_zotero_directory(tmp_path: Path) -> None:
    with pytest.raises(LibraryError, match="not a Zotero data directory"):
        read_zotero_dir(tmp_path)
    (tmp_path / "zotero.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(LibraryError, match=r"zotero\.sqlite"):
        read_zotero_dir(tmp_path)


def test_a_storage_file_that_links_out_of_storage_is_skipped(db_copy: Path, tmp_path: Path) -> None:
    """Zotero's storage holds copies; a link in it leading elsewhere is not read. A linked
    file with an absolute path is where the user put it, so it is read (resolved)."""
    lib = read_zotero_dir(db_copy)
    pdfs = sorted((a for a in lib.attachments() if a.link_mode == "imported_file"),
                  key=lambda a: a.key)
    outside = tmp_path / "elsewhere" / "secret.pdf"
    outside.parent.mkdir()
    shutil.copyfile(corpus_path("papers", "raft.pdf"), outside)
    inside = db_copy / "storage" / "SHARED01" / "real.pdf"
    inside.parent.mkdir(parents=True)
    shutil.copyfile(corpus_path("papers", "raft.pdf"), inside)
    out_att, in_att, dir_att = pdfs[0], pdfs[1], pdfs[2]
    for att, target in ((out_att, outside), (in_att, inside)):
        link = db_copy / "storage" / att.key / att.filename
        link.parent.mkdir(parents=True)
        link.symlink_to(target)
    (db_copy / "storage" / dir_att.key / dir_att.filename).mkdir(parents=True)
    again = {a.key: a for a in read_zotero_dir(db_copy).attachments()}
    assert again[out_att.key].path is None
    assert again[out_att.key].skip_reason == (
        f"a symbolic link to {outside.resolve()}, outside Zotero's storage folder: not followed")
    assert again[in_att.key].path == inside.resolve() and again[in_att.key].skip_reason is None
    assert again[dir_att.key].skip_reason == (
        f"a folder, not a file: {db_copy / 'storage' / dir_att.key / dir_att.filename}")
