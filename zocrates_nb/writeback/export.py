"""RIS and BibTeX files of staged candidates, written so that Zotero's own import translators
(`zotero/translators` RIS.js and BibTeX.js) read every field back as it was: the Zotero item of
each candidate (`zotero_item`, one source of truth for types and fields) in the tags and
fields those translators map to Zotero's fields.

RIS: authors "Last, First"; the venue in its type's tag (T2, C3 or PB — never JO, which RIS.js
reads as the journal abbreviation); a preprint as `GEN` (what Zotero exports it as) with
`Type: preprint`, its repository and archive id as Extra lines (M2), which Zotero turns back
into a preprint's fields when it saves the item; the PDF link as L1. BibTeX: TeX maths as the
characters they stand for (BibTeX.js reads `\\le` as `ł`e, `\\infty` as `ı`nfty, so maths are
written as Unicode), LaTeX's specials escaped outside maths, capitals protected in braces, the
arXiv id as BibLaTeX's `eprinttype`/`eprint`, the PDF as a `file` link."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from bibtexparser.bibdatabase import BibDatabase
from bibtexparser.bwriter import BibTexWriter
from pylatexenc.latex2text import LatexNodes2Text

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.names import creator, family_given

RIS_TYPES = {"journalArticle": "JOUR", "conferencePaper": "CONF", "bookSection": "CHAP",
             "thesis": "THES", "report": "RPRT", "book": "BOOK", "preprint": "GEN"}  # fmt: skip
# Zotero field → the RIS tag RIS.js maps it to for that item type.
RIS_FIELDS = {"publicationTitle": "T2", "bookTitle": "T2", "proceedingsTitle": "C3",
              "publisher": "PB", "university": "PB", "institution": "PB"}  # fmt: skip
BIB_TYPES = {"journalArticle": "article", "conferencePaper": "inproceedings",
             "bookSection": "incollection", "thesis": "phdthesis", "report": "techreport",
             "book": "book", "preprint": "misc"}  # fmt: skip
BIB_FIELDS = {"publicationTitle": "journal", "proceedingsTitle": "booktitle",
              "bookTitle": "booktitle", "university": "school", "institution": "institution",
              "publisher": "publisher", "repository": "publisher"}  # fmt: skip
_MATHS = LatexNodes2Text(math_mode="text")


def to_ris(candidates: list[Candidate]) -> str:
    """One `TY` … `ER` record per candidate."""
    lines: list[str] = []
    for c in candidates:
        item = zotero_item(c)
        kind = item["itemType"]
        lines.append(f"TY  - {RIS_TYPES.get(kind, 'JOUR')}")
        lines.append(f"TI  - {_ris(item['title'])}")
        lines += [f"AU  - {_ris(_last_first(a))}" for a in item.get("creators", [])]
        if c.year:
            lines.append(f"PY  - {c.year}")
        for field, tag in RIS_FIELDS.items():
            if item.get(field):
                lines.append(f"{tag}  - {_ris(item[field])}")
        if item.get("ISBN") and kind != "report":  # a report's SN is its number
            lines.append(f"SN  - {item['ISBN']}")
        extra = item.get("extra", "").splitlines()
        if kind == "preprint":
            extra = ["Type: preprint", *(f"{label}: {item[f]}" for label, f in
                     (("Repository", "repository"), ("Archive ID", "archiveID")) if item.get(f)),
                     *extra]  # fmt: skip
        lines += [f"M2  - {_ris(e)}" for e in extra]
        if item.get("DOI"):
            lines.append(f"DO  - {item['DOI']}")
        if item.get("url"):
            lines.append(f"UR  - {item['url']}")
        if c.pdf_url:
            lines.append(f"L1  - {c.pdf_url}")
        if item.get("abstractNote"):
            lines.append(f"AB  - {_one_line(item['abstractNote'])}")
        lines += [f"KW  - {_ris(t['tag'])}" for t in item.get("tags", [])]
        lines += ["ER  - ", ""]
    return "\n".join(lines)


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
        item = zotero_item(c)
        kind = item["itemType"]
        entry: dict[str, str] = {
            "ENTRYTYPE": BIB_TYPES.get(kind, "article"),
            "ID": key,
            "title": _tex(item["title"], protect=True),
            "author": " and ".join(_bib_name(a) for a in item.get("creators", [])),
            "year": str(c.year or ""),
        }
        for field, bib in BIB_FIELDS.items():
            if item.get(field) and bib not in entry:
                entry[bib] = _tex(item[field], protect=bib != "publisher")
        entry.update({
            "isbn": item.get("ISBN", ""),
            "doi": item.get("DOI", ""),
            "url": item.get("url", ""),
            "eprinttype": "arxiv" if c.arxiv_id else "",
            "eprint": c.arxiv_id or "",
            "file": f"Full Text PDF:{_file_path(c.pdf_url)}:application/pdf" if c.pdf_url else "",
            "abstract": _tex(item.get("abstractNote", "")),
            "keywords": ", ".join(_tex(t["tag"]) for t in item.get("tags", [])),
        })  # fmt: skip
        db.entries.append({k: v for k, v in entry.items() if v})
    writer = BibTexWriter()
    writer.order_entries_by = None
    return str(writer.write(db))


def _last_first(c: dict[str, Any]) -> str:
    """RIS's "Family, Given, Suffix" (RIS.js keeps what follows the first comma as the given
    name); a one-field name (an organisation) without a comma, which RIS.js keeps whole."""
    family, given, suffix = family_given(c)
    return ", ".join(p for p in (family, given, suffix) if p)


def _bib_name(c: dict[str, Any]) -> str:
    """BibTeX's "Family, Suffix, Given" (particles stay with the family name), or a one-field
    name in braces (an organisation is not split)."""
    family, given, suffix = family_given(c)
    if not given and not suffix:
        return "{" + _tex(family) + "}"
    return ", ".join(_tex(p) for p in (family, suffix, given) if p)


# TeX inline maths as Pandoc reads it: a `$` with no space after it, closed by a `$` with no
# space before it and no digit after it. "from $5 to $10" is prices, not maths.
_MATH = re.compile(r"(?<![\\$])\$(?=[^\s$])((?:[^$\\]|\\.)+?)(?<=[^\s\\])\$(?![\d$])")
_SPECIAL = re.compile(r"([&%$#_{}~^\\])")
# The spellings both LaTeX and Zotero's BibTeX.js read back as the character.
_ESCAPED = {"\\": r"$\backslash$", "~": r"\~{}", "^": r"\^{}"}


def _tex(text: str, *, protect: bool = False) -> str:
    """A prose field for BibTeX: maths as the characters they stand for, LaTeX's specials
    escaped, and (titles) every word with a capital past its first letter, or a capital
    anywhere but the field's first word, braced so that no style lowercases it."""
    text = _MATH.sub(lambda m: _MATHS.latex_to_text(m.group(0)), _one_line(text))
    text = _SPECIAL.sub(lambda m: _ESCAPED.get(m.group(1), "\\" + m.group(1)), text)
    if not protect:
        return text
    words = text.split(" ")
    for n, word in enumerate(words):
        caps = [i for i, ch in enumerate(word) if ch.isupper()]
        if caps and (n > 0 or any(i > 0 for i in caps)):
            words[n] = "{" + word + "}"
    return " ".join(words)


def _file_path(url: str) -> str:
    """A URL in BibTeX.js's `file` syntax (`:` `;` `\\` escaped with a backslash)."""
    return re.sub(r"([:;\\])", r"\\\1", url)


def _ris(text: str) -> str:
    """One line; a `<` that would open a tag written as `&lt;` (RIS.js reads HTML)."""
    return re.sub(r"<(?=[A-Za-z/!])", "&lt;", _one_line(text))


def _cite_key(c: Candidate) -> str:
    name = unicodedata.normalize("NFKD", family_given(creator(c.authors[0]))[0] if c.authors
                                 else "")  # fmt: skip
    last = re.sub(r"[^a-z]", "", name.lower())
    word = next((w for w in re.findall(r"[a-z]+", c.title.lower()) if len(w) > 3), "paper")
    return f"{last or 'anon'}{c.year or ''}{word}"


def _one_line(text: str) -> str:
    return " ".join(str(text).split())
