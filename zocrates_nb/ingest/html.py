"""HTML converter: web-page snapshots and Zotero notes → Markdown bundle.

BeautifulSoup cleans the tree (scripts, styles, navigation go), markdownify writes the
Markdown; tables are taken out first and written back as Markdown tables with their rows kept
as CSV, so a captioned table becomes a `t1…` asset.
"""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, NavigableString, Tag
from markdownify import MarkdownConverter

from zocrates_nb.ingest.bundle import Bundle, ConversionError
from zocrates_nb.ingest.text import read_bytes
from zocrates_nb.ingest.toc import (
    LABEL,
    TocInfo,
    make_bundle,
    markdown_table,
    normalize_text,
    strip_marks,
)
from zocrates_nb.library.encoding import decode_text

_DROP = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "form", "button",
         "input", "select", "textarea", "canvas", "object", "embed", "link", "meta")
_LABEL_START = re.compile(rf"^\s*({LABEL})\s*[.:|—–-]?\s*(.*)$", re.DOTALL)
_PLACEHOLDER = "ZOCRATESTABLE{}X"
# markdownify recurses ~3 Python frames per element level: beyond this depth the markup is
# flattened to paragraphs of its text (real pages nest a few dozen levels).
MAX_DEPTH = 120
_BLOCKS = frozenset({"p", "div", "li", "ul", "ol", "tr", "td", "th", "table", "br", "hr",
                     "section", "article", "main", "blockquote", "pre", "dd", "dt", "figure",
                     "h1", "h2", "h3", "h4", "h5", "h6", "header", "footer", "aside"})


