"""Scoped search recall@k on question sets (../shared/corpus/questions-dev.jsonl and
questions-compound-dev.jsonl by default).

Each question runs through `search_corpus` exactly as the search agent's first call would:
a fresh run state whose scope is the question's scope (items, collection(s) + subcollections,
or the whole library), `item_key=None`. A passage counts as found when a top-k result comes from
the gold paper and either contains the gold phrase (loose match, as QUESTIONS.md defines it) or
its page span includes the gold page; the phrase-only figure drops the page rule. Negative and
scope-mismatch questions (whose gold lies outside the scope) are not counted in recall, only in
scope violations. `chars@10` is the text the agent receives for one query (median and max).

    zocrates-nb --home H index --zotero-dir ../shared/corpus/zotero-library
    .venv/bin/python scripts/eval_recall.py --home H [--corpus DIR] [--questions FILE …] [--json]

The corpus is `--corpus`, else $ZOCRATES_TEST_CORPUS, else ../shared/corpus.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from corpus_dir import add_corpus_argument

KS = (1, 5, 10)


def _slug_items(index: Any, corpus: Path) -> dict[str, str]:
    """Paper slug → Zotero item key, by title (how QUESTIONS.md says to map them)."""
    manifest = json.loads((corpus / "papers" / "manifest.json").read_text("utf-8"))
    by_title = {it.title.casefold().strip(): it.key for it in index.items()}
    return {p["slug"]: by_title.get(p["title"].casefold().strip(), "") for p in manifest}


def evaluate(home: Path, questions: Path, corpus: Path) -> dict[str, Any]:
    sys.path.insert(0, str(corpus))
    from verify_questions import loose  # type: ignore[import-not-found]

    from zocrates_nb.config import load_settings
    from zocrates_nb.index import Index
    from zocrates_nb.retrieval import Toolkit, bind
    from zocrates_nb.turn import Scope

    settings = load_settings(home)
    index = Index.open(home, settings)
    slugs = _slug_items(index, corpus)
    rows = []
    try:
        for line in questions.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            q = json.loads(line)
            scope_spec = q.get("scope") or {}
            cols = list(scope_spec.get("collections") or [])
            if scope_spec.get("collection"):
                cols.append(scope_spec["collection"])
            scope = Scope(items=scope_spec.get("items") or [], collections=cols)
            state = bind(index, scope, settings.retrieval, goal=q["question"])
            kit = Toolkit(index, state)
            got = kit.search_corpus(q["question"], limit=max(KS))
            results = got.get("results", [])
            allowed = set(state.allowed_keys)
            violations = sum(1 for r in results if scope.kind != "library"
                             and r["item_key"] not in allowed)
            row: dict[str, Any] = {"id": q["id"], "kind": q["kind"], "violations": violations,
                                   "chars": sum(len(r["text"]) for r in results)}
            if not q["gold"] or q["kind"] == "scope_mismatch":
                row["top_score"] = None  # negative: nothing to find
                row["top_title"] = results[0]["title"] if results else ""
                rows.append(row)
                continue
            first_hit: list[int | None] = []
            phrase_hit: list[int | None] = []
            for g in q["gold"]:
                key = slugs.get(g["slug"], "")
                phrase = loose(g["evidence"])
                rank = phrase_rank = None
                for n, r in enumerate(results, 1):
                    if r["item_key"] != key:
                        continue
                    text = loose(r["text"])
                    chunk = index.chunk(r["chunk_id"])
                    pages = (chunk.page, chunk.page_end or chunk.page) if chunk else (None, None)
                    on_page = pages[0] is not None and pages[0] <= g["page"] <= (pages[1] or 0)
                    has_phrase = phrase in text or phrase.replace(" ", "") in text.replace(" ", "")
                    if has_phrase and phrase_rank is None:
                        phrase_rank = n
                    if (has_phrase or on_page) and rank is None:
                        rank = n
                first_hit.append(rank)
                phrase_hit.append(phrase_rank)
            row["gold_ranks"] = first_hit
            row["phrase_ranks"] = phrase_hit
            row["papers"] = [g["slug"] for g in q["gold"]]
            rows.append(row)
    finally:
        index.close()
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    answerable = [r for r in rows if "gold_ranks" in r]
    out: dict[str, Any] = {"questions": len(rows), "answerable": len(answerable),
                           "hit_rule": "gold paper and (loose phrase in chunk text or gold page "
                                       "in the chunk's page span)"}
    for k in KS:
        hits = [rank is not None and rank <= k for r in answerable for rank in r["gold_ranks"]]
        out[f"recall@{k}_passage"] = round(statistics.fmean(hits), 3) if hits else 0.0
        per_q = []
        for r in answerable:
            found: dict[str, bool] = defaultdict(bool)
            for slug, rank in zip(r["papers"], r["gold_ranks"], strict=True):
                found[slug] |= rank is not None and rank <= k
            per_q.append(all(found.values()))
        out[f"recall@{k}_question"] = round(statistics.fmean(per_q), 3) if per_q else 0.0
        strict = [rank is not None and rank <= k for r in answerable for rank in r["phrase_ranks"]]
        out[f"recall@{k}_passage_phrase_only"] = (
            round(statistics.fmean(strict), 3) if strict else 0.0
        )
    by_kind: dict[str, list[bool]] = defaultdict(list)
    for r in answerable:
        by_kind[r["kind"]] += [rank is not None and rank <= 10 for rank in r["gold_ranks"]]
    out["recall@10_passage_by_kind"] = {k: round(statistics.fmean(v), 3)
                                        for k, v in sorted(by_kind.items())}
    out["scope_violations"] = sum(r["violations"] for r in rows)
    chars = [r["chars"] for r in rows]
    out["chars@10_median_max"] = [int(statistics.median(chars)), max(chars)] if chars else [0, 0]
    out["missed@10"] = [r["id"] for r in answerable
                        if any(rank is None or rank > 10 for rank in r["gold_ranks"])]
    out["per_question"] = rows
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--home", type=Path, required=True, help="data home with the indexed library")
    add_corpus_argument(p)
    p.add_argument("--questions", type=Path, nargs="+",
                   help="default: the corpus's questions-dev.jsonl and "
                        "questions-compound-dev.jsonl")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    questions = args.questions or [args.corpus / "questions-dev.jsonl",
                                   args.corpus / "questions-compound-dev.jsonl"]
    results = {path.name: evaluate(args.home, path, args.corpus) for path in questions}
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for name, result in results.items():
        print(f"== {name}")
        for key, value in result.items():
            if key != "per_question":
                print(f"{key:>32}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
