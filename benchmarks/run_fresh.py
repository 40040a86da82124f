#!/usr/bin/env python3
"""Measure a tree's answers on the fresh question set and conversations (issue 27's figures).

    HF_HUB_OFFLINE=1 python benchmarks/run_fresh.py --home COPY_OF_AN_INDEXED_HOME [--tree WORKTREE]

Runs `zocrates-nb ask --questions … --no-hitl --json` once (the tree's CLI: `python -m
zocrates_nb.cli` with PYTHONPATH=--tree, default this repository) and each conversation turn by
turn with `ask --session`, then prints per kind the figures the issue names, scored with the
rules of ../shared/tools/judge_answers.py (word cover of a quoted bullet: ≥ 80 % among the first
three for one paper, ≥ 60 % anywhere for a part or a scope; padding ≥ 50 %):
- factual: the paper cited AND its answering sentence among the first three quotes;
- compound: every part's paper cited AND its answering sentence quoted;
- negative: nothing cited AND the answer's own words (not a quote) say the papers lack it;
- scope / collection: nothing cited outside; the answering paper cited with its sentence when
  inside, its title named when outside;
- notes: the note cited (a citation from the note) AND its sentence among the first three quotes;
- padding: quoted bullets (factual, compound) that match no expected sentence;
- cut: quoted bullets that do not end a sentence;
- warm p50 seconds per kind (the App's own `seconds`, after a warm-up question loads the models);
- fresh ask wall p50: the wall time of each conversation turn, a fresh `ask` process each;
- conversations: each turn's `must` (cite / not_cite / says / not_says / own_says /
  whole_sentences / not_repeat a turn's bullets).
Sessions and turns go to --home: use a scratch copy, never a real data home.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent.parent / "shared" / "corpus"
WARM_UP = {"id": "warm-up", "question": "How do replicated systems handle a failed server?"}
# The answer's own words saying the papers lack what was asked (quotes are not read).
SAID = re.compile(
    r"\b(do(es)? not|don['’]t|doesn['’]t|did not|could not|couldn['’]t|cannot|can['’]t|no|not|"
    r"nothing|never|none)\b(\s+\S+){0,6}?\s+(give|gives|given|state|states|stated|say|says|said|"
    r"cover|covers|covered|mention|mentions|mentioned|report|reports|reported|contain|contains|"
    r"evidence|found|find|discuss|discusses|address|addresses|answer|answers|appear|appears)\b",
    re.I)
# A quote's citation and section; a closest passage's "(*Title*, § 2)" label.
CITE_TAIL = re.compile(
    r"(\s*\[\d+\](,?\s*\[\d+\])*)?(\s*_\(.*?\)_)?(\s*\(\*[^()]*\*(, § [^()]*)?\))?\s*$"
)
SENTENCE_END = re.compile(r"[.!?][\"'”’)\]]*$")
ELLIPSIS = re.compile(r"\w{1,20}(…|\.\.\.)(?=\s|$)")  # text shortened mid-sentence


# ------------------------------------------------------------------ the judge's rules
def words(s: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", s.lower().replace("\ufb01", "fi").replace("\ufb00", "ff"))


def cover(expected: str, text: str) -> float:
    e, t = words(expected), set(words(text))
    return sum(w in t for w in e) / max(1, len(e))


def best(e: dict, bullets: list[str]) -> float:
    return max([cover(x, b) for x in [e["sentence"], *e.get("also", [])] for b in bullets] or [0])


def bullets(answer: str | None) -> list[str]:
    return [ln for ln in (answer or "").splitlines() if ln.lstrip().startswith(("- ", "* "))]


def own_words(answer: str | None) -> str:
    """The answer without its quoted bullets."""
    return "\n".join(ln for ln in (answer or "").splitlines()
                     if not ln.lstrip().startswith(("- ", "* ")))


def key(t: str) -> str:
    return " ".join(words(t))[:60]


def cut(bullet: str) -> bool:
    """A quoted bullet that does not end a sentence (citation marks and section stripped)."""
    text = CITE_TAIL.sub("", bullet.lstrip()[2:]).rstrip()
    return bool(text) and not SENTENCE_END.search(text)


class Library:
    """Titles, collections and notes of the corpus library (read-only)."""

    def __init__(self, corpus: Path) -> None:
        self.man = {m["slug"]: m for m in json.loads((corpus / "papers/manifest.json").read_text())}
        db = corpus / "zotero-library" / "zotero.sqlite"
        con = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        self.key_title = dict(con.execute(
            "select i.key, v.value from items i join itemData d on d.itemID=i.itemID join fields f "
            "on f.fieldID=d.fieldID join itemDataValues v on v.valueID=d.valueID "
            "where f.fieldName='title'"))
        self.coll: dict[str, set[str]] = {}
        for name, k in con.execute(
                "select c.collectionName, i.key from collections c join collectionItems ci on "
                "ci.collectionID=c.collectionID join items i on i.itemID=ci.itemID"):
            self.coll.setdefault(name, set()).add(k)
        self.parent = dict(con.execute(
            "select c.collectionName, p.collectionName from collections c join collections p on "
            "c.parentCollectionID=p.collectionID"))

    def title(self, slug: str) -> str:
        return str(self.man[slug]["title"])

    def in_coll(self, name: str) -> set[str]:
        keys = set(self.coll.get(name, set()))
        for child, parent in self.parent.items():
            if parent == name:
                keys |= self.in_coll(child)
        return keys

    def allowed_titles(self, q: dict) -> set[str]:
        allowed = set(q.get("items") or [])
        for c in q.get("collections") or []:
            allowed |= self.in_coll(c)
        return {key(self.key_title.get(k, "")) for k in allowed}


def score(q: dict, o: dict, lib: Library) -> tuple[bool, dict[str, Any]]:
    """Whether the answer `o` meets its kind's figure, and what was seen."""
    kind, exp = q["kind"], q.get("expected") or []
    cited = {key(s.get("title", "")) for s in o.get("cited_sources") or []}
    bl = bullets(o.get("answer"))
    seen: dict[str, Any] = {"bullets": len(bl), "cut": sum(cut(b) for b in bl)}
    if kind in ("factual", "compound"):
        seen["padding"] = sum(1 for b in bl if not any(
            max(cover(x, b) for x in [e["sentence"], *e.get("also", [])]) >= 0.5 for e in exp))
    if kind == "factual":
        e = exp[0]
        seen.update(cited_paper=key(lib.title(e["slug"])) in cited, top3=best(e, bl[:3]) >= 0.8,
                    anywhere=best(e, bl) >= 0.8)
        return seen["cited_paper"] and seen["top3"], seen
    if kind == "compound":
        parts = [key(lib.title(e["slug"])) in cited and best(e, bl) >= 0.6 for e in exp]
        seen["parts_right"] = f"{sum(parts)}/{len(parts)}"
        return all(parts), seen
    if kind == "negative":
        seen.update(uncited=not cited, said=bool(SAID.search(own_words(o.get("answer")))))
        return seen["uncited"] and seen["said"], seen
    if kind == "notes":
        e = exp[0]
        from_note = any(str(c.get("chunk_id", "")).startswith(e["note"] + ":")
                        or c.get("item_key") == e["note"] for c in o.get("citations") or [])
        seen.update(note_cited=from_note, top3=best(e, bl[:3]) >= 0.8)
        return from_note and seen["top3"], seen
    allowed = lib.allowed_titles(q)  # scope / collection
    t = key(lib.title(exp[0]["slug"]))
    seen["outside_cited"] = len(cited - allowed)
    if t in allowed:
        ok = t in cited and not (cited - allowed) and best(exp[0], bl) >= 0.6
    else:
        named = lib.title(exp[0]["slug"]).lower()[:40] in json.dumps(o, ensure_ascii=False).lower()
        seen["elsewhere_named"] = named
        ok = not (cited - allowed) and named
    return ok, seen


