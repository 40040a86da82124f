"""Asset ids: normalise whatever the model writes, then resolve ids against a document's toc.

Models write `"[s3, s4]"`, `'["s1", "s2"]'`, `'"s1", "s2"'`, `S3`, `s03`, `s3-s5`, `Figure 2`,
`page 4`… Normalisation is deterministic and purely syntactic; resolution (`resolve_asset`) looks
the canonical ids up in the toc, so an id that matches nothing is reported, never dropped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from zocrates_nb.ingest.bundle import Section, Toc

_ID = re.compile(r"^([sftp])\s*0*(\d{1,4})$")
_RANGE = re.compile(r"^([sftp])\s*0*(\d{1,4})\s*(?:-|–|—|\.\.|to)\s*(?:\1)?\s*0*(\d{1,4})$")
_LABELLED = re.compile(
    r"^(?P<kind>fig(?:ure)?s?|tab(?:le)?s?|sec(?:tion)?s?|§|pages?|pp?)\.?\s*(?P<num>[a-z]?\.?\d[\w.]*|[ivxl]+)$"
)
_ABSTRACT = {"abstract", "summary", "abs", "abstract/summary", "abstract / summary"}
_FULL = {
    "full",
    "all",
    "whole",
    "entire",
    "full text",
    "fulltext",
    "full_text",
    "document",
    "entire document",
    "whole document",
    "everything",
    "*",
}
_MAX_RANGE = 60


def normalize_asset_ids(raw: Any) -> list[str]:
    """Canonical, de-duplicated asset ids in the order given.

    `s03`→`s3`, `S3`→`s3`, `s3-s5`→`s3, s4, s5`, `abstract`/`summary`→`abstract`, `full`/`all`→
    `full`, `page 4`/`p4`→`p4`, `Figure 2`→`figure 2` (resolved by label later).
    """
    out: list[str] = []
    for piece in _pieces(raw):
        for token in _canonical(piece):
            if token and token not in out:
                out.append(token)
    return out


def _pieces(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, (list, tuple, set)):
        return [p for r in raw for p in _pieces(r)]
    if not isinstance(raw, str):
        return [str(raw)]
    text = raw.strip()
    if text[:1] in "[(" or text[:1] in "\"'":
        try:
            parsed = json.loads(text.replace("'", '"'))
        except (json.JSONDecodeError, ValueError):
            parsed = None
        if isinstance(parsed, list):
            return _pieces(parsed)
    text = text.strip("[](){}")
    parts = [p for p in re.split(r"[,;|\n]+|\s+and\s+|\s*&\s*", text) if p.strip()]
    out: list[str] = []
    for p in parts:
        p = p.strip().strip("\"'`[](){}").strip().rstrip(".:")
        words = p.split()
        # "s1 s2 f1" written without commas: split when every word is an id on its own.
        if len(words) > 1 and all(_ID.match(w.lower().strip("\"'`")) for w in words):
            out.extend(w.strip("\"'`") for w in words)
        elif p:
            out.append(p)
    return out


def _canonical(piece: str) -> list[str]:
    p = re.sub(r"\s+", " ", piece.strip().lower())
    p = p.strip("\"'` ").removeprefix("asset_id=").removeprefix("asset ").strip("\"'` ")
    if not p:
        return []
    if p in _ABSTRACT:
        return ["abstract"]
    if p in _FULL:
        return ["full"]
    m = _ID.match(p)
    if m:
        return [f"{m.group(1)}{int(m.group(2))}"]
    m = _RANGE.match(p)
    if m:
        kind, a, b = m.group(1), int(m.group(2)), int(m.group(3))
        if a <= b and b - a < _MAX_RANGE:
            return [f"{kind}{n}" for n in range(a, b + 1)]
        return [p]
    m = _LABELLED.match(p)
    if m:
        kind, num = m.group("kind"), m.group("num").rstrip(".")
        if kind.startswith(("page", "p")) and num.isdigit():
            return [f"p{int(num)}"]
        if kind.startswith("fig"):
            return [f"figure {num}"]
        if kind.startswith("tab"):
            return [f"table {num}"]
        if _ID.match(num):  # "section s3"
            return _canonical(num)
        return [f"section {num}"]
    return [p]


# --------------------------------------------------------------------------- resolution

AssetKind = Literal["section", "figure", "table", "abstract", "full", "page"]


@dataclass
class AssetRef:
    """A resolved asset: which lines of document.md it covers (None for metadata-only)."""

    id: str  # canonical id: s3, f1, t2, abstract, full, p5
    kind: AssetKind
    heading: str
    line_start: int | None = None
    line_end: int | None = None
    page: int | None = None
    covers: list[str] = field(default_factory=list)  # section ids inside the span
    text: str | None = None  # set for metadata-only assets (abstract from Zotero)
    label: str = ""
    caption: str = ""
    csv: str | None = None


# More words than a title page holds: s0 carries the text of a paper without (early) headings.
FRONTMATTER_WORDS = 400


def section_heading(s: Section) -> str:
    if s.id == "s0":
        return "Frontmatter" if s.words <= FRONTMATTER_WORDS else "Text before the first heading"
    return f"{s.number} {s.title}".strip() if s.number else s.title


def section_span(toc: Toc, s: Section) -> tuple[int, int, list[str]]:
    """A section with its subsections: up to the next heading of the same or a higher level."""
    secs = toc.sections
    i = next(n for n, x in enumerate(secs) if x.id == s.id)
    end, covers = s.line_end, [s.id]
    if s.level > 0:
        for x in secs[i + 1 :]:
            if x.level <= s.level:
                break
            end = max(end, x.line_end)
            covers.append(x.id)
    return s.line_start, end, covers


def section_words(toc: Toc, s: Section) -> int:
    _, _, covers = section_span(toc, s)
    return sum(x.words for x in toc.sections if x.id in covers)


def abstract_section(toc: Toc) -> Section | None:
    for s in toc.sections[1:8]:
        if re.fullmatch(r"(?:abstract|summary)\W*", s.title.strip(), re.IGNORECASE):
            return s
    return None


def _page_range(toc: Toc, page: int, last_line: int) -> tuple[int, int] | None:
    starts = toc.page_starts
    if not starts or not 1 <= page <= len(starts):
        return None
    a = starts[page - 1]
    # The next page's first line is this page's too when it begins inside that line.
    runs_on = page < len(toc.page_cols) and toc.page_cols[page] > 0
    b = starts[page] - (0 if runs_on else 1) if page < len(starts) else last_line
    return (a, max(a, b))


def resolve_asset(toc: Toc, token: str, n_lines: int) -> AssetRef | None:
    """Look one canonical id up in a toc; None when the document has no such asset."""
    if token == "full":
        return AssetRef(
            "full", "full", "Full text", 1, n_lines, covers=[s.id for s in toc.sections]
        )
    if token == "abstract":
        sec = abstract_section(toc)
        if sec is not None:
            a, b, covers = section_span(toc, sec)
            return AssetRef(sec.id, "section", section_heading(sec), a, b, sec.page, covers)
        if toc.abstract.strip():
            return AssetRef("abstract", "abstract", "Abstract", text=toc.abstract.strip())
        return None
    m = re.fullmatch(r"p(\d+)", token)
    if m:
        page = int(m.group(1))
        rng = _page_range(toc, page, n_lines)
        if rng is None:
            return None
        return AssetRef(token, "page", f"Page {page}", rng[0], rng[1], page)
    m = re.fullmatch(r"([sft])(\d+)", token)
    if m:
        found = toc.asset(token)
        if isinstance(found, Section):
            a, b, covers = section_span(toc, found)
            return AssetRef(found.id, "section", section_heading(found), a, b, found.page, covers)
        if found is not None:
            kind: AssetKind = "table" if token.startswith("t") else "figure"
            return AssetRef(
                found.id,
                kind,
                found.label,
                found.line_start,
                found.line_end,
                found.page,
                label=found.label,
                caption=found.caption,
                csv=found.csv,
            )
        return None
    m = re.fullmatch(r"(figure|table|section) (.+)", token)
    if m:
        kind_word, num = m.group(1), m.group(2)
        if kind_word == "section":
            for s in toc.sections:
                if s.number and s.number.lower().rstrip(".") == num:
                    return resolve_asset(toc, s.id, n_lines)
            return None
        group = toc.figures if kind_word == "figure" else toc.tables
        for asset in group:
            label_num = re.sub(r"^\D+", "", asset.label.lower()).strip(" .")
            if label_num == num:
                return resolve_asset(toc, asset.id, n_lines)
        return None
    # A bare printed number ("3.2") or a heading written out ("Model Architecture").
    for s in toc.sections[1:]:
        if (s.number and s.number.lower() == token) or s.title.lower().strip() == token:
            return resolve_asset(toc, s.id, n_lines)
    return None
