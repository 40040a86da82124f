"""Convert the gold-TOC dev papers and score them with the shared scorer.

Usage: python scripts/score_converter.py [PRED.json] [--all] [--slugs a,b] [--dump DIR]
                                         [--corpus DIR]
PRED.json defaults to a temporary file (never inside the project). `--all` also converts the
papers outside the dev set (not scored) and reports the speed over every PDF. The corpus is
`--corpus`, else $ZOCRATES_TEST_CORPUS, else ../shared/corpus.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from corpus_dir import add_corpus_argument  # noqa: E402

from zocrates_nb.ingest import convert_file  # noqa: E402
from zocrates_nb.ingest.bundle import Bundle  # noqa: E402


def prediction(slug: str, bundle: Bundle) -> dict[str, object]:
    toc = bundle.toc
    return {
        "slug": slug,
        "sections": [
            {"level": s.level, "number": s.number, "title": s.title, "page": s.page}
            for s in toc.sections[1:]
        ],
        "figures": [{"label": f.label, "page": f.page} for f in toc.figures],
        "tables": [{"label": t.label, "page": t.page} for t in toc.tables],
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("pred", nargs="?", help="where to write PRED.json (default: a temp file)")
    ap.add_argument("--all", action="store_true", help="also convert the non-dev papers")
    ap.add_argument("--slugs", default="", help="comma-separated subset")
    ap.add_argument("--dump", default="", help="directory to save bundles into")
    add_corpus_argument(ap)
    args = ap.parse_args()
    gold_set = args.corpus / "gold-toc" / "dev.json"
    papers = args.corpus / "papers"
    if not gold_set.is_file():
        print(f"gold set not found: {gold_set} (give --corpus)")
        return 2
    dev = [g["slug"] for g in json.loads(gold_set.read_text("utf-8"))]
    slugs = list(dev)
    if args.all:
        slugs += sorted(p.stem for p in papers.glob("*.pdf") if p.stem not in dev)
    if args.slugs:
        slugs = [s for s in args.slugs.split(",") if s]
    preds = []
    pages = 0
    t0 = time.perf_counter()
    for slug in slugs:
        t = time.perf_counter()
        bundle = convert_file(papers / f"{slug}.pdf")
        dt = time.perf_counter() - t
        pages += bundle.toc.pages or 0
        toc = bundle.toc
        print(f"{slug:32s} {toc.pages:3d} pages {dt:6.2f}s  {len(toc.sections) - 1:3d} headings "
              f"{len(toc.figures):3d} figures {len(toc.tables):3d} tables")
        if args.dump:
            bundle.save(Path(args.dump) / slug)
        if slug in dev:
            preds.append(prediction(slug, bundle))
    total = time.perf_counter() - t0
    print(f"converted {len(slugs)} PDFs, {pages} pages in {total:.1f}s "
          f"({total / max(pages, 1):.3f} s/page, {pages / max(total, 1e-9):.1f} pages/s)")
    out = Path(args.pred) if args.pred else Path(tempfile.mkdtemp()) / "pred.json"
    out.write_text(json.dumps(preds, ensure_ascii=False, indent=1), "utf-8")
    if not preds:
        return 0
    gold = gold_set
    if args.slugs:  # score only the converted dev papers
        subset = [g for g in json.loads(gold_set.read_text("utf-8")) if g["slug"] in slugs]
        gold = out.with_name("gold-subset.json")
        gold.write_text(json.dumps(subset), "utf-8")
    scorer = args.corpus / "gold-toc" / "score_toc.py"
    return subprocess.call([sys.executable, str(scorer), str(out), str(gold)])


if __name__ == "__main__":
    raise SystemExit(main())
