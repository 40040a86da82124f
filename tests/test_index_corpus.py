"""The 37-paper Zotero library: a full index, plain-question search, scopes, speed."""

from __future__ import annotations

import json
import re
import statistics
import time
import unicodedata

import pytest
from conftest import ZOTERO_DIR, CorpusIndex, corpus_path, sha256_file

from zocrates_nb.index import Index, SearchFilter, index_library
from zocrates_nb.library import read_zotero_dir

pytestmark = pytest.mark.corpus


def _index(ci: CorpusIndex) -> Index:
    assert isinstance(ci.index, Index)
    return ci.index


def _key(ci: CorpusIndex, title_start: str) -> str:
    return next(k for k, it in ci.library.items.items() if it.title.startswith(title_start))


def test_the_whole_library_is_indexed(corpus_index: CorpusIndex) -> None:
    report = corpus_index.report.to_json()  # type: ignore[attr-defined]
    assert (report["items"], report["attachments"], report["notes"]) == (37, 38, 4)
    assert report["errors"] == []
    assert [s["reason"] for s in report["skipped"]] == ["link-only URL attachment (no file)"]
    assert report["converted"] == 41  # 37 PDFs + 4 notes (the trashed note is not read)
    index = _index(corpus_index)
    status = index.status()
    assert status["items"] == 37
    assert status["documents"] == {"done": 41, "skipped": 1}
    assert status["chunks"] == report["chunks"] > 1000
    assert index.dense.count() == status["chunks"]
    types = {r["chunk_type"]: r["n"] for r in index.catalog.query(
        "SELECT chunk_type, count(*) AS n FROM chunks GROUP BY chunk_type")}
    assert types["frontmatter"] == 37 and types["note"] >= 4
    assert types["body"] > 800 and types["figure"] > 50 and types["table"] > 20
    print(f"\n[corpus] cold index {corpus_index.seconds:.1f} s; chunks by type {types}")


def test_indexing_never_writes_the_zotero_database(corpus_index: CorpusIndex) -> None:
    assert corpus_index.zotero_sha_after == corpus_index.zotero_sha_before
    assert sha256_file(ZOTERO_DIR / "zotero.sqlite") == corpus_index.zotero_sha_before


@pytest.mark.parametrize(
    ("question", "title_start", "within"),
    [
        ("how does Raft elect a leader", "In Search of an Understandable Consensus", 1),
        ("lock service for loosely coupled distributed systems", "The Chubby lock service", 1),
        # Graph-of-word's section "5.2 TF-IDF and BM25" is rank 1 for both retrievers (a fair
        # hit: it defines BM25); Okapi, where BM25 was introduced, comes right after.
        ("BM25 term weighting", "Okapi at TREC-3", 3),
        ("programming model for processing large data sets on clusters", "MapReduce", 1),
        ("assembling short reads with de Bruijn graphs", "Velvet", 1),
        ("globally distributed database with TrueTime", "Spanner", 1),
        ("highly available key-value store with vector clocks", "Dynamo", 1),
        ("hubs and authorities in a hyperlinked environment", "Authoritative Sources", 1),
        ("a peer-to-peer electronic cash system without a trusted party", "Bitcoin", 1),
        ("consensus is impossible with one faulty process", "Impossibility of Distributed", 1),
    ],
)
def test_plain_questions_find_the_right_paper(
    corpus_index: CorpusIndex, question: str, title_start: str, within: int
) -> None:
    hits = _index(corpus_index).search(question, limit=5)
    titles = [h.chunk.title for h in hits]
    assert any(t.startswith(title_start) for t in titles[:within]), titles


def test_item_scope_accepts_parent_and_attachment_keys(corpus_index: CorpusIndex) -> None:
    index = _index(corpus_index)
    raft = _key(corpus_index, "In Search of an Understandable")
    pdf = index.resolve_doc_keys(raft)[0]
    note = [k for k in index.resolve_doc_keys(raft) if k != pdf]
    assert note  # the Raft paper has a child note
    for keys in ([raft], [pdf]):
        hits = index.search("genome assembly of bacterial reads", SearchFilter(item_keys=keys),
                            limit=10)
        assert len(hits) == 10
        assert {h.chunk.item_key for h in hits} == {raft}
    only_pdf = index.search("leader", SearchFilter(item_keys=[pdf]), limit=50)
    assert {h.chunk.attachment_key for h in only_pdf} == {pdf}


