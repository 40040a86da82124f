#!/usr/bin/env python3
"""Check the fresh question set: every answering sentence is verbatim in its paper (or note).

    python benchmarks/check_fresh.py [QUESTIONS] [--corpus ../shared/corpus] [-v]

For each expected `sentence` (and each `also`) of benchmarks/questions-fresh.jsonl:
- papers: found, after the normalisation of ../shared/corpus/QUESTIONS.md (its
  verify_questions.py `norm` / `loose`, strict, hyphen-kept and space-free forms), in pdfium's text
  of one page (or two consecutive pages) of the PDF AND in the item's Zotero `.zotero-ft-cache`
  (pypdf's text), so a chunker on either extractor can quote it; never inside the abstract;
- notes (`kind: notes`): found in the note's text in zotero.sqlite, the note not in the trash;
- scope item keys and collections exist in zotero.sqlite; counts per kind meet the issue's floor;
- no sentence repeats a dev-set evidence phrase, no question repeats a dev question's wording.
Exits 0 on PASS. Needs pypdfium2 (a dependency of the project) and ../shared.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sqlite3
import sys
from itertools import pairwise
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_QUESTIONS = HERE / "questions-fresh.jsonl"
DEFAULT_CORPUS = HERE.parent.parent / "shared" / "corpus"
FLOOR = {"factual": 16, "compound": 10, "negative": 6, "scope": 2, "collection": 2, "notes": 2}
TOTAL_FLOOR = 48


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


class Corpus:
    """The papers, their two extractors' text, the Zotero library and the dev sets."""

    def __init__(self, root: Path) -> None:
        self.root = root
        sys.path.insert(0, str(root))
        import verify_questions as vq  # the shared normalisation (QUESTIONS.md)

        self.norm, self.loose = vq.norm, vq.loose
        manifest = json.loads((root / "papers" / "manifest.json").read_text())
        self.manifest = {m["slug"]: m for m in manifest}
        db = root / "zotero-library" / "zotero.sqlite"
        self.db = sqlite3.connect(f"file:{db}?mode=ro&immutable=1", uri=True)
        self._pages: dict[str, list[list[str]]] = {}
        self._ft: dict[tuple[str, bool], list[str]] = {}

    def forms(self, text: str) -> list[str]:
        lo = self.loose(text)
        return [self.norm(text), self.norm(text, keep_hyphen=True), lo, lo.replace(" ", "")]

    def found(self, sentence: str, text_forms: list[str]) -> bool:
        s = self.forms(sentence)
        return s[0] in text_forms[0] or s[0] in text_forms[1] or s[2] in text_forms[2] \
            or s[3] in text_forms[3]

    def pages(self, slug: str) -> list[list[str]]:
        """pdfium's text per page and per two consecutive pages (a soft hyphen at a line end
        joins the word), in match forms."""
        if slug in self._pages:
            return self._pages[slug]
        import pypdfium2 as pdfium

        pdf = pdfium.PdfDocument(str(self.root / "papers" / self.manifest[slug]["file"]))
        raw = [re.sub("[\ufffe\u00ad][ \t]*\r?\n[ \t]*", "", p.get_textpage().get_text_range())
               for p in pdf]
        pairs = raw + [a + "\n" + b for a, b in pairwise(raw)]
        self._pages[slug] = [self.forms(t) for t in pairs]
        return self._pages[slug]

    def ftcache(self, slug: str, unligatured: bool = False) -> list[str]:
        """Zotero's full-text cache of the item whose title is the paper's, in match forms."""
        if (slug, unligatured) in self._ft:
            return self._ft[slug, unligatured]
        title = self.manifest[slug]["title"]
        row = self.db.execute(
            "select a.key from items a join itemAttachments t on t.itemID=a.itemID join items p "
            "on p.itemID=t.parentItemID join itemData d on d.itemID=p.itemID join fields f on "
            "f.fieldID=d.fieldID join itemDataValues v on v.valueID=d.valueID where "
            "f.fieldName='title' and v.value=? and t.contentType='application/pdf'", (title,),
        ).fetchone()
        path = self.root / "zotero-library" / "storage" / row[0] / ".zotero-ft-cache"
        text = path.read_text("utf-8")
        self._ft[slug, unligatured] = self.forms(unligature(text) if unligatured else text)
        return self._ft[slug, unligatured]

    def page_of(self, slug: str, sentence: str) -> int | None:
        n = len(self.pages(slug))
        for i, forms in enumerate(self.pages(slug)):
            if self.found(sentence, forms):
                return i + 1 if i < (n + 1) // 2 else i - (n + 1) // 2 + 1
        return None

    def note_text(self, key: str) -> tuple[str, bool] | None:
        """(plain text, trashed) of a note item."""
        row = self.db.execute(
            "select n.note, i.itemID in (select itemID from deletedItems) from itemNotes n join "
            "items i on i.itemID=n.itemID where i.key=?", (key,)).fetchone()
        if row is None:
            return None
        text = html.unescape(re.sub(r"<[^>]+>", " ", row[0]))
        return text, bool(row[1])

    def item_keys(self) -> set[str]:
        return {k for (k,) in self.db.execute("select key from items")}

    def collections(self) -> set[str]:
        return {n for (n,) in self.db.execute("select collectionName from collections")}


