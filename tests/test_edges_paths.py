"""Names from library data never lead outside their home: each writer and remover (the index's
document folders, stale-document removal, bundle files, Web API downloads) and each reader of
recorded paths (Zotero's storage and linked files) is tried with `..`, absolute paths and
symbolic links. Everything outside the data home, and `zotero.sqlite`, is byte-identical after.

The Zotero cases run on a copy of the corpus library cut down to two papers, edited the way a
damaged or hostile database would be (Zotero itself never writes such keys or paths)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ZOTERO_DIR, LibraryBuilder, corpus_path
from test_library_zotero_api import ZoteroServer

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, IndexReport, index_library
from zocrates_nb.library import read_zotero_api, read_zotero_dir
from zocrates_nb.library.paths import UnsafePath, within, zotero_key

SECRET = "qzvxneverindexed"  # one word: BM25 finds it alone or nothing
PAXOS, PAXOS_PDF = "3KDPD5DW", "ESCRYLMB"  # Paxos Made Simple and its PDF (95 KB)
CHUBBY, CHUBBY_PDF = "G7CEUQ9G", "LNSTK7VB"


def snapshot(root: Path) -> dict[str, str]:
    """Every file and link under `root` (links not followed): path → sha256 or link target."""
    out: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            rel = str(path.relative_to(root))
            if path.is_symlink():
                out[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _lines(report: IndexReport) -> dict[str, str]:
    return {row["doc_key"]: row.get("error") or row.get("reason") or row.get("warning") or ""
            for row in report.errors + report.skipped + report.warnings}  # fmt: skip


@pytest.fixture()
def area(tmp_path: Path) -> Iterator[Path]:
    """A folder around the data home (`area/home`) with a victim folder and a secret file
    beside it; the test ends by checking nothing outside the home changed."""
    (tmp_path / "victim").mkdir()
    (tmp_path / "victim" / "keep.txt").write_text("the user's own file\n")
    (tmp_path / "secret.txt").write_text(f"{SECRET} lives outside every library.\n")
    before = snapshot(tmp_path)
    zotero_before = _sha(ZOTERO_DIR / "zotero.sqlite")
    yield tmp_path
    after = {k: v for k, v in snapshot(tmp_path).items()
             if k.split("/")[0] not in ("home", "Zotero", "library")}  # the test's own  # fmt: skip
    assert after == before
    assert _sha(ZOTERO_DIR / "zotero.sqlite") == zotero_before


def _sha(path: Path) -> str | None:
    """The file's sha256 (None without the corpus: the tests that need it skip)."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def _zotero_copy(area: Path) -> Path:
    """The corpus Zotero library with two papers (the others deleted as Zotero would)."""
    data = area / "Zotero"
    (data / "storage").mkdir(parents=True)
    shutil.copyfile(corpus_path("zotero-library", "zotero.sqlite"), data / "zotero.sqlite")
    for key in (PAXOS_PDF, CHUBBY_PDF):
        shutil.copytree(ZOTERO_DIR / "storage" / key, data / "storage" / key)
    conn = sqlite3.connect(data / "zotero.sqlite")
    with conn:
        conn.execute("PRAGMA foreign_keys = ON")
        kept = [r[0] for r in conn.execute(
            "SELECT itemID FROM items WHERE key IN (?, ?)", (PAXOS, CHUBBY))]  # fmt: skip
        marks = ",".join("?" * len(kept))
        conn.execute(
            f"""DELETE FROM items WHERE itemID NOT IN ({marks})
                AND itemID NOT IN (SELECT itemID FROM itemAttachments WHERE parentItemID IN
                ({marks})) AND itemID NOT IN (SELECT itemID FROM itemNotes WHERE parentItemID
                IN ({marks}))""",
            kept * 3,
        )
    conn.close()
    return data


def _add(conn: sqlite3.Connection, key: str, kind: str) -> int:
    type_id = conn.execute(
        "SELECT itemTypeID FROM itemTypesCombined WHERE typeName = ?", (kind,)).fetchone()[0]
    item_id = conn.execute("INSERT INTO items (itemTypeID, libraryID, key) VALUES (?, 1, ?)",
                           (type_id, key)).lastrowid  # fmt: skip
    assert item_id is not None
    return int(item_id)


def _attach(conn: sqlite3.Connection, key: str, link_mode: int, path: str,
            content_type: str = "text/plain") -> None:  # fmt: skip
    item_id = _add(conn, key, "attachment")
    conn.execute("INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) "
                 "SELECT ?, itemID, ?, ?, ? FROM items WHERE key = ?",
                 (item_id, link_mode, content_type, path, PAXOS))  # fmt: skip