class _Converter(MarkdownConverter):
    """Links and images become their text: citations need words, not URLs."""

    def convert_a(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        return text

    def convert_img(self, el: Tag, text: str, parent_tags: set[str]) -> str:
        alt = str(el.get("alt") or "").strip()
        return alt if "_inline" in parent_tags else ""


def _text(el: Tag) -> str:
    return re.sub(r"\s+", " ", el.get_text(" ", strip=True)).strip()


def _table_rows(table: Tag) -> list[list[str]]:
    rows = []
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue
        cells = [_text(c) for c in tr.find_all(["td", "th"]) if c.find_parent("tr") is tr]
        if any(cells):
            rows.append(cells)
    return rows


def _caption_paragraph(kind: str, text: str, index: int) -> str:
    """`**Table 2:** text` — the label as printed, or a running number when none is printed."""
    m = _LABEL_START.match(text)
    if m and m.group(1).lower().startswith(kind[:3].lower()):
        return f"**{m.group(1)}:** {m.group(2).strip()}".rstrip()
    return f"**{kind} {index}:** {text}".rstrip()


def _flatten_deep(soup: BeautifulSoup) -> str | None:
    """Elements nested deeper than MAX_DEPTH keep their text as plain paragraphs.

    Walks the tree with an explicit stack (no recursion); returns a warning when anything
    was flattened, None otherwise.
    """
    deepest = 0
    cut: list[Tag] = []
    stack: list[tuple[Tag, int]] = [(soup, 0)]
    while stack:
        el, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth == MAX_DEPTH:
            cut.append(el)
        stack.extend((c, depth + 1) for c in el.children if isinstance(c, Tag))
    for el in cut:
        paragraphs = _text_paragraphs(el)
        el.clear(decompose=True)
        for text in paragraphs:
            p = soup.new_tag("p")
            p.string = text
            el.append(p)
    if not cut:
        return None
    return (f"deeply nested HTML ({deepest:,} levels): below level {MAX_DEPTH} the text was "
            "kept as plain paragraphs, without its formatting")


def _text_paragraphs(el: Tag) -> list[str]:
    """The text under `el`, a new paragraph at every block element (iterative)."""
    parts: list[str] = []
    for node in el.descendants:
        if isinstance(node, Tag):
            if node.name in _BLOCKS:
                parts.append("\n\n")
        elif type(node) is NavigableString:  # not comments, doctypes, CDATA
            parts.append(str(node))
    paragraphs = (" ".join(p.split()) for p in "".join(parts).split("\n\n"))
    return [p for p in paragraphs if p]


def html_to_markdown(html: str, warnings: list[str] | None = None) -> tuple[str, str]:
    """(markdown, title) of an HTML document or fragment; notes go to `warnings`."""
    soup = BeautifulSoup(html, "html.parser")
    title = ""
    if soup.title and soup.title.string:
        title = soup.title.string.strip()
    og = soup.find("meta", attrs={"property": "og:title"})
    if isinstance(og, Tag) and og.get("content"):
        title = str(og.get("content")).strip()
    for name in _DROP:
        for el in soup.find_all(name):
            el.decompose()
    for el in soup.find_all(["head", "header", "footer", "aside"]):
        if el.name == "head" or not el.find_parent(["article", "main"]):
            el.decompose()
    flattened = _flatten_deep(soup)
    if flattened and warnings is not None:
        warnings.append(flattened)
    root: Tag = soup
    for name in ("article", "main"):
        cands = soup.find_all(name)
        if len(cands) == 1 and len(_text(cands[0])) > 200:
            root = cands[0]
            break

    tables: list[str] = []
    n_tables = n_figures = 0
    for table in root.find_all("table"):
        if table.find_parent("table") is not None:
            continue
        rows = _table_rows(table)
        if len(rows) < 2 or (table.find("table") is not None and len(rows) < 3):
            table.unwrap()  # layout table: keep its text
            continue
        caption_el = table.find("caption")
        caption = _text(caption_el) if caption_el else ""
        if not caption:
            prev = table.find_previous_sibling(["p", "div"])
            if prev is not None and re.match(r"^\s*(Table|TABLE|Tab\.)\s", _text(prev)):
                caption = _text(prev)
                prev.decompose()
        n_tables += 1
        parts = [_caption_paragraph("Table", caption, n_tables), "", *markdown_table(rows)]
        tables.append("\n".join(parts))
        placeholder = soup.new_tag("p")
        placeholder.string = _PLACEHOLDER.format(len(tables) - 1)
        table.replace_with(placeholder)
    for fig in root.find_all("figure"):
        cap = fig.find("figcaption")
        text = _text(cap) if cap else ""
        if not text:
            fig.decompose()
            continue
        n_figures += 1
        tables.append(_caption_paragraph("Figure", text, n_figures))
        p = soup.new_tag("p")
        p.string = _PLACEHOLDER.format(len(tables) - 1)
        fig.replace_with(p)

    md = _Converter(heading_style="ATX", bullets="-", escape_asterisks=False,
                    escape_underscores=False).convert_soup(root)
    md = normalize_text(md)
    md = re.sub(r"[ \t]+\n", "\n", md).replace("\u00a0", " ")
    for i, block in enumerate(tables):
        md = md.replace(_PLACEHOLDER.format(i), "\n" + block + "\n")
    return md, normalize_text(title)


def _first_line(md: str) -> str:
    for line in md.split("\n"):
        s = strip_marks(re.sub(r"^[#>*\-\s|]+", "", line))
        if s:
            return s[:300]
    return ""


def html_to_bundle(html: str, title: str = "", converter: str = "html") -> Bundle:
    warnings: list[str] = []
    md, page_title = html_to_markdown(html, warnings)
    if not md.strip():
        raise ConversionError("no text in this HTML page")
    info = TocInfo(converter=converter, title=title or page_title or _first_line(md),
                   plain_captions=False)
    bundle = make_bundle(md, info)
    bundle.toc.warnings.extend(warnings)
    return bundle


def convert_note(html: str, title: str = "") -> Bundle:
    """A Zotero note (note-editor HTML); its title is the given one or its first line."""
    warnings: list[str] = []
    md, _ = html_to_markdown(html, warnings)
    if not md.strip():
        raise ConversionError("empty note")
    bundle = make_bundle(md, TocInfo(converter="zotero-note", title=title or _first_line(md)))
    bundle.toc.warnings.extend(warnings)
    return bundle


def read_html(path: Path) -> tuple[str, list[str]]:
    """An HTML file's text (BOM, then its declared charset, then UTF-8) and decoding notes."""
    data = read_bytes(path)
    m = re.search(rb"<meta[^>]+charset=[\"']?([\w-]+)", data[:4000], re.IGNORECASE)
    declared = m.group(1).decode("ascii", "ignore") if m else None
    decoded = decode_text(data, declared)
    return decoded.text, decoded.warnings


def convert_html_file(path: Path) -> Bundle:
    html, warnings = read_html(path)
    bundle = html_to_bundle(html)
    bundle.toc.warnings[:0] = warnings
    return bundle