# ------------------------------------------------------------------ running the tree's CLI
def cli(args: argparse.Namespace) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(args.tree)}
    return [args.python, "-m", "zocrates_nb.cli", "--home", str(args.home)], env


def ask_batch(args: argparse.Namespace, qs: list[dict]) -> tuple[dict[str, dict], float]:
    base, env = cli(args)
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as f:
        for q in [WARM_UP, *qs]:
            row = {"id": q["id"], "question": q["question"]}
            row.update({k: q[k] for k in ("items", "collections") if q.get(k)})
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    t0 = time.perf_counter()
    p = subprocess.run([*base, "ask", "--questions", f.name, "--no-hitl", "--json"], cwd=args.tree,
                       capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - t0
    os.unlink(f.name)
    out = {}
    for line in p.stdout.splitlines():
        try:
            o = json.loads(line)
        except ValueError:
            continue
        out[str(o.get("id"))] = o
    if not out:
        sys.exit(f"run_fresh: the batch gave no answers: {p.stderr.strip()[-600:]}")
    return out, wall


def ask_turn(args: argparse.Namespace, question: str, session: str | None) -> dict:
    base, env = cli(args)
    cmd = [*base, "ask", question, "--no-hitl", "--json"]
    if session:
        cmd += ["--session", session]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, cwd=args.tree)
    wall = round(time.perf_counter() - t0, 2)
    try:
        result: dict = json.loads(p.stdout)
    except ValueError:
        result = {"status": "error", "answer": "", "error": p.stderr.strip()[-300:]}
    return {**result, "wall_s": wall}