def test_zotero_keys_and_recorded_paths_stay_inside(area: Path) -> None:
    data = _zotero_copy(area)
    conn = sqlite3.connect(data / "zotero.sqlite")
    with conn:
        # A child note and an attachment whose keys climb out of the data home.
        note_id = _add(conn, "../../victim", "note")
        conn.execute("INSERT INTO itemNotes (itemID, parentItemID, note, title) SELECT ?, "
                     "itemID, '<p>climbing note</p>', 'climb' FROM items WHERE key = ?",
                     (note_id, PAXOS))  # fmt: skip
        conn.execute("UPDATE items SET key = '../victim' WHERE key = ?", (CHUBBY_PDF,))
        # Recorded paths: `..` out of storage, an imported file outside storage, system files.
        _attach(conn, "DQTDQTAA", 0, "storage:../../../secret.txt")
        _attach(conn, "ABSPATHA", 0, str(area / "secret.txt"))
        _attach(conn, "PRQCENVA", 0, "/proc/self/environ")
        _attach(conn, "PRQCENVB", 2, "/proc/self/environ")
        _attach(conn, "RELATIVA", 2, "secret.txt")
    conn.close()
    database = hashlib.sha256((data / "zotero.sqlite").read_bytes()).hexdigest()

    library = read_zotero_dir(data, base_dir=area)
    skipped = {s.path: s.reason for s in library.skipped}
    assert skipped == {
        "../../victim": "a note whose key '../../victim' is not a Zotero key (8 characters of "
        "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ): not read",
        "../victim": "an attachment whose key '../victim' is not a Zotero key (8 characters of "
        "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ): not read",
    }
    reasons = {a.key: a.skip_reason for a in library.attachments()}
    assert reasons["DQTDQTAA"] == (
        f"its recorded path {data}/storage/DQTDQTAA/../../../secret.txt leads outside "
        "Zotero's storage folder: not read")  # named as what it is: not "a symbolic link"
    assert reasons["ABSPATHA"] == (
        f"an imported attachment whose recorded path {area}/secret.txt is not in Zotero's "
        "storage folder: not read")
    assert reasons["PRQCENVA"] == ("an imported attachment whose recorded path "
                                   "/proc/self/environ is not in Zotero's storage folder: not read")
    assert reasons["PRQCENVB"] == "a system file (/proc/self/environ), not a document: not read"
    assert reasons["RELATIVA"] == (
        "a linked file whose recorded path secret.txt is not absolute: not read")
    assert all(a.path is None for a in library.attachments() if a.key != PAXOS_PDF)

    with Index.open(area / "home", Settings()) as index:
        report = index_library(library, index, progress=False)
        assert report.converted == 1 and report.errors == []
        assert len(report.skipped) == 2 + 5  # one line each, the paper itself indexed
        assert index.search("Paxos consensus", mode="bm25", limit=1)
        assert not index.search(SECRET, mode="bm25", limit=1)
        assert sorted(p.name for p in (area / "home" / "documents").iterdir()) == [PAXOS_PDF]
    assert hashlib.sha256((data / "zotero.sqlite").read_bytes()).hexdigest() == database


