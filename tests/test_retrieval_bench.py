"""Benchmark plumbing: the nDCG/recall formulas, and `bench beir` end to end on a BEIR-format
slice of SciFact (the full run is `zocrates-nb bench beir ../shared/corpus/beir-scifact`)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_path

from zocrates_nb.bench.retrieval import bench_beir, ndcg_at_k, percentile, recall_at_k


def test_ndcg_uses_graded_gains_and_the_ideal_ordering() -> None:
    qrels = {"a": 2, "b": 1, "c": 0}
    assert ndcg_at_k(["a", "b"], qrels) == pytest.approx(1.0)
    dcg = 1 / math.log2(2) + 2 / math.log2(3)  # b first, then a
    idcg = 2 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(["b", "a", "x"], qrels) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["x"] * 10 + ["a"], qrels) == 0.0  # beyond the cut-off
    assert recall_at_k(["x", "b"], qrels, k=2) == 0.5
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 0.5) == 3.0


def _slice(scifact: Path, out: Path, n_queries: int = 4, distractors: int = 30) -> Path:
    """A small BEIR dataset: a few test queries, their relevant docs, and distractors."""
    qrels_lines = (scifact / "qrels" / "test.tsv").read_text("utf-8").splitlines()[1:]
    qrels: dict[str, list[str]] = {}
    for line in qrels_lines:
        q, d, _ = line.split("\t")
        if q in qrels or len(qrels) < n_queries:
            qrels.setdefault(q, []).append(d)
    wanted = {d for ds in qrels.values() for d in ds}
    docs = []
    with (scifact / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            doc = json.loads(line)
            if doc["_id"] in wanted or len(docs) < distractors:
                docs.append(doc)
    queries = [json.loads(x) for x in (scifact / "queries.jsonl").read_text("utf-8").splitlines()
               if json.loads(x)["_id"] in qrels]
    (out / "qrels").mkdir(parents=True)
    (out / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    (out / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), "utf-8")
    (out / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"{q}\t{d}\t1\n" for q, ds in qrels.items() for d in ds), "utf-8")
    return out


@pytest.mark.corpus
def test_bench_beir_scores_every_method_and_caches_the_index(tmp_path: Path) -> None:
    data = _slice(corpus_path("beir-scifact"), tmp_path / "scifact-slice")
    args = argparse.Namespace(dir=data, home=tmp_path / "home", json=True, split="test",
                              queries_limit=None)
    first: dict[str, Any] = bench_beir(args)
    assert first["queries"] == 4 and not first["index_cached"]
    assert set(first["methods"]) == {"bm25", "dense", "hybrid", "hybrid+rerank"}
    for name, scores in first["methods"].items():
        assert 0.0 <= scores["ndcg@10"] <= 1.0
        if name != "bm25":  # BM25 misses documents sharing no term with the claim
            assert scores["recall@100"] == 1.0  # every document is in the top 100 of ~35
        assert scores["latency_ms_p95"] >= scores["latency_ms_p50"] > 0
    # Relevant abstracts are easy to find among random distractors.
    assert first["methods"]["hybrid"]["ndcg@10"] > 0.6
    assert first["rerank_method"] == "biencoder-bm25-fusion"
    # Again from the cached index, without the (slow) rerank: the same figures, one method less.
    again = bench_beir(argparse.Namespace(**vars(args), no_rerank=True))
    assert again["index_cached"] and again["methods"] == {
        k: {**v, "latency_ms_p50": again["methods"][k]["latency_ms_p50"],
            "latency_ms_p95": again["methods"][k]["latency_ms_p95"]}
        for k, v in first["methods"].items() if k != "hybrid+rerank"}
    assert again["rerank_method"].startswith("skipped")


@pytest.mark.corpus
def test_bench_tokens_compares_outline_reading_with_whole_papers(corpus_index: Any) -> None:
    from zocrates_nb.bench.retrieval import bench_tokens

    args = argparse.Namespace(home=corpus_index.home, json=True)
    result = bench_tokens(args)
    assert result["papers"] == 37
    assert "WordPiece" in result["tokenizer"]
    for row in result["per_paper"]:
        assert row["full_tokens"] > row["section_tokens"] > 0
        assert row["ratio"] == round(row["full_tokens"]
                                     / (row["outline_tokens"] + row["section_tokens"]), 2)
    # Measured 10.8x on this corpus (target >= 10x); guard against a regression.
    assert result["median_ratio"] >= 8