def check_turn(must: dict, o: dict, earlier: list[dict], lib: Library) -> list[str]:
    """What a conversation turn failed to show."""
    cited = {key(s.get("title", "")) for s in o.get("cited_sources") or []}
    answer = o.get("answer") or ""
    fails = [f"{slug} not cited" for slug in must.get("cite", [])
             if key(lib.title(slug)) not in cited]
    fails += [f"{slug} cited" for slug in must.get("not_cite", [])
              if key(lib.title(slug)) in cited]
    fails += [f"does not say “{s}”" for s in must.get("says", [])
              if key(s) not in key(answer.replace("\n", " ")) and s.lower() not in answer.lower()]
    fails += [f"says “{s}”" for s in must.get("not_says", []) if s.lower() in answer.lower()]
    fails += [f"does not say “{s}” in its own words (not a quote)"
              for s in must.get("own_says", []) if s.lower() not in own_words(answer).lower()]
    if must.get("whole_sentences"):
        fails += [f"cut: {b.strip()[:60]}" for b in bullets(answer) if cut(b)]
        fails += [f"cut with an ellipsis: …{m.group(0)}" for m in ELLIPSIS.finditer(answer)]
    if "not_repeat" in must:
        before = {b.strip() for b in bullets(earlier[must["not_repeat"] - 1].get("answer"))}
        again = [b for b in bullets(answer) if b.strip() in before]
        if again:
            fails.append(f"repeats {len(again)} bullet(s) of turn {must['not_repeat']}")
    if not answer.strip():
        fails.append(f"no answer ({o.get('status')}: {o.get('error')})")
    return fails


