"""Answer evaluation on ../shared/corpus/questions-dev.jsonl, offline (the embedded engine).

For every question, the full pipeline runs through the public API (coordinator → search agent →
rerank → synthesizer → citation verification) with the question's scope, in a fresh session,
with checkpoints off (a batch has no one to ask). Measured, per QUESTIONS.md:

* evidence hit: a gold passage is among the evidence the search gathered (a chunk of the gold
  paper whose text contains the evidence phrase in the loose normalised form, or space-free
  form; or whose page span includes the gold page). Reported per question (any gold passage)
  and per passage.
* gold paper cited: a gold paper is among the Cited sources (any; and all gold papers).
* negative: the negative question cites nothing.
* scope violations: cited or gathered evidence outside a selection/collection scope.
* latency: seconds per question with the models already loaded (p50, p90).

    .venv/bin/python scripts/eval_answers.py [--home DIR] [--corpus DIR] [--questions FILE] [-v]
                                             [--json]

`--home` must hold an index of the corpus's zotero-library (built there if missing); the corpus
is `--corpus`, else $ZOCRATES_TEST_CORPUS, else ../shared/corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from corpus_dir import add_corpus_argument

ROOT = Path(__file__).resolve().parents[1]


def load_corpus_helpers(corpus: Path) -> Any:
    sys.path.insert(0, str(corpus))
    import verify_questions

    return verify_questions


def ensure_index(home: Path, corpus: Path) -> None:
    from zocrates_nb.config import load_settings
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import read_zotero_dir

    with Index.open(home, load_settings(home)) as index:
        if index.catalog.chunk_count():
            return
        print(f"indexing {corpus / 'zotero-library'} into {home} …", file=sys.stderr)
        library = read_zotero_dir(corpus / "zotero-library")
        index_library(library, index, progress=False)


def evidence_hit(gold: dict[str, Any], title: str, rows: list[dict[str, Any]], vq: Any) -> bool:
    phrase = vq.loose(gold["evidence"])
    for r in rows:
        if r.get("title") != title:
            continue
        text = vq.loose(r.get("text") or "")
        if phrase in text or phrase.replace(" ", "") in text.replace(" ", ""):
            return True
        page, page_end = r.get("page"), r.get("page_end") or r.get("page")
        if page is not None and page <= gold["page"] <= (page_end or page):
            return True
    return False


async def prepare(args: argparse.Namespace) -> tuple[Any, dict[str, str], list[Any], Any]:
    """The corpus helpers, titles by slug, the questions asked (`--only`), and the App on the
    indexed home with its models loaded (the figures are "models already loaded")."""
    from zocrates_nb.app import App

    vq = load_corpus_helpers(args.corpus)
    manifest = json.loads((args.corpus / "papers" / "manifest.json").read_text("utf-8"))
    titles = {p["slug"]: p["title"] for p in manifest}
    questions = [
        json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()
    ]
    if args.only:
        questions = [q for q in questions if q["id"] in set(args.only)]
    ensure_index(args.home, args.corpus)
    app = App.open(args.home)
    async for _ in app.ask("hello"):
        pass
    return vq, titles, questions, app


async def run(args: argparse.Namespace) -> dict[str, Any]:
    vq, titles, questions, app = await prepare(args)
    rows_out: list[dict[str, Any]] = []
    try:
        for q in questions:
            scope = q.get("scope") or {}
            collections = [scope["collection"]] if scope.get("collection") else None
            t0 = time.perf_counter()
            final = None
            turn_id = ""
            async for ev in app.ask(
                q["question"], items=scope.get("items"), collections=collections, hitl=False
            ):
                turn_id = ev.turn_id or turn_id
                if ev.type in ("final", "error", "checkpoint"):
                    final = ev
            seconds = time.perf_counter() - t0
            stored = app.turn(turn_id).evidence if turn_id else []
            evidence = [e.model_dump() for e in stored]
            cited = (
                [s.title for s in final.cited_sources] if final and final.type == "final" else []
            )
            gold_titles = sorted({titles[g["slug"]] for g in q["gold"]})
            hits = [evidence_hit(g, titles[g["slug"]], evidence, vq) for g in q["gold"]]
            allowed: set[str] | None = None
            if scope.get("items") or scope.get("collection"):
                allowed = {titles[g["slug"]] for g in q["gold"]} if scope.get("items") else None
            violations = 0
            if scope.get("items"):
                violations = sum(1 for r in evidence if r.get("title") not in (allowed or set()))
            row = {
                "id": q["id"],
                "kind": q["kind"],
                "seconds": round(seconds, 2),
                "status": final.type if final else "none",
                "gold_papers": gold_titles,
                "evidence_hit_any": any(hits) if q["gold"] else None,
                "evidence_hits": hits,
                "gold_cited_any": bool(set(cited) & set(gold_titles)) if q["gold"] else None,
                "gold_cited_all": set(gold_titles) <= set(cited) if q["gold"] else None,
                "cited": cited,
                "cites_nothing": not cited,
                "scope_violations": violations,
                "answer": final.answer
                if final and final.type == "final"
                else getattr(final, "message", ""),
            }
            rows_out.append(row)
            if args.verbose:
                mark = "ok " if (row["gold_cited_any"] or (not q["gold"] and not cited)) else "MISS"
                print(
                    f"{mark} {q['id']} {q['kind']:<10} ev={hits} cited={cited} {seconds:.1f}s",
                    file=sys.stderr,
                )
                if args.verbose > 1:
                    print(row["answer"], "\n", file=sys.stderr)
    finally:
        app.close()
    answerable = [r for r in rows_out if r["kind"] != "negative"]
    negatives = [r for r in rows_out if r["kind"] == "negative"]
    passages = [h for r in answerable for h in r["evidence_hits"]]
    secs = sorted(r["seconds"] for r in rows_out)

    def share(xs: list[bool]) -> float:
        return round(sum(xs) / len(xs), 3) if xs else 0.0

    by_kind: dict[str, dict[str, float]] = {}
    for kind in sorted({r["kind"] for r in answerable}):
        rs = [r for r in answerable if r["kind"] == kind]
        by_kind[kind] = {
            "n": len(rs),
            "evidence_hit": share([bool(r["evidence_hit_any"]) for r in rs]),
            "gold_cited": share([bool(r["gold_cited_any"]) for r in rs]),
        }
    summary = {
        "questions": len(rows_out),
        "answerable": len(answerable),
        "evidence_hit_question": share([bool(r["evidence_hit_any"]) for r in answerable]),
        "evidence_hit_all_passages": share([all(r["evidence_hits"]) for r in answerable]),
        "evidence_hit_passage": share(passages),
        "gold_cited_any": share([bool(r["gold_cited_any"]) for r in answerable]),
        "gold_cited_all": share([bool(r["gold_cited_all"]) for r in answerable]),
        "negative_cites_nothing": share([r["cites_nothing"] for r in negatives]),
        "scope_violations": sum(r["scope_violations"] for r in rows_out),
        "latency_p50_s": round(statistics.median(secs), 2) if secs else None,
        "latency_p90_s": round(secs[int(0.9 * (len(secs) - 1))], 2) if secs else None,
        "by_kind": by_kind,
        "targets": {
            "evidence_hit_question": 0.85,
            "gold_cited_any": 0.75,
            "negative_cites_nothing": 1.0,
        },
    }
    return {"summary": summary, "questions": rows_out}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get("ZOCRATES_EVAL_HOME", ROOT / "test-artifacts" / "eval-home")),
    )
    add_corpus_argument(p)
    p.add_argument("--questions", type=Path, help="default: the corpus's questions-dev.jsonl")
    p.add_argument("--only", nargs="+", help="question ids")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("--json", action="store_true", help="print every question's row too")
    args = p.parse_args()
    if not args.corpus.is_dir():
        print(f"test corpus not found: {args.corpus} (give --corpus)", file=sys.stderr)
        return 2
    args.questions = args.questions or args.corpus / "questions-dev.jsonl"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = asyncio.run(run(args))
    out = result if args.json else result["summary"]
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
