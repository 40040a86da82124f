"""Answer evaluation on ../shared/corpus/questions-compound-dev.jsonl, offline, per kind.

Every question runs through the public API (coordinator → search → rerank → synthesizer →
verification) with its scope, in a fresh session, checkpoints off. Scored per kind as issue 10
asks (QUESTIONS.md describes the kinds):

* compound: the answer cites ≥ 2 gold papers (`cited_2`); also every gold paper (`cited_all`)
  and every gold paper with a passage hit among the gathered evidence (`gathered_all`).
* negative: no citation, and the answer says the library does not cover the question.
* scope_mismatch: the answer names the `answer_elsewhere` item by its title and cites nothing
  outside the scope (`ok`); also whether the turn's structured `elsewhere` field holds it.
* partial: a gold paper is cited and the answer says the other part is not covered.

    .venv/bin/python scripts/eval_compound.py --home H [--corpus DIR] [--questions FILE]
                                              [--only ID…] [-v] [--json]

`--home` must hold an index of the corpus's zotero-library (built there if missing).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from corpus_dir import add_corpus_argument
from eval_answers import ROOT, evidence_hit, prepare

# How an answer says that (a part of) the question is not covered by the library.
NOT_COVERED_RE = re.compile(
    r"not covered|no evidence|holds? nothing|does not (cover|mention|report|discuss|say)|"
    r"do(es)? not (answer|address)|not (in|part of) (your|the) library|nothing in (it|the)",
    re.I,
)


def norm_title(t: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", t.casefold()).split())


def names(answer: str, title: str) -> bool:
    """Whether the answer names a paper by its title (the part before a subtitle will do)."""
    a = norm_title(answer)
    full = norm_title(title)
    head = norm_title(re.split(r"[:—–]", title, maxsplit=1)[0])
    return full in a or (len(head.split()) >= 1 and len(head) >= 5 and head in a)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.retrieval import allowed_keys
    from zocrates_nb.turn import Scope

    vq, titles, questions, app = await prepare(args)
    rows: list[dict[str, Any]] = []
    try:
        index = app.library_index
        for q in questions:
            scope = q.get("scope") or {}
            items = scope.get("items")
            collections = scope.get("collections") or (
                [scope["collection"]] if scope.get("collection") else None
            )
            in_scope = set(
                allowed_keys(index, Scope(items=items or [], collections=collections or []))
            )
            t0 = time.perf_counter()
            final = None
            turn_id = ""
            async for ev in app.ask(
                q["question"], items=items, collections=collections, hitl=False
            ):
                turn_id = ev.turn_id or turn_id
                if ev.type in ("final", "error", "checkpoint"):
                    final = ev
            seconds = time.perf_counter() - t0
            record = app.turn(turn_id) if turn_id else None
            evidence = [e.model_dump() for e in record.evidence] if record else []
            ok_final = final is not None and final.type == "final"
            answer = final.answer if ok_final else getattr(final, "message", "")
            cited = [s for s in final.cited_sources] if ok_final else []
            cited_titles = {s.title for s in cited}
            gold_titles = sorted({titles[g["slug"]] for g in q["gold"]})
            hits = [evidence_hit(g, titles[g["slug"]], evidence, vq) for g in q["gold"]]
            elsewhere = [s.title for s in getattr(record, "elsewhere", []) or []]
            row: dict[str, Any] = {
                "id": q["id"],
                "kind": q["kind"],
                "seconds": round(seconds, 2),
                "status": final.type if final else "none",
                "cited": sorted(cited_titles),
                "answer": answer,
                "gathered": hits,
                "elsewhere": elsewhere,
            }
            kind = q["kind"]
            says_not = bool(NOT_COVERED_RE.search(answer))
            if kind == "compound":
                n_gold = len(set(gold_titles) & cited_titles)
                row.update(
                    cited_2=n_gold >= 2,
                    cited_all=n_gold == len(gold_titles),
                    gathered_all=all(hits),
                )
                row["ok"] = row["cited_2"]
            elif kind == "negative":
                row.update(uncited=not cited, says_not=says_not)
                row["ok"] = not cited and says_not
            elif kind == "scope_mismatch":
                where = [index.item(k) for k in q.get("answer_elsewhere", [])]
                where_titles = [w.title for w in where if w is not None]
                outside = [s.title for s in cited if in_scope and s.item_key not in in_scope]
                row.update(
                    names_elsewhere=any(names(answer, t) for t in where_titles),
                    cites_outside=outside,
                    field_elsewhere=any(t in elsewhere for t in where_titles),
                    uncited=not cited,
                )
                row["ok"] = row["names_elsewhere"] and not outside
            elif kind == "partial":
                row.update(gold_cited=bool(set(gold_titles) & cited_titles), says_gap=says_not)
                row["ok"] = row["gold_cited"] and says_not
            else:  # questions-dev.jsonl kinds: only whether a narrower scope named elsewhere
                row.update(ok=None, gold_cited=bool(set(gold_titles) & cited_titles))
            rows.append(row)
            if args.verbose:
                mark = "ok  " if row.get("ok") else "MISS"
                print(
                    f"{mark} {q['id']} {kind:<14} cited={row['cited']} "
                    f"elsewhere={elsewhere} ev={hits} {seconds:.1f}s",
                    file=sys.stderr,
                )
                if args.verbose > 1:
                    print(answer, "\n", file=sys.stderr)
    finally:
        app.close()

    def share(xs: list[bool]) -> str:
        return f"{sum(xs)}/{len(xs)}" if xs else "0/0"

    by_kind: dict[str, dict[str, Any]] = {}
    for kind in ("compound", "negative", "scope_mismatch", "partial"):
        rs = [r for r in rows if r["kind"] == kind]
        if not rs:
            continue
        d: dict[str, Any] = {"n": len(rs), "ok": share([bool(r["ok"]) for r in rs])}
        if kind == "compound":
            d.update(
                cited_2=share([r["cited_2"] for r in rs]),
                cited_all=share([r["cited_all"] for r in rs]),
                gathered_all=share([r["gathered_all"] for r in rs]),
            )
        elif kind == "negative":
            d.update(
                uncited=share([r["uncited"] for r in rs]),
                says_not=share([r["says_not"] for r in rs]),
            )
        elif kind == "scope_mismatch":
            d.update(
                names_elsewhere=share([r["names_elsewhere"] for r in rs]),
                field_elsewhere=share([r["field_elsewhere"] for r in rs]),
                no_outside_citation=share([not r["cites_outside"] for r in rs]),
                uncited=share([r["uncited"] for r in rs]),
            )
        elif kind == "partial":
            d.update(
                gold_cited=share([r["gold_cited"] for r in rs]),
                says_gap=share([r["says_gap"] for r in rs]),
            )
        by_kind[kind] = d
    secs = sorted(r["seconds"] for r in rows)
    summary = {
        "questions": len(rows),
        "ok": share([bool(r["ok"]) for r in rows if r["ok"] is not None]),
        "scoped_with_elsewhere": [
            r["id"] for r in rows if r["kind"] in ("selection", "collection") and r["elsewhere"]
        ],
        "by_kind": by_kind,
        "latency_p50_s": secs[len(secs) // 2] if secs else None,
    }
    return {"summary": summary, "questions": rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument(
        "--home",
        type=Path,
        default=Path(os.environ.get("ZOCRATES_EVAL_HOME", ROOT / "test-artifacts" / "eval-home")),
    )
    add_corpus_argument(p)
    p.add_argument(
        "--questions", type=Path, help="default: the corpus's questions-compound-dev.jsonl"
    )
    p.add_argument("--only", nargs="+", help="question ids")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("--json", action="store_true", help="print every question's row too")
    args = p.parse_args()
    if not args.corpus.is_dir():
        print(f"test corpus not found: {args.corpus} (give --corpus)", file=sys.stderr)
        return 2
    args.questions = args.questions or args.corpus / "questions-compound-dev.jsonl"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    result = asyncio.run(run(args))
    out = result if args.json else result["summary"]
    print(json.dumps(out, ensure_ascii=False, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