def test_collections_scope_search(corpus_index: CorpusIndex) -> None:
    index = _index(corpus_index)
    lib = corpus_index.library
    consensus = index.collection_item_keys(["Consensus"])
    wanted = {k for k, it in lib.items.items() if set(it.collections) & set(
        lib.find_collections("Consensus"))}
    assert consensus == wanted and len(consensus) >= 4
    titles = {lib.items[k].title.split(":")[0] for k in consensus}
    assert any("Paxos" in t for t in titles) and any("Understandable" in t for t in titles)
    scope = SearchFilter(item_keys=sorted(consensus))
    hits = index.search("replicated storage of large files", scope, limit=20)
    assert hits and {h.chunk.item_key for h in hits} <= consensus

    ds = index.collection_item_keys(["distributed systems"])
    storage = index.collection_item_keys(["Distributed Systems/Storage"])
    assert consensus | storage <= ds
    standalone = [n.key for n in lib.standalone_notes if n.collections]
    assert set(standalone) <= ds  # the reading-list note filed in Distributed Systems
    ml = index.collection_item_keys(["Machine Learning"])
    assert index.collection_item_keys(["Self-Supervised Learning"]) < ml
    with pytest.raises(ValueError, match="Bioinformatics"):
        index.collection_item_keys(["Quantum Chemistry"])


def test_reindex_without_changes_is_fast_and_touches_nothing(corpus_index: CorpusIndex) -> None:
    index = _index(corpus_index)
    t0 = time.perf_counter()
    library = read_zotero_dir(ZOTERO_DIR)
    report = index_library(library, index, progress=False)
    seconds = time.perf_counter() - t0
    print(f"\n[corpus] re-index without changes: {seconds:.2f} s (read + index)")
    assert (report.converted, report.reused, report.removed, report.unchanged) == (0, 0, 0, 41)
    assert seconds <= 3.0


def test_warm_search_latency(corpus_index: CorpusIndex) -> None:
    index = _index(corpus_index)
    queries = [
        "how does Raft elect a leader", "lock service", "BM25", "term frequency saturation",
        "Paxos proposer acceptor", "MapReduce combiner function", "k-mer coverage",
        "Smith-Waterman local alignment", "contrastive loss temperature", "data augmentation",
        "self-attention", "GFS master chunk lease", "TrueTime commit wait", "sloppy quorum",
        "PageRank damping factor", "hidden Markov model Viterbi", "tidy data", "Bitcoin",
        "neural tangent kernel", "prototypical networks few-shot",
    ]
    index.search("warm up the model and caches")
    times = []
    for q in queries:
        t0 = time.perf_counter()
        assert index.search(q, limit=10)
        times.append(time.perf_counter() - t0)
    p50 = statistics.median(times) * 1000
    print(f"\n[corpus] warm hybrid search p50 {p50:.1f} ms, max {max(times) * 1000:.1f} ms")
    assert p50 < 150  # target ≤ 50 ms on an idle machine; slack for a shared CI box


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"-\s*\n\s*", "", text)
    return re.sub(r"[^a-z0-9]+", " ", text).strip()


def test_dev_questions_gold_passages_are_retrieved(corpus_index: CorpusIndex) -> None:
    """Hybrid top-20 holds most gold evidence passages of the development questions."""
    index = _index(corpus_index)
    questions = [json.loads(line) for line in
                 corpus_path("questions-dev.jsonl").read_text("utf-8").splitlines()
                 if line.strip()]
    found = total = 0
    for q in questions:
        texts = [_norm(h.chunk.text) for h in index.search(q["question"], limit=20)]
        for gold in q["gold"]:
            total += 1
            found += any(_norm(gold["evidence"]) in t for t in texts)
    print(f"\n[corpus] dev gold passages in hybrid top-20: {found}/{total}")
    assert total >= 40 and found >= 0.6 * total


def test_line_ranges_map_back_to_chunks(corpus_index: CorpusIndex) -> None:
    index = _index(corpus_index)
    doc = index.resolve_doc_keys(_key(corpus_index, "The Chubby lock service"))[0]
    bundle = index.bundle(doc)
    chunks = index.chunks_of(doc)
    section = next(s for s in bundle.toc.sections if s.words > 600)
    ids = index.chunks_intersecting(doc, section.line_start, section.line_end)
    inside = [c.chunk_id for c in chunks if c.section_id == section.id]
    assert set(inside) <= set(ids)
    for c in index.chunks(ids):
        assert c.line_start <= section.line_end and c.line_end >= section.line_start
        if c.chunk_type == "body":
            assert c.text.split()[0] in bundle.text(c.line_start, c.line_end)