# ------------------------------------------------------------------ report
def p50(xs: list[float]) -> float | None:
    return round(statistics.median(xs), 2) if xs else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    lib = Library(args.corpus)
    result: dict[str, Any] = {"tree": str(args.tree), "home": str(args.home),
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "load_before": [round(x, 2) for x in os.getloadavg()]}
    if not args.conversations_only:
        qs = [json.loads(ln) for ln in args.questions.read_text("utf-8").splitlines() if ln.strip()]
        qs = [q for q in qs if not args.only or q["id"] in args.only]
        out, wall = ask_batch(args, qs)
        kinds: dict[str, list] = {}
        rows = []
        for q in qs:
            o = out.get(q["id"], {})
            ok, seen = score(q, o, lib)
            kinds.setdefault(q["kind"], []).append((ok, seen, o.get("seconds")))
            rows.append({"id": q["id"], "kind": q["kind"], "ok": ok, **seen,
                         "status": o.get("status"), "seconds": o.get("seconds"),
                         "cited": [s.get("title") for s in o.get("cited_sources") or []],
                         "answer": o.get("answer")})
        figures: dict[str, Any] = {}
        for kind, xs in kinds.items():
            figures[kind] = f"{sum(ok for ok, _, _ in xs)}/{len(xs)}"
        neg = kinds.get("negative", [])
        figures["negative_uncited"] = f"{sum(s['uncited'] for _, s, _ in neg)}/{len(neg)}"
        figures["negative_said"] = f"{sum(s['said'] for _, s, _ in neg)}/{len(neg)}"
        scoped = [(ok, "elsewhere_named" in s) for k in ("scope", "collection")
                  for ok, s, _ in kinds.get(k, [])]
        figures["scope_mismatch"] = (f"{sum(ok for ok, out in scoped if out)}/"
                                     f"{sum(out for _, out in scoped)} (answer outside the scope)")
        figures["scope_inside"] = (f"{sum(ok for ok, out in scoped if not out)}/"
                                   f"{sum(not out for _, out in scoped)} (answer inside the scope)")
        quoted = [s for k in ("factual", "compound") for _, s, _ in kinds.get(k, [])]
        figures["padding"] = (f"{sum(s['padding'] for s in quoted)}/"
                              f"{sum(s['bullets'] for s in quoted)} quoted bullets answer nothing")
        every = [s for xs in kinds.values() for _, s, _ in xs]
        figures["cut"] = (f"{sum(s['cut'] for s in every)}/{sum(s['bullets'] for s in every)}"
                          " quoted bullets do not end a sentence")
        figures["warm_p50_s"] = {k: p50([t for _, _, t in xs if isinstance(t, int | float)])
                                 for k, xs in kinds.items()}
        figures["batch_wall_s"] = round(wall, 1)
        figures["missed"] = [r["id"] for r in rows if not r["ok"]]
        result["figures"] = figures
        result["rows"] = rows
    if not args.questions_only:
        convs = [json.loads(ln) for ln in args.conversations.read_text("utf-8").splitlines()
                 if ln.strip()]
        convs = [c for c in convs if not args.only or c["id"] in args.only]
        conv_rows, walls = [], []
        for c in convs:
            session, turns, fails = None, [], []
            for i, t in enumerate(c["turns"], 1):
                o = ask_turn(args, t["ask"], session)
                session = session or o.get("session_id")
                fails += [f"turn {i}: {f}" for f in check_turn(t.get("must", {}), o, turns, lib)]
                turns.append(o)
                walls.append(o["wall_s"])
            conv_rows.append({"id": c["id"], "ok": not fails, "fails": fails,
                              "answers": [o.get("answer") for o in turns]})
        result["conversations"] = f"{sum(r['ok'] for r in conv_rows)}/{len(conv_rows)}"
        result["conversation_rows"] = conv_rows
        result["fresh_ask_wall_p50_s"] = p50(walls)  # each turn a fresh process, loading included
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", type=Path, required=True, help="a scratch copy of an indexed home")
    ap.add_argument("--tree", type=Path, default=HERE.parent,
                    help="the source tree whose zocrates_nb answers (default: this repository)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--questions", type=Path, default=HERE / "questions-fresh.jsonl")
    ap.add_argument("--conversations", type=Path, default=HERE / "conversations-fresh.jsonl")
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--questions-only", action="store_true")
    only.add_argument("--conversations-only", action="store_true")
    ap.add_argument("--only", nargs="+", metavar="ID", help="only these questions/conversations")
    ap.add_argument("--json", type=Path, help="also write every row (answers too) to this file")
    a = ap.parse_args()
    a.tree, a.home = a.tree.resolve(), a.home.resolve()
    result = run(a)
    if a.json:
        a.json.write_text(json.dumps(result, ensure_ascii=False, indent=1))
    print(f"tree {result['tree']} · {result['date']} · load {result['load_before']} → "
          f"{result['load_after']}")
    for k, v in (result.get("figures") or {}).items():
        print(f"{k:>17}: {v}")
    if "conversations" in result:
        print(f"{'conversations':>17}: {result['conversations']}")
        print(f"{'fresh ask wall p50':>17}: {result['fresh_ask_wall_p50_s']} s "
              "(each turn a fresh `ask` process, loading included)")
        for r in result["conversation_rows"]:
            if not r["ok"]:
                print(f"{'':>19}{r['id']}: " + "; ".join(r["fails"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