def test_the_index_writes_and_removes_only_inside_its_home(area: Path) -> None:
    """Keys a library built in Python may hold, a document folder planted as a link out of the
    home, a link in place of document.md, and a stale key an older version stored."""
    home = area / "home"
    b = LibraryBuilder(area / "library")
    b.paper("RAFT", "raft")
    b.paper("OKAPI", "bm25")
    b.paper("GENOME", "genome")
    b.library.items["OKAPI"].attachments[0].key = "../../victim"
    b.library.items["GENOME"].attachments[0].key = str(area / "victim")
    (home / "documents").mkdir(parents=True)
    (home / "documents" / "ARAFT").symlink_to(area / "victim", target_is_directory=True)
    with Index.open(home, Settings()) as index:
        report = index_library(b.library, index, progress=False)
        lines = _lines(report)
        assert len(lines) == 3 and report.converted == 0
        assert lines["../../victim"] == (f"'../../victim' cannot name a file in {home}/documents: "
                                         "not a plain file name (a path, '..' or empty)")
        assert lines[str(area / "victim")].startswith(f"'{area}/victim' cannot name a file")
        assert lines["ARAFT"].startswith(f"{home}/documents/ARAFT leads outside {home}/documents")

        # The link replaced by a real folder whose document.md links out: replaced, not written
        # through. Then a stale key an older version stored, and a stale key whose folder is a
        # link out: the catalogue rows go, the folders outside stay.
        (home / "documents" / "ARAFT").unlink()
        (home / "documents" / "ARAFT").mkdir()
        (home / "documents" / "ARAFT" / "document.md").symlink_to(area / "victim" / "keep.txt")
        report = index_library(b.library, index, progress=False)
        assert (home / "documents" / "ARAFT" / "document.md").is_file()
        assert not (home / "documents" / "ARAFT" / "document.md").is_symlink()
        assert index.search("leader election", mode="bm25", limit=1)
        with index.catalog.transaction() as db:
            for stale in ("../victim", "STALEKY2"):
                db.execute("INSERT INTO documents (doc_key, item_key, kind, status) "
                           "VALUES (?, 'X', 'text', 'done')", (stale,))  # fmt: skip
        (home / "documents" / "STALEKY2").symlink_to(area / "victim", target_is_directory=True)
        report = index_library(b.library, index, progress=False)
        assert report.removed == 2
        assert [w["doc_key"] for w in report.warnings] == ["../victim", "STALEKY2"]
        assert {d.doc_key for d in index.documents()} == {
            "ARAFT", "../../victim", str(area / "victim")}


def test_web_api_downloads_stay_in_the_download_folder(area: Path) -> None:
    pdf = corpus_path("papers", "paxos-made-simple.pdf").read_bytes()
    md5 = hashlib.md5(pdf).hexdigest()

    def record(key: str, data: dict[str, object]) -> dict[str, object]:
        return {"key": key, "version": 3, "data": {"key": key, "version": 3, **data}}

    def attachment(key: str, filename: str) -> dict[str, object]:
        return record(key, {"itemType": "attachment", "parentItem": "PARENTAA",
                            "linkMode": "imported_file", "contentType": "application/pdf",
                            "filename": filename, "md5": md5})  # fmt: skip

    records = [
        record("PARENTAA", {"itemType": "journalArticle", "title": "Paxos Made Simple"}),
        attachment("../../victim", "paper.pdf"),
        attachment("CLIMBNAM", "../../../escape.pdf"),  # only its last part is a name
        attachment("DQTNAMEA", ".."),  # no name at all: the key names the file
        attachment("LINKEDAA", "paper.pdf"),  # its folder is planted as a link out
        record("LINKFILA", {"itemType": "attachment", "parentItem": "PARENTAA",
                            "linkMode": "linked_file", "path": "/proc/self/environ",
                            "contentType": "text/plain"}),
    ]  # fmt: skip
    files = {key: pdf for key in ("CLIMBNAM", "DQTNAMEA", "LINKEDAA", "../../victim")}
    downloads = area / "home" / "downloads"
    (downloads).mkdir(parents=True)
    (downloads / "LINKEDAA").symlink_to(area / "victim", target_is_directory=True)
    library = read_zotero_api(zot=ZoteroServer(records, [], files=files).zotero(),
                              download_dir=downloads)  # fmt: skip
    assert [s.path for s in library.skipped] == ["../../victim"]
    atts = {a.key: a for a in library.attachments()}
    assert set(atts) == {"CLIMBNAM", "DQTNAMEA", "LINKEDAA", "LINKFILA"}
    assert atts["CLIMBNAM"].path == downloads / "CLIMBNAM" / "escape.pdf"
    assert atts["DQTNAMEA"].path == downloads / "DQTNAMEA" / "DQTNAMEA"
    assert atts["LINKEDAA"].path is None
    assert (atts["LINKEDAA"].skip_reason or "").startswith(
        f"{downloads}/LINKEDAA leads outside the download folder")
    assert atts["LINKFILA"].skip_reason == (
        "a system file (/proc/self/environ), not a document: not read")


def test_the_one_helper() -> None:
    root = Path("/srv/home/documents")
    assert within(root, "ABCD2345") == root / "ABCD2345"
    for bad in ("..", ".", "", "a/b", "../x", "/etc", "a\\b", "nul\x00", "x" * 300):
        with pytest.raises(UnsafePath):
            within(root, bad)
    assert zotero_key("ABCD2345") and not zotero_key("ABCD2341") and not zotero_key("abcd2345")
    assert not zotero_key("../../victim") and not zotero_key("ABCD23456")
