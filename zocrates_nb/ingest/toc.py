"""Build a `Toc` from converted Markdown: every converter writes Markdown, this reads it back.

Keeping one reader means section ranges, caption ranges and page numbers follow the same rules
for PDFs, web snapshots, notes and Markdown files: headings are `#` lines, captions are
paragraphs that start with a bold label (`**Figure 3:** …`), tables are `|` blocks.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from dataclasses import dataclass, field

from zocrates_nb.ingest.bundle import Asset, Bundle, Section, Toc

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")

# A printed section number: "3", "3.2", "3.2.1", "3.", "IV.", "A", "A.1", "(a)".
_NUMBER = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}\.?"
    r"|[A-Z](?:\.\d{1,2}){1,3}\.?"
    r"|[A-Z]\.?(?=\s+[A-Z])"
    r"|[IVX]{1,5}\.(?=\s)"
    r"|\([a-z]\))\s+(?P<title>\S.*)$"
)

# Caption labels as printed: "Figure 3", "Fig. 3", "FIGURE 3", "Table IV", "Figure A.1", "Table S2".
LABEL = (
    r"(?:Figure|FIGURE|Fig\.?|FIG\.?|Table|TABLE|Tab\.?|TAB\.?)"
    r"\s?(?:[A-Z]?\.?\d{1,3}(?:\.\d{1,2})?[a-z]?|[IVXL]{1,6})"
)
_BOLD_CAPTION = re.compile(
    rf"^\*\*(?P<label>{LABEL})\s*[.:|—–-]?\s*\*\*\s*[.:—–-]?\s*(?P<rest>.*)$"
)
_PLAIN_CAPTION = re.compile(rf"^(?P<label>{LABEL})\s*[.:|—–-]\s*(?P<rest>.*)$")

_ABSTRACT_RUNIN = re.compile(
    r"^\W{0,4}(?:abstract|summary)\W{0,4}\s*[—–:.-]\s*\**\s*(?P<rest>\S.*)$", re.IGNORECASE
)
_YEAR = re.compile(r"(?<![\d.])(19[5-9]\d|20[0-4]\d)(?![\d])")
_ARXIV = re.compile(r"arXiv:\s?(\d{2})(\d{2})\.\d{4,5}", re.IGNORECASE)


def normalize_text(text: str) -> str:
    """NFKC (expands ligatures like ﬁ) and drop soft hyphens / zero-width characters."""
    text = unicodedata.normalize("NFKC", text)
    return re.sub(r"[\u00ad\u200b\u200c\u200d\ufeff]", "", text)


def split_number(text: str) -> tuple[str | None, str]:
    """`"3.2 Raft basics"` → `("3.2", "Raft basics")`; unnumbered text → `(None, text)`."""
    text = text.strip()
    m = _NUMBER.match(text)
    if not m:
        return None, text
    num = m.group("num").rstrip(".")
    return num, m.group("title").strip()


def strip_marks(text: str) -> str:
    """Heading/caption text without Markdown emphasis marks."""
    text = re.sub(r"(\*\*|__|\*|`)", "", text)
    return re.sub(r"\s+", " ", text).strip()


def count_words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


def markdown_table(rows: list[list[str]]) -> list[str]:
    """Rows → Markdown table lines (first row is the header)."""
    if not rows:
        return []
    width = max(len(r) for r in rows)

    def cell(c: str) -> str:
        return re.sub(r"\s+", " ", c).replace("|", "\\|").strip()

    padded = [[cell(c) for c in r] + [""] * (width - len(r)) for r in rows]
    out = ["| " + " | ".join(padded[0]) + " |", "|" + "---|" * width]
    out.extend("| " + " | ".join(r) + " |" for r in padded[1:])
    return out


def rows_to_csv(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def _table_rows(lines: list[str]) -> list[list[str]]:
    rows = []
    for line in lines:
        inner = line.strip()
        if re.fullmatch(r"\|?[\s:|-]+\|?", inner) and "-" in inner:
            continue  # the separator row
        inner = inner.strip("|")
        cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]
        rows.append(cells)
    return rows


@dataclass
class TocInfo:
    """What a converter knows besides the Markdown itself."""

    converter: str
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    pages: int | None = None
    page_starts: list[int] = field(default_factory=list)
    page_cols: list[int] = field(default_factory=list)
    plain_captions: bool = False  # also treat "Figure 3: …" paragraphs as captions


def find_year(text: str) -> int | None:
    """A plausible publication year: arXiv id first, then the latest year mentioned."""
    m = _ARXIV.search(text)
    if m:
        return 2000 + int(m.group(1))
    years = [int(y) for y in _YEAR.findall(text)]
    return max(years) if years else None


def _table_block(lines: list[str], start: int, step: int) -> tuple[int, int] | None:
    """0-based inclusive range of a `|` block next to a caption at `start` (skipping blanks)."""
    i = start + step
    while 0 <= i < len(lines) and not lines[i].strip():
        i += step
    if not (0 <= i < len(lines)) or not lines[i].lstrip().startswith("|"):
        return None
    j = i
    while 0 <= j + step < len(lines) and lines[j + step].lstrip().startswith("|"):
        j += step
    return (min(i, j), max(i, j))


def build_toc(markdown: str, info: TocInfo) -> Toc:
    """Sections (s0 = frontmatter), figures and tables of a converted Markdown document."""
    lines = markdown.split("\n")
    if lines and not lines[-1]:
        lines.pop()  # the final newline ends the last line; it is not a line of its own
    n = len(lines)
    heads: list[tuple[int, int, str]] = []  # (0-based line, level, text)
    captions: list[tuple[int, str, str]] = []  # (0-based line, label, caption)
    in_fence = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        m = HEADING.match(line)
        if m:
            heads.append((i, len(m.group(1)), strip_marks(m.group(2))))
            continue
        if i > 0 and lines[i - 1].strip():
            continue  # captions start a paragraph
        c = _BOLD_CAPTION.match(line)
        if not c and info.plain_captions:
            c = _PLAIN_CAPTION.match(line)
        if c:
            label = re.sub(r"\s+", " ", c.group("label"))
            captions.append((i, label, strip_marks(c.group("rest"))))

    toc = Toc(
        title=info.title,
        authors=list(info.authors),
        year=info.year,
        abstract=info.abstract,
        abstract_source="document" if info.abstract else "",
        pages=info.pages,
        page_starts=list(info.page_starts),
        page_cols=list(info.page_cols),
        converter=info.converter,
    )
    first = heads[0][0] if heads else n
    toc.sections.append(
        Section("s0", 0, None, "", toc.page_of_line(1) if first else None, 1, first,
                count_words(lines[:first]))
    )
    for k, (i, level, text) in enumerate(heads):
        end = heads[k + 1][0] if k + 1 < len(heads) else n
        number, title = split_number(text)
        toc.sections.append(
            Section(f"s{k + 1}", min(level, 3), number, title, toc.page_of_line(i + 1),
                    i + 1, end, count_words(lines[i:end]))
        )

    for i, label, caption in captions:
        is_table = label.lower().startswith("tab")
        start = end = i
        csv_text = None
        if is_table:
            block = _table_block(lines, i, 1) or _table_block(lines, i, -1)
            if block:
                rows = _table_rows(lines[block[0] : block[1] + 1])
                csv_text = rows_to_csv(rows)
                start, end = min(start, block[0]), max(end, block[1])
        group = toc.tables if is_table else toc.figures
        prefix = "t" if is_table else "f"
        group.append(
            Asset(f"{prefix}{len(group) + 1}", label, caption, toc.page_of_line(i + 1),
                  start + 1, end + 1, csv_text)
        )

    if not toc.abstract:
        toc.abstract = _find_abstract(lines, heads, first)
        toc.abstract_source = "document" if toc.abstract else ""
    if not toc.title:
        toc.title = _first_title(lines, heads)
    if toc.year is None:
        toc.year = find_year("\n".join(lines[: max(first, 1)]))
    return toc


_ABSTRACT_END = re.compile(
    r"^(?:\*\*|\||\\?[∗*†‡§¶]|\d\s?[A-Za-z]|(?:key ?words|index terms|categories|general terms|"
    r"ccs concepts|acm reference)\b)",
    re.IGNORECASE,
)


def _paragraph_after(lines: list[str], i: int) -> str:
    """The abstract's paragraphs: up to the next heading, caption, table, footnote or keywords."""
    out = []
    for line in lines[i:]:
        if HEADING.match(line) or _ABSTRACT_END.match(line.strip()):
            break
        out.append(line.strip())
    return re.sub(r"\s+", " ", " ".join(out)).strip()


