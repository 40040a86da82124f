"""Incremental indexing from a Zotero data directory: a copy of the corpus zotero.sqlite is
edited the way Zotero edits it (a title with a new version and dateModified, an item moved to
the trash, an attachment deleted, a file replaced), and the next run redoes exactly that."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import corpus_path, topic_paragraphs
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, index_library
from zocrates_nb.library import read_zotero_dir

pytestmark = pytest.mark.corpus

# (attachment key, parent item key, topic) of three corpus attachments given small stand-in
# PDFs; the other attachments have no file in the copy (skipped: fast and deterministic).
PAPERS = [("ESCRYLMB", "3KDPD5DW", "raft"), ("YH7LQ4ZJ", "B4BVDRMA", "bm25"),
          ("LNSTK7VB", "G7CEUQ9G", "genome")]  # fmt: skip
TRASHED_NOTE = "YJWHUYBU"  # a child note of the second paper, trashed with it


def _pdf(path: Path, topic: str, seed: int = 0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    c = canvas.Canvas(str(path), pagesize=A4)
    text = c.beginText(50, 790)
    for para in topic_paragraphs(topic, 3, seed=seed, sentences=3):
        words = para.split()
        for i in range(0, len(words), 12):
            text.textLine(" ".join(words[i : i + 12]))
        text.textLine("")
    c.drawText(text)
    c.save()


def _data_dir(tmp_path: Path) -> Path:
    src = corpus_path("zotero-library", "zotero.sqlite")
    data = tmp_path / "Zotero"
    data.mkdir()
    shutil.copyfile(src, data / "zotero.sqlite")  # a copy: the corpus file is never written
    db = sqlite3.connect(data / "zotero.sqlite")
    for key, _parent, topic in PAPERS:
        (path,) = db.execute(
            "SELECT a.path FROM itemAttachments a JOIN items i USING (itemID) WHERE i.key = ?",
            (key,),
        ).fetchone()
        _pdf(data / "storage" / key / path.removeprefix("storage:"), topic)
    db.close()
    return data


def _item_id(db: sqlite3.Connection, key: str) -> int:
    return int(db.execute("SELECT itemID FROM items WHERE key = ?", (key,)).fetchone()[0])


def test_only_changed_zotero_items_are_redone(tmp_path: Path) -> None:
    data = _data_dir(tmp_path)
    index = Index.open(tmp_path / "home", Settings())
    first = index_library(read_zotero_dir(data, base_dir=tmp_path), index, progress=False)
    # The three PDFs and the library's four notes outside the trash.
    assert (first.converted, first.notes, first.errors) == (7, 4, [])
    again = index_library(read_zotero_dir(data, base_dir=tmp_path), index, progress=False)
    assert (again.converted, again.reused, again.unchanged, again.removed) == (0, 0, 7, 0)

    (edit_att, edit_item, _), (trash_att, trash_item, _), (file_att, _, _) = PAPERS
    db = sqlite3.connect(data / "zotero.sqlite")
    with db:  # what Zotero writes when a title is edited: a value, a new version and date
        item = _item_id(db, edit_item)
        db.execute("INSERT INTO itemDataValues(valueID, value) VALUES"
                   " ((SELECT max(valueID) + 1 FROM itemDataValues), 'An Edited Title')")
        db.execute(
            "UPDATE itemData SET valueID = (SELECT max(valueID) FROM itemDataValues)"
            " WHERE itemID = ? AND fieldID = (SELECT fieldID FROM fields"
            " WHERE fieldName = 'title')",
            (item,),
        )
        db.execute("UPDATE items SET version = version + 1, synced = 0,"
                   " clientDateModified = '2025-01-02 03:04:05',"
                   " dateModified = '2025-01-02 03:04:05' WHERE itemID = ?", (item,))
        # Moved to the trash: its attachment leaves the index with it.
        db.execute("INSERT INTO deletedItems(itemID, dateDeleted) VALUES"
                   " (?, '2025-01-02 03:04:05')", (_item_id(db, trash_item),))
    db.close()
    (path,) = list((data / "storage" / file_att).glob("*.pdf"))
    _pdf(path, "genome", seed=7)  # the file replaced by another version of the paper

    second = index_library(read_zotero_dir(data, base_dir=tmp_path), index, progress=False)
    # Redone: the replaced file (converted), the edited item (re-chunked from its cached
    # bundle); gone: the trashed item's attachment and its note; the other notes untouched.
    assert (second.converted, second.reused, second.unchanged, second.removed) == (1, 1, 3, 2)
    assert index.catalog.document(trash_att) is None
    assert index.catalog.document(TRASHED_NOTE) is None
    assert not index.dense.ids([trash_att])
    assert {c.title for c in index.chunks_of(edit_att)} == {"An Edited Title"}
    assert index.catalog.item(edit_item).title == "An Edited Title"  # type: ignore[union-attr]
    assert index.catalog.item(trash_item) is None

    db = sqlite3.connect(data / "zotero.sqlite")
    with db:  # the attachment deleted outright (emptied from the trash)
        att = _item_id(db, edit_att)
        db.execute("DELETE FROM itemAttachments WHERE itemID = ?", (att,))
        db.execute("DELETE FROM items WHERE itemID = ?", (att,))
    db.close()
    third = index_library(read_zotero_dir(data, base_dir=tmp_path), index, progress=False)
    assert (third.converted, third.reused, third.unchanged, third.removed) == (0, 0, 4, 1)
    done = {d.doc_key for d in index.documents() if d.status == "done"}
    assert file_att in done and edit_att not in done and len(done) == 4
    assert index.dense.ids() == set(index.catalog.chunk_ids())
    index.close()
