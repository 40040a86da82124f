"""Index one library with two checkouts of zocrates-nb, alternately, and compare.

    python scripts/ab_index.py --old /tmp/zocrates-main --new . \
        --zotero-dir ../shared/corpus/zotero-library

Each round indexes the library into a fresh temporary home with the old code, then the new
(the order alternates between rounds, so a machine whose load drifts favours neither). Reported:
the median pages/s of each and their ratio, and whether the results are the same: chunk ids
and texts, and the top-10 of a set of queries (hybrid search).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUERIES = [
    "how is a leader elected", "what happens when a lock holder fails",
    "reciprocal rank fusion constant", "BM25 term frequency saturation",
    "evaluation recall at 10", "tidy data each variable a column",
    "replicated log consistency", "embedding model dimensions",
    "garbage collection of deleted files", "self-attention complexity per layer",
]  # fmt: skip

CHILD = r"""
import hashlib, json, resource, sys, time
from pathlib import Path
from zocrates_nb.config import Settings
from zocrates_nb.index import Index, index_library
from zocrates_nb.library import open_library
kind, source, home, queries = sys.argv[1], sys.argv[2], Path(sys.argv[3]), json.loads(sys.argv[4])
library = open_library(**{kind: Path(source)})
index = Index.open(home, Settings())
def cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
t0, c0 = time.perf_counter(), cpu()
report = index_library(library, index, progress=False)
seconds, cpu_seconds = time.perf_counter() - t0, cpu() - c0
pages = sum(index.bundle(d.doc_key).toc.pages or 0 for d in index.documents()
            if d.status == "done" and d.kind == "pdf")
rows = index.catalog.query("SELECT chunk_id, text FROM chunks ORDER BY chunk_id")
digest = hashlib.sha256(json.dumps([[r["chunk_id"], r["text"]] for r in rows]).encode())
top = {q: [h.chunk.chunk_id for h in index.search(q, limit=10)] for q in queries}
print(json.dumps({
    "seconds": seconds, "cpu_seconds": cpu_seconds, "pages": pages, "chunks": len(rows),
    "chunks_sha": digest.hexdigest(),
    "top10": top, "timings": getattr(report, "timings", {}),
    "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}))
"""


def _run(code: Path, kind: str, source: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="zoc-ab-") as home:
        env = {**os.environ, "PYTHONPATH": str(code), "HF_HUB_OFFLINE": "1"}
        out = subprocess.run(
            [sys.executable, "-c", CHILD, kind, source, home, json.dumps(QUERIES)],
            env=env, capture_output=True, text=True, check=True,
            cwd=code,  # `python -c` puts the working directory first on sys.path
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--old", type=Path, required=True, help="checkout of the code to compare to")
    p.add_argument("--new", type=Path, default=Path("."))
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--zotero-dir")
    src.add_argument("--folder")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    kind, source = ("zotero_dir", args.zotero_dir) if args.zotero_dir else ("folder", args.folder)
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for r in range(args.rounds):
        order = ("old", "new") if r % 2 == 0 else ("new", "old")
        for which in order:
            code = (args.old if which == "old" else args.new).resolve()
            runs[which].append(_run(code, kind, source))
            print(which, json.dumps({k: v for k, v in runs[which][-1].items() if k != "top10"}),
                  file=sys.stderr, flush=True)
    old, new = runs["old"][-1], runs["new"][-1]
    rate = {w: statistics.median(x["pages"] / x["seconds"] for x in runs[w]) for w in runs}
    per_cpu = {w: statistics.median(x["pages"] / x["cpu_seconds"] for x in runs[w]) for w in runs}
    overlap = [len(set(old["top10"][q]) & set(new["top10"][q])) / 10 for q in QUERIES]
    same_order = sum(old["top10"][q] == new["top10"][q] for q in QUERIES)
    print(json.dumps({
        "rounds": args.rounds, "pages": new["pages"], "chunks": new["chunks"],
        "old_pages_per_s_median": round(rate["old"], 2),
        "new_pages_per_s_median": round(rate["new"], 2),
        "speedup": round(rate["new"] / rate["old"], 2),
        # CPU seconds of the indexer and its converter processes: on a loaded machine more
        # processes get a larger share of the cores, so wall time alone flatters a pool.
        "old_pages_per_cpu_s_median": round(per_cpu["old"], 2),
        "new_pages_per_cpu_s_median": round(per_cpu["new"], 2),
        "old_seconds": [round(x["seconds"], 1) for x in runs["old"]],
        "new_seconds": [round(x["seconds"], 1) for x in runs["new"]],
        "new_timings_last": new["timings"],
        "old_rss_mb_max": round(max(x["rss_mb"] for x in runs["old"])),
        "new_rss_mb_max": round(max(x["rss_mb"] for x in runs["new"])),
        "same_chunks": old["chunks_sha"] == new["chunks_sha"],
        "top10_overlap_mean": round(statistics.mean(overlap), 3),
        "top10_identical_queries": f"{same_order}/{len(QUERIES)}",
    }, indent=1))


if __name__ == "__main__":
    main()
