"""`bench scale`: the synthetic papers carry sections, a figure and a table once converted;
missing SciFact text is labelled; figures extrapolate with the measured growth."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from zocrates_nb.bench.scale import TextSource, extrapolate, paper_pdf


def _row(n: int, cold: float, search: float, mb: float) -> dict[str, object]:
    keys = ("reindex_no_change_s_median", "add_10_papers_s", "search_warm_ms_p95",
            "get_document_toc_ms_p50", "read_document_ms_p50", "peak_rss_mb_indexer",
            "search_cpu_ms_p50")  # fmt: skip
    return {
        "papers": n, "cold_index_s": cold, "search_warm_ms_p50": search,
        "index_mb": {"index": mb, "bundles": mb}, **dict.fromkeys(keys, 1.0),
        "cold_index_steps_s": {"embed": cold * 0.6, "convert_wait": cold * 0.3},
    }  # fmt: skip


def test_extrapolation_follows_the_measured_growth() -> None:
    est = extrapolate([_row(500, 100.0, 10.0, 50.0), _row(2000, 400.0, 20.0, 200.0)])
    at10k = est["10,000_papers"]
    assert at10k["cold_index_s"] == pytest.approx(2000.0)  # linear: exponent 1
    assert at10k["cold_index_s_growth_exponent"] == 1.0
    assert at10k["search_warm_ms_p50"] == pytest.approx(20.0 * 5**0.5, rel=1e-3)  # sqrt
    assert at10k["index_mb_total"] == pytest.approx(2000.0)
    assert at10k["cold_index_dominant_step"] == "embed"
    assert est["20,000_papers"]["cold_index_steps_s"]["embed"] == pytest.approx(2400.0)
    single = extrapolate([_row(500, 100.0, 10.0, 50.0)])  # one size: linear
    assert single["20,000_papers"]["search_warm_ms_p50"] == pytest.approx(400.0)


def test_without_scifact_the_text_is_generated_and_says_so(tmp_path: Path) -> None:
    source = TextSource(tmp_path / "no-such-corpus")
    assert source.label.startswith("GENERATED text") and "not meaningful" in source.label
    assert len(source.docs) >= 1000 and source.queries


@pytest.mark.corpus
def test_a_synthetic_paper_converts_with_sections_a_figure_and_a_table(
    shared_corpus: Path, tmp_path: Path
) -> None:
    from zocrates_nb.ingest import convert_file

    source = TextSource(shared_corpus / "beir-scifact")
    assert source.label.startswith("SciFact abstracts") and len(source.queries) == 50
    pdf = tmp_path / "paper.pdf"
    paper_pdf(pdf, 7, source)
    again = tmp_path / "again.pdf"
    paper_pdf(again, 7, source)
    assert pdf.read_bytes() == again.read_bytes()  # the same paper for the same number
    toc = convert_file(pdf, "application/pdf").toc
    titles = [s.title for s in toc.sections]
    for name in ("Abstract", "Introduction", "Methods", "Results", "Discussion"):
        assert any(name in t for t in titles), (name, titles)
    assert len(toc.figures) >= 1 and len(toc.tables) >= 1
    assert (toc.pages or 0) >= 2


def test_hashed_vectors_are_unit_length_deterministic_and_nearer_for_shared_words() -> None:
    from zocrates_nb.devtools.embedding_server import HashedVectors

    texts = ["leader election in Raft", "Raft elects a leader", "tidy data columns", ""]
    a = np.asarray(HashedVectors().embed(texts))
    assert a.shape == (4, 384)
    np.testing.assert_allclose(np.linalg.norm(a[:3], axis=1), 1.0, atol=1e-6)
    assert not a[3].any()  # no words: a zero vector, not NaN
    np.testing.assert_array_equal(a, np.asarray(HashedVectors().embed(texts)))
    assert float(a[0] @ a[1]) > float(a[0] @ a[2])


def test_hashed_vectors_measure_a_library_through_the_embedding_server_path(
    tmp_path: Path,
) -> None:
    """`--vectors hashed`: the run indexes and searches through a loopback embedding server
    serving stand-in vectors (no model), records that identity, and its result says so."""
    from zocrates_nb.bench import scale as bench_scale
    from zocrates_nb.config import Settings
    from zocrates_nb.index import Index

    args = argparse.Namespace(
        papers="3", work=str(tmp_path), corpus=str(tmp_path / "no-corpus"), repeat=1,
        chroma_server=False, vectors="hashed",
    )  # fmt: skip
    result = bench_scale.run(args)
    assert result["vectors"].startswith("HASHED stand-in")
    (row,) = result["sizes"]
    assert row["errors"] == 0 and row["chunks"] > 0
    assert row["search_warm_ms_p50"] > 0 and row["cold_index_steps_s"]["embed"] >= 0
    index = Index.open(tmp_path / "home-3", Settings())
    try:
        assert index.catalog.get_meta("embedding_model") == "openai-compatible:hashed-384"
    finally:
        index.close()