def _find_abstract(lines: list[str], heads: list[tuple[int, int, str]], first: int) -> str:
    for i, _level, text in heads[:6]:
        if re.fullmatch(r"(?:abstract|summary)\W*", split_number(text)[1], re.IGNORECASE):
            return _paragraph_after(lines, i + 1)[:5000]
    limit = min(len(lines), max(first, 1) + 200 if not heads else heads[min(2, len(heads) - 1)][0])
    for i in range(min(limit, len(lines))):
        m = _ABSTRACT_RUNIN.match(strip_marks(lines[i]))
        if m and (i == 0 or not lines[i - 1].strip()):
            return re.sub(r"\s+", " ", m.group("rest")).strip()[:5000]
    return ""


def _first_title(lines: list[str], heads: list[tuple[int, int, str]]) -> str:
    if heads and heads[0][1] == 1:
        return heads[0][2]
    for line in lines:
        if line.strip():
            return strip_marks(line.lstrip("#>-*| "))[:300]
    return ""


def make_bundle(markdown: str, info: TocInfo) -> Bundle:
    """Tidy blank lines and build the toc: the one exit of every converter."""
    markdown = tidy_markdown(markdown)
    return Bundle(markdown=markdown, toc=build_toc(markdown, info))


def tidy_markdown(markdown: str) -> str:
    """Trailing spaces off, at most one blank line in a row, no leading/trailing blank lines."""
    out: list[str] = []
    for line in markdown.split("\n"):
        line = line.rstrip()
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return "\n".join(out) + "\n" if out else ""