def unligature(text: str) -> str:
    """Text without the letter groups a ligature glyph prints (fi, fl, ff, ffi, ffl)."""
    return re.sub("ff[il]?|f[il]", "", text)


def words(s: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", s.lower()))


def check(questions: list[dict], corpus: Corpus, verbose: bool = False) -> list[str]:
    """Problems found (empty: PASS)."""
    problems: list[str] = []
    dev = [json.loads(line) for name in ("questions-dev.jsonl", "questions-compound-dev.jsonl")
           for line in (corpus.root / name).read_text().splitlines() if line.strip()]
    dev_phrases = [corpus.loose(g["evidence"]) for q in dev for g in q.get("gold", [])]
    keys, colls = corpus.item_keys(), corpus.collections()
    ids: set[str] = set()
    counts: dict[str, int] = {}
    for q in questions:
        qid, kind = q["id"], q["kind"]
        counts[kind] = counts.get(kind, 0) + 1
        if qid in ids:
            problems.append(f"{qid}: duplicate id")
        ids.add(qid)
        for d in dev:
            qw, dw = words(q["question"]), words(d["question"])
            if len(qw & dw) / max(1, len(qw | dw)) > 0.5:
                problems.append(f"{qid}: wording close to dev question {d['id']}")
        for k in q.get("items") or []:
            if k not in keys:
                problems.append(f"{qid}: no item {k}")
        for c in q.get("collections") or []:
            if c not in colls:
                problems.append(f"{qid}: no collection {c}")
        if kind == "negative" and q.get("expected"):
            problems.append(f"{qid}: a negative expects nothing")
        if kind != "negative" and not q.get("expected"):
            problems.append(f"{qid}: no expected sentence")
        for e in q.get("expected") or []:
            for sentence in [e["sentence"], *e.get("also", [])]:
                if any(p in corpus.loose(sentence) for p in dev_phrases):
                    problems.append(f"{qid}: sentence repeats a dev evidence phrase")
                if kind == "notes":
                    note = corpus.note_text(e["note"])
                    if note is None or note[1]:
                        problems.append(f"{qid}: note {e['note']} missing or trashed")
                    elif not corpus.found(sentence, corpus.forms(note[0])):
                        problems.append(f"{qid}: not in note {e['note']}: {sentence[:60]}")
                    continue
                slug = e["slug"]
                page = corpus.page_of(slug, sentence)
                # pypdf (Zotero's cache here) drops the fi/fl/ff ligature glyphs of some PDFs
                in_ft = corpus.found(sentence, corpus.ftcache(slug)) or corpus.found(
                    unligature(sentence), corpus.ftcache(slug, unligatured=True))
                abstract = corpus.manifest[slug].get("abstract") or ""
                if page is None or not in_ft:
                    where = "pdfium" if page is None else "zotero ft-cache"
                    problems.append(f"{qid}: not in {slug} ({where}): {sentence[:70]}")
                elif abstract and corpus.loose(sentence) in corpus.loose(abstract):
                    problems.append(f"{qid}: {slug} sentence is in the abstract")
                elif verbose:
                    print(f"{qid:4s} {slug:28s} p{page:<3d} ok  {sentence[:60]}")
    for kind, n in FLOOR.items():
        if counts.get(kind, 0) < n:
            problems.append(f"only {counts.get(kind, 0)} {kind} questions (floor {n})")
    if len(questions) < TOTAL_FLOOR:
        problems.append(f"only {len(questions)} questions (floor {TOTAL_FLOOR})")
    return problems


def check_conversations(path: Path, corpus: Corpus) -> list[str]:
    """Each conversation has turns with a question and what the turn must show."""
    problems = []
    for c in load(path):
        if len(c.get("turns") or []) < 2:
            problems.append(f"{c.get('id')}: a conversation needs two turns or more")
        for t in c.get("turns") or []:
            for slug in (t.get("must") or {}).get("cite", []):
                if slug not in corpus.manifest:
                    problems.append(f"{c['id']}: unknown slug {slug}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("questions", nargs="?", type=Path, default=DEFAULT_QUESTIONS)
    ap.add_argument("--conversations", type=Path, default=HERE / "conversations-fresh.jsonl")
    ap.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    corpus = Corpus(a.corpus)
    qs = load(a.questions)
    problems = check(qs, corpus, a.verbose)
    if a.conversations.is_file():
        problems += check_conversations(a.conversations, corpus)
    for p in problems:
        print("FAIL", p)
    kinds: dict[str, int] = {}
    for q in qs:
        kinds[q["kind"]] = kinds.get(q["kind"], 0) + 1
    print(f"{len(qs)} questions {kinds}: {'PASS' if not problems else 'FAIL'}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
