"""`bench index` and `bench search`: indexing time and memory, warm search latency.

Medians over repeats, because this machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

# Plain researcher questions used for warm search latency (not tuned to any corpus).
SEARCH_QUERIES = [
    "how is a leader elected",
    "what happens when a lock holder fails",
    "reciprocal rank fusion constant",
    "BM25 term frequency saturation",
    "evaluation recall at 10",
    "tidy data each variable a column",
    "replicated log consistency",
    "embedding model dimensions",
    "garbage collection of deleted files",
    "self-attention complexity per layer",
]


def library_from(args: argparse.Namespace, sample_dir: Path | None = None) -> Any:
    """The library `--zotero-dir` or `--folder` names, else the built-in sample (built in
    `sample_dir`, a fresh temporary folder by default)."""
    from zocrates_nb import sample
    from zocrates_nb.library import open_library

    if getattr(args, "zotero_dir", None):
        return open_library(zotero_dir=args.zotero_dir)
    if getattr(args, "folder", None):
        return open_library(folder=args.folder)
    return open_library(folder=sample.build(sample_dir or Path(tempfile.mkdtemp()) / "sample"))


def _peak_rss_mb() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return round(max(own, children) / 1024, 1)


def bench_index(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.config import Settings
    from zocrates_nb.index import Index, index_library

    library = library_from(args)
    settings = Settings()
    with tempfile.TemporaryDirectory(prefix="zocrates-bench-") as tmp:
        home = Path(tmp)
        index = Index.open(home, settings)
        t0 = time.perf_counter()
        report = index_library(library, index, progress=False)
        cold = time.perf_counter() - t0
        chunks = int(index.status().get("chunks") or 0)
        pages = _pages(index)
        reindex = []
        for _ in range(max(args.repeat, 1)):
            t0 = time.perf_counter()  # a real re-run: read the library again, then index
            index_library(library_from(args), index, progress=False)
            reindex.append(time.perf_counter() - t0)
        search_ms = _search_latencies(index, args.repeat)
        index.close()
    return {
        "library": library.source,
        "items": report.items,
        "documents": report.attachments + report.notes,
        "errors": len(report.errors),
        "pages": pages,
        "chunks": chunks,
        "cold_index_s": round(cold, 2),
        "pages_per_s": round(pages / cold, 2) if cold else None,
        "chunks_per_s": round(chunks / cold, 2) if cold else None,
        "reindex_no_change_s_median": round(statistics.median(reindex), 3),
        "search_warm_ms_p50": round(statistics.median(search_ms), 2),
        "search_warm_ms_p95": round(_p95(search_ms), 2),
        "peak_rss_mb": _peak_rss_mb(),
    }


def _pages(index: Any) -> int:
    """PDF pages indexed (from each document's table of contents)."""
    total = 0
    for doc in index.documents():
        if doc.status == "done" and doc.kind == "pdf":
            total += index.bundle(doc.doc_key).toc.pages or 0
    return total


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _search_latencies(index: Any, repeat: int) -> list[float]:
    index.search("warm-up query", limit=10)  # model load is not search latency
    out = []
    for _ in range(max(repeat, 1)):
        for q in SEARCH_QUERIES:
            t0 = time.perf_counter()
            index.search(q, limit=10)
            out.append((time.perf_counter() - t0) * 1000)
    return out


def bench_search(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.config import load_settings
    from zocrates_nb.index import Index

    index = Index.open(args.home, load_settings(args.home))
    try:
        ms = _search_latencies(index, args.repeat)
    finally:
        index.close()
    return {
        "queries": len(ms),
        "search_warm_ms_p50": round(statistics.median(ms), 2),
        "search_warm_ms_p95": round(_p95(ms), 2),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.what == "index":
        return bench_index(args)
    return bench_search(args)
