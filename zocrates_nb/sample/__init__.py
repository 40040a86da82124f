"""The built-in sample library: short documents this project authors, so zocrates-nb works
for someone with no Zotero. Sources are Markdown with YAML-ish front matter; `build` writes
them into a folder as PDF, HTML or Markdown, which the folder reader then indexes. The PDFs ship
rendered (`rendered/`, byte-stable); `python -m zocrates_nb.sample` renders them again with
reportlab (the `samples` extra) after a source changes (tests/test_sample.py checks they match).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt

SOURCES = Path(__file__).parent
RENDERED = SOURCES / "rendered"


@dataclass
class SampleDoc:
    slug: str
    title: str
    authors: list[str]
    year: int
    format: str  # pdf | html | markdown
    body: str  # Markdown without front matter


def _parse(path: Path) -> SampleDoc:
    text = path.read_text("utf-8")
    m = re.match(r"---\n(.*?)\n---\n", text, re.S)
    if not m:
        raise ValueError(f"{path.name}: missing front matter")
    meta: dict[str, str] = {}
    for line in m.group(1).splitlines():
        key, _, value = line.partition(":")
        meta[key.strip()] = value.strip()
    authors = re.findall(r'"([^"]+)"', meta["authors"])
    return SampleDoc(
        slug=path.stem,
        title=meta["title"].strip('"'),
        authors=authors,
        year=int(meta["year"]),
        format=meta["format"],
        body=text[m.end() :],
    )


def documents() -> list[SampleDoc]:
    return [_parse(p) for p in sorted(SOURCES.glob("*.md"))]


def build(dest: Path) -> Path:
    """Render the sample documents into `dest` (idempotent, byte-stable) and return it."""
    dest.mkdir(parents=True, exist_ok=True)
    for doc in documents():
        if doc.format == "pdf":
            _write_if_changed(dest / f"{doc.slug}.pdf", (RENDERED / f"{doc.slug}.pdf").read_bytes())
        elif doc.format == "html":
            _write_if_changed(dest / f"{doc.slug}.html", _render_html(doc).encode())
        else:
            src = (SOURCES / f"{doc.slug}.md").read_bytes()
            _write_if_changed(dest / f"{doc.slug}.md", src)
    return dest


def render(dest: Path = RENDERED) -> list[Path]:
    """Render the PDF documents into `dest` (reportlab: the `samples` extra)."""
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for doc in documents():
        if doc.format == "pdf":
            _write_if_changed(path := dest / f"{doc.slug}.pdf", _render_pdf(doc))
            written.append(path)
    return written


def _write_if_changed(path: Path, data: bytes) -> None:
    # Unchanged bytes keep their mtime, so re-indexing the sample is a no-op.
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)


def _render_html(doc: SampleDoc) -> str:
    body = MarkdownIt("commonmark").enable("table").render(doc.body)
    metas = "".join(
        f'<meta name="citation_author" content="{html.escape(a)}">' for a in doc.authors
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(doc.title)}"
        f'</title><meta name="citation_title" content="{html.escape(doc.title)}">{metas}'
        f'<meta name="citation_date" content="{doc.year}"></head><body>{body}</body></html>'
    )


def _render_pdf(doc: SampleDoc) -> bytes:
    """A small article layout: bold title, authors, numbered bold headings, tables, captions."""
    import io

    from reportlab import rl_config
    from reportlab.graphics.shapes import Drawing, Rect, String
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table, TableStyle

    rl_config.invariant = True  # byte-stable output: no timestamps or random ids
    styles = getSampleStyleSheet()
    title_style = ParagraphStyle("T", parent=styles["Title"], fontSize=18, leading=22)
    author_style = ParagraphStyle("A", parent=styles["Normal"], fontSize=11, alignment=1)
    h_style = ParagraphStyle("H", parent=styles["Heading2"], fontName="Helvetica-Bold",
                             fontSize=13, leading=16, spaceBefore=10)
    body_style = ParagraphStyle("B", parent=styles["BodyText"], fontName="Times-Roman",
                                fontSize=10.5, leading=13.5)
    cap_style = ParagraphStyle("C", parent=body_style, fontSize=9.5, leading=12)

    flow: list[Any] = []
    lines = doc.body.strip().splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if not line:
            i += 1
            continue
        if line.startswith("# "):
            flow.append(Paragraph(html.escape(line[2:]), title_style))
            flow.append(Paragraph(html.escape(", ".join(doc.authors)), author_style))
            flow.append(Paragraph(f"Sample document, {doc.year}", author_style))
            flow.append(Spacer(1, 12))
        elif line.startswith("## "):
            flow.append(Paragraph(html.escape(line[3:]), h_style))
        elif line.startswith("|"):
            rows = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                cells = [c.strip() for c in lines[i].strip().strip("|").split("|")]
                if not all(set(c) <= {"-", ":", " "} for c in cells):
                    rows.append(cells)
                i += 1
            table = Table(rows, hAlign="LEFT")
            table.setStyle(TableStyle([
                ("FONT", (0, 0), (-1, -1), "Times-Roman", 9.5),
                ("FONT", (0, 0), (-1, 0), "Times-Bold", 9.5),
                ("LINEABOVE", (0, 0), (-1, 0), 0.8, colors.black),
                ("LINEBELOW", (0, 0), (-1, 0), 0.5, colors.black),
                ("LINEBELOW", (0, -1), (-1, -1), 0.8, colors.black),
            ]))
            flow.extend([table, Spacer(1, 8)])
            continue
        elif line.startswith("Figure "):
            drawing = Drawing(400, 60)
            for n, label in enumerate(("BM25", "Dense", "RRF", "Rerank")):
                drawing.add(Rect(10 + n * 95, 15, 80, 30, fillColor=colors.whitesmoke))
                drawing.add(String(25 + n * 95, 26, label, fontName="Helvetica", fontSize=10))
            flow.extend([drawing, Paragraph(_inline(line), cap_style), Spacer(1, 6)])
        elif line.startswith("Table "):
            flow.append(Paragraph(_inline(line), cap_style))
        else:
            flow.append(Paragraph(_inline(line), body_style))
        i += 1

    def stamp_year(canvas: Any, _doc: Any) -> None:
        # The document's year as its creation date (readers take the year from it).
        canvas._doc.info._dateFormatter = lambda *_: f"D:{doc.year}0101000000+00'00'"

    buf = io.BytesIO()
    SimpleDocTemplate(buf, pagesize=A4, title=doc.title, author="; ".join(doc.authors),
                      subject=f"zocrates-nb sample library ({doc.year})").build(
        flow, onFirstPage=stamp_year)
    return buf.getvalue()


def _inline(text: str) -> str:
    text = html.escape(text)
    return re.sub(r"`([^`]+)`", r'<font face="Courier">\1</font>', text)
