"""HTML converter: web-page snapshots and Zotero notes → Markdown bundle.

BeautifulSoup cleans the tree (scripts, styles, navigation go), markdownify writes the
Markdown; tables are taken out first and written back as Markdown tables with their rows kept
as CSV, so a captioned table becomes a `t1…` asset.
"""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, Tag
from markdownify import MarkdownConverter

from zocrates_nb.ingest.bundle import Bundle, ConversionError
from zocrates_nb.ingest.toc import (
    LABEL,
    TocInfo,
    make_bundle,
    markdown_table,
    normalize_text,
    strip_marks,
)

_DROP = ("script", "style", "noscript", "template", "svg", "iframe", "nav", "form", "button",
         "input", "select", "textarea", "canvas", "object", "embed", "link", "meta")
_LABEL_START = re.compile(rf"^\s*({LABEL})\s*[.:|—–-]?\s*(.*)$", re.DOTALL)
_PLACEHOLDER = "ZOCRATESTABLE{}X"


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


def html_to_markdown(html: str) -> tuple[str, str]:
    """(markdown, title) of an HTML document or fragment."""
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
    md, page_title = html_to_markdown(html)
    if not md.strip():
        raise ConversionError("no text in HTML")
    info = TocInfo(converter=converter, title=title or page_title or _first_line(md),
                   plain_captions=False)
    return make_bundle(md, info)


def convert_note(html: str, title: str = "") -> Bundle:
    """A Zotero note (note-editor HTML); its title is the given one or its first line."""
    md, _ = html_to_markdown(html)
    if not md.strip():
        raise ConversionError("empty note")
    return make_bundle(md, TocInfo(converter="zotero-note", title=title or _first_line(md)))


def convert_html_file(path: Path) -> Bundle:
    data = path.read_bytes()
    if not data.strip():
        raise ConversionError(f"empty file ({len(data)} bytes)")
    m = re.search(rb"<meta[^>]+charset=[\"']?([\w-]+)", data[:4000], re.IGNORECASE)
    enc = m.group(1).decode("ascii", "ignore") if m else "utf-8"
    try:
        html = data.decode(enc, errors="replace")
    except LookupError:
        html = data.decode("utf-8", errors="replace")
    return html_to_bundle(html)
