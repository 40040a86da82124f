"""RIS and BibTeX files of staged candidates, for a manual import into any reference manager."""

from __future__ import annotations

import re

from bibtexparser.bibdatabase import BibDatabase
from bibtexparser.bwriter import BibTexWriter

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.writeback.items import is_preprint


def to_bibtex(candidates: list[Candidate]) -> str:
    """One entry per candidate, keyed `<lastname><year><firstword>` made unique."""
    db = BibDatabase()
    used: set[str] = set()
    for c in candidates:
        key = base = _cite_key(c)
        n = 1
        while key in used:
            n += 1
            key = f"{base}{chr(ord('a') + n - 2)}" if n <= 27 else f"{base}{n}"
        used.add(key)
        preprint = is_preprint(c)
        entry = {
            "ENTRYTYPE": "misc" if preprint else "article",
            "ID": key,
            "title": _tex(c.title),
            "author": " and ".join(_tex(a) for a in c.authors),
        }
        optional = {
            "year": str(c.year) if c.year else "",
            "journal": "" if preprint else _tex(c.venue),
            "doi": c.doi or "",
            "eprint": c.arxiv_id or "",
            "archiveprefix": "arXiv" if c.arxiv_id else "",
            "url": c.url or "",
            "abstract": _tex(c.abstract),
        }
        entry.update({k: v for k, v in optional.items() if v})
        db.entries.append({k: v for k, v in entry.items() if v})
    writer = BibTexWriter()
    writer.order_entries_by = None
    return str(writer.write(db))


def to_ris(candidates: list[Candidate]) -> str:
    """RIS: `TY` … `ER` per candidate (journal article, or preprint for arXiv-only papers)."""
    lines: list[str] = []
    for c in candidates:
        preprint = is_preprint(c)
        lines.append(f"TY  - {'PREP' if preprint else 'JOUR'}")
        lines.append(f"TI  - {_one_line(c.title)}")
        lines += [f"AU  - {_one_line(a)}" for a in c.authors if a.strip()]
        if c.year:
            lines.append(f"PY  - {c.year}")
        if c.venue and not preprint:
            lines.append(f"JO  - {_one_line(c.venue)}")
        if c.doi:
            lines.append(f"DO  - {c.doi}")
        if c.url:
            lines.append(f"UR  - {c.url}")
        if c.arxiv_id:
            lines.append(f"AN  - arXiv:{c.arxiv_id}")
        if c.abstract:
            lines.append(f"AB  - {_one_line(c.abstract)}")
        lines += ["ER  - ", ""]
    return "\n".join(lines)


_TEX_SPECIAL = re.compile(r"([&%$#_{}])")


def _tex(text: str) -> str:
    """LaTeX's special characters escaped in prose fields (`&` → `\\&`); URLs and DOIs stay."""
    return _TEX_SPECIAL.sub(r"\\\1", text)


def _cite_key(c: Candidate) -> str:
    last = re.sub(r"[^a-z]", "", (c.authors[0].split()[-1] if c.authors else "anon").lower())
    word = next((w for w in re.findall(r"[a-z]+", c.title.lower()) if len(w) > 3), "paper")
    return f"{last or 'anon'}{c.year or ''}{word}"


def _one_line(text: str) -> str:
    return " ".join(text.split())
