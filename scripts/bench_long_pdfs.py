"""Conversion speed and memory on long generated PDFs: is conversion linear in pages?

Usage: python scripts/bench_long_pdfs.py [--pages 30,60,120] [--report 600] [--repeat 3]

Writes, into a temporary folder, one table running over N pages (the hostile-file kit's
`long_table_pdf`) for each N and a report of `--report` full pages of text, converts each in
a fresh process `--repeat` times and prints the median CPU seconds, pages per CPU second and
the peak RSS of the converting process. CPU time, not wall time: the figures hold on a busy
machine. Linear conversion keeps pages/s flat as N grows.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from hostile_kit import long_pdf, long_table_pdf  # noqa: E402

_CHILD = """
import json, resource, sys, time
from pathlib import Path
import zocrates_nb.ingest.pdf as pdf
pdf.TIME_BUDGET_S = 1e9  # measure, do not stop
t = time.process_time()
bundle = pdf.convert_pdf(Path(sys.argv[1]), max_pages=100_000)
cpu = time.process_time() - t
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"pages": bundle.toc.pages, "cpu": cpu, "rss_mb": rss}))
"""


def measure(path: Path, repeat: int) -> dict[str, float]:
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], capture_output=True,
                             text=True, check=True, cwd=ROOT)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    cpu = statistics.median(r["cpu"] for r in runs)
    return {"pages": runs[0]["pages"], "cpu_s": round(cpu, 2),
            "pages_per_cpu_s": round(runs[0]["pages"] / cpu, 1),
            "peak_rss_mb": round(max(r["rss_mb"] for r in runs))}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default="30,60,120", help="table lengths in pages")
    ap.add_argument("--report", type=int, default=600, help="pages of the long report (0: none)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="zocrates-bench-") as tmp:
        files = [long_table_pdf(Path(tmp) / f"table-{n}.pdf", pages=int(n))
                 for n in args.pages.split(",")]
        if args.report:
            files.append(long_pdf(Path(tmp) / f"report-{args.report}.pdf", pages=args.report,
                                 lines=45))  # full pages of text
        for path in files:
            print(path.stem, json.dumps(measure(path, args.repeat)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
