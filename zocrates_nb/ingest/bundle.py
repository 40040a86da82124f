"""Bundles: a converted document as `document.md` + `toc.json`.

The TOC is what agents navigate: sections `s0..` (s0 = frontmatter), figures `f1..`,
tables `t1..`, each with a 1-based inclusive line range into `document.md`.
"""

from __future__ import annotations

import json
import os
from bisect import bisect_right
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from zocrates_nb.errors import ZocratesError

DOCUMENT = "document.md"
TOC = "toc.json"

# Bump whenever any converter (PDF, HTML/notes, Markdown, text) would write a different bundle
# for the same input: the bundle cache and the index fingerprints include it, so an upgrade
# re-converts and re-indexes every converted document instead of keeping stale bundles.
# 5: a page that begins inside a paragraph (`Toc.page_cols`); 6: a word broken at a line end
# is joined as the document writes it elsewhere ("proof-of-work", "AppendEntries")
CONVERTER_VERSION = 6


@dataclass
class Section:
    id: str  # "s0" (frontmatter), "s1", ...
    level: int  # 1..3 from the printed hierarchy (0 for s0)
    number: str | None  # printed number "3.2", "IV", "A.1" or None
    title: str  # heading text without its number
    page: int | None  # 1-based page where the heading is printed
    line_start: int  # 1-based, inclusive, into document.md
    line_end: int
    words: int = 0


@dataclass
class Asset:
    """A figure (`f1..`) or table (`t1..`)."""

    id: str
    label: str  # as printed: "Figure 3", "TABLE IV"
    caption: str
    page: int | None
    line_start: int
    line_end: int
    csv: str | None = None  # table rows as CSV, where they could be extracted


@dataclass
class Toc:
    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    abstract_source: str = ""  # "metadata" | "document" | ""
    pages: int | None = None
    # page_starts[i] = the line of document.md where page i+1 begins (PDFs only), at column
    # page_cols[i] of it (0: the line's start; more: a paragraph running on from page i).
    page_starts: list[int] = field(default_factory=list)
    page_cols: list[int] = field(default_factory=list)
    converter: str = ""  # which converter produced the bundle (and its version)
    sections: list[Section] = field(default_factory=list)
    figures: list[Asset] = field(default_factory=list)
    tables: list[Asset] = field(default_factory=list)
    # What the reader should know about this conversion (bad bytes replaced, markup flattened,
    # an HTML page saved as .pdf…): one plain line each, shown in the index report.
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Toc:
        data = dict(data)
        sections = [Section(**s) for s in data.pop("sections", [])]
        figures = [Asset(**f) for f in data.pop("figures", [])]
        tables = [Asset(**t) for t in data.pop("tables", [])]
        return cls(**data, sections=sections, figures=figures, tables=tables)

    def page_at(self, line: int, col: int = 0) -> int | None:
        """1-based page holding character `col` (0-based) of a document.md line (1-based), when
        the converter recorded pages: the one line → page lookup every quote-maker uses."""
        if not self.page_starts:
            return None
        cols = self.page_cols if len(self.page_cols) == len(self.page_starts) else []
        starts = list(zip(self.page_starts, cols or [0] * len(self.page_starts), strict=True))
        return max(bisect_right(starts, (line, col)), 1)

    def page_of_line(self, line: int) -> int | None:
        """The page where a document.md line begins."""
        return self.page_at(line, 0)

    def page_span(self, line_start: int, line_end: int, col_start: int = 0,
                  col_end: int | None = None) -> tuple[int | None, int | None]:
        """(first page, last page) of a span of document.md: lines line_start..line_end, from
        character col_start of the first to col_end of the last (None: the line's end)."""
        end = self.page_at(line_end, col_end if col_end is not None else 1 << 30)
        return self.page_at(line_start, col_start), end

    def asset(self, asset_id: str) -> Section | Asset | None:
        items: list[Section | Asset] = [*self.sections, *self.figures, *self.tables]
        for a in items:
            if a.id == asset_id:
                return a
        return None


@dataclass
class Bundle:
    """A converted document held in memory; `save`/`load` map it to a directory."""

    markdown: str
    toc: Toc

    @property
    def lines(self) -> list[str]:
        return self.markdown.split("\n")

    def text(self, line_start: int, line_end: int) -> str:
        """Lines line_start..line_end (1-based, inclusive) of document.md."""
        return "\n".join(self.lines[max(line_start, 1) - 1 : line_end])

    def save(self, directory: Path) -> None:
        """Write atomically enough: toc.json last, so a bundle with a toc is complete. Each
        file is written aside and renamed over its name, so a link in its place is replaced,
        never followed."""
        directory.mkdir(parents=True, exist_ok=True)
        _replace(directory / DOCUMENT, self.markdown)
        _replace(directory / TOC, json.dumps(self.toc.to_json(), ensure_ascii=False, indent=1))

    @classmethod
    def load(cls, directory: Path) -> Bundle:
        toc = Toc.from_json(json.loads((directory / TOC).read_text("utf-8")))
        return cls(markdown=(directory / DOCUMENT).read_text("utf-8"), toc=toc)

    @staticmethod
    def exists(directory: Path) -> bool:
        return (directory / TOC).is_file() and (directory / DOCUMENT).is_file()


def _replace(target: Path, text: str) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # a link left there is removed, not written through
    with open(tmp, "x", encoding="utf-8") as fh:
        fh.write(text)
    tmp.replace(target)


class ConversionError(ZocratesError):
    """A document that cannot be converted; the message is a one-line reason for the report."""
