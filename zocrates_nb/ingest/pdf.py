"""PDF converter: PDFium text with fonts → Markdown with headings, captions and page starts.

Pipeline: characters → styled lines (`pdf_chars`) → reading order and page furniture
(`pdf_layout`) → body style (`pdf_style`) → headings and captions (`pdf_headings`) →
paragraphs and Markdown here. Failures are `ConversionError`s with a one-line reason.
"""

from __future__ import annotations

import re
import threading
import time
import unicodedata
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pypdfium2 as pdfium

from zocrates_nb.config import DEFAULT_MAX_PAGES
from zocrates_nb.ingest.bundle import Bundle, ConversionError
from zocrates_nb.ingest.pdf_chars import Line, page_graphics, page_lines
from zocrates_nb.ingest.pdf_headings import (
    _CAPTION,
    KNOWN,
    Candidate,
    Caption,
    DocLine,
    find_captions,
    find_headings,
    parse_number,
)
from zocrates_nb.ingest.pdf_layout import (
    PageLines,
    gutter_fits,
    join_justified,
    order_page,
    page_gutters,
    remove_page_furniture,
    separate_side_blocks,
)
from zocrates_nb.ingest.pdf_pages import page_breaks, page_starts_of
from zocrates_nb.ingest.pdf_style import BodyStyle, family, measure_body
from zocrates_nb.ingest.pdf_tables import page_ranges, table_rows
from zocrates_nb.ingest.text import join_lines, word_forms
from zocrates_nb.ingest.toc import TocInfo, build_toc, find_year, markdown_table, normalize_text

CONVERTER = f"pypdfium2-{pdfium.version.PYPDFIUM_INFO}"
MAX_CHARS_PER_PAGE = 60_000  # a page with more "characters" is vector art or a broken stream
# Reading may take this long plus PAGE_BUDGET_S per page (~100x what a page needs on one
# core), so a 600-page thesis is read, while a file of pathological pages still ends.
TIME_BUDGET_S = 60.0
PAGE_BUDGET_S = 0.5
# A paragraph running on over a page break ends there once it is this long: tables and
# lists without sentence ends would otherwise run into one line of the whole document.
MAX_PARAGRAPH_LINES = 40
_SIDE_LABEL_HINT = re.compile(r"Fig|FIG|Tab|TAB")


class TooManyPagesError(ConversionError):
    """More pages than `index.max_pages`: a limit the user chose, never rescued by fallbacks."""


ENCRYPTED = (
    "encrypted PDF: open it in a PDF reader and save an unencrypted copy "
    "(or remove the password), then index again"
)
DAMAGED = (
    "damaged PDF: it cannot be opened (it may be truncated or only partly downloaded); "
    "download it again"
)


def _open(path: Path) -> pdfium.PdfDocument:
    try:
        return pdfium.PdfDocument(str(path))
    except pdfium.PdfiumError as err:
        if "password" in str(err).lower():
            raise ConversionError(ENCRYPTED) from err
        raise ConversionError(DAMAGED) from err


# PDFium is not thread-safe: one document at a time per process.
_PDFIUM_LOCK = threading.Lock()


Progress = Callable[[int, int], None]  # (pages read, pages in all)


def read_pages(
    path: Path, max_pages: int, progress: Progress | None = None
) -> tuple[list[PageLines], str]:
    """Styled lines of every page (content order) and the raw text of page 1."""
    with _PDFIUM_LOCK:
        return _read_pages(path, max_pages, progress)


def _read_pages(
    path: Path, max_pages: int, progress: Progress | None
) -> tuple[list[PageLines], str]:
    """One page at a time: PDFium holds one page, Python keeps only its styled lines."""
    doc = _open(path)
    try:
        n = len(doc)
        if n == 0:
            raise ConversionError("damaged PDF: it has no pages")
        if n > max_pages:
            raise TooManyPagesError(
                f"PDF has {n:,} pages, more than the limit of {max_pages:,}; to index it, "
                f"raise index.max_pages in zocrates_config.json (e.g. {{\"index\": "
                f"{{\"max_pages\": {_round_up(n)}}}}})"
            )
        budget = TIME_BUDGET_S + PAGE_BUDGET_S * n
        start = time.monotonic()
        pages: list[PageLines] = []
        stamps: list[str] = []
        for i in range(n):
            if progress is not None:
                progress(i, n)
            if time.monotonic() - start > budget:
                raise ConversionError(
                    f"the PDF took longer than {budget:,.0f} s to read (stopped at page {i + 1} "
                    f"of {n:,}): some pages are too complex"
                )
            try:
                page = doc[i]
            except pdfium.PdfiumError as err:
                raise ConversionError(f"damaged PDF: page {i + 1} cannot be read") from err
            try:
                lines = page_lines(page, i + 1, MAX_CHARS_PER_PAGE)
                if i == 0:
                    stamps = [ln.text for ln in lines if ln.rotated]
                lines = [ln for ln in lines if not ln.rotated]
                if not any(_SIDE_LABEL_HINT.search(ln.text) for ln in lines):
                    for ln in lines:  # word boxes only serve side-by-side captions
                        for sp in ln.spans:
                            sp.words = []
                pages.append(PageLines(i + 1, page.get_width(), page.get_height(), lines,
                                       graphics=page_graphics(page)))
            finally:
                page.close()
        if progress is not None:
            progress(n, n)
    finally:
        doc.close()
    first = "\n".join([*(ln.text for ln in pages[0].lines), *stamps]) if pages else ""
    return pages, first


def _round_up(n: int) -> int:
    """A round limit above `n`: 2,345 → 2,500."""
    step = 500 if n >= 1000 else 100
    return (n // step + 1) * step


def convert_pdf(
    path: Path, *, max_pages: int = DEFAULT_MAX_PAGES, progress: Progress | None = None
) -> Bundle:
    """`progress(done, total)` is called before each page is read, then with (total, total)
    after each document-wide step (a heartbeat while a long document is assembled)."""
    pages, page1_text = read_pages(path, max_pages, progress)
    n = len(pages)

    def step() -> None:
        if progress is not None:
            progress(n, n)

    chars = sum(len(ln.text) for p in pages for ln in p.lines)
    if chars < 20 * len(pages):
        raise ConversionError(
            f"no text layer (a scanned image, {len(pages)} page{'s' if len(pages) > 1 else ''}):"
            " make it searchable with OCR (e.g. ocrmypdf, or your PDF reader's text "
            "recognition) and index again"
        )
    _order_pages(pages)
    step()
    remove_page_furniture(pages)
    for p in pages:
        for ln in p.lines:
            for s in ln.spans:
                s.text = normalize_text(s.text)
            ln.touch()
    step()
    return _assemble(pages, page1_text, step)


def _layout_key(gutters: list[tuple[float, float]]) -> tuple[tuple[int, int], ...]:
    return tuple((round(lo / 10), round(hi / 10)) for lo, hi in gutters)


def _order_pages(pages: list[PageLines]) -> None:
    """Columns per page; a page whose own evidence is thin borrows the document's layout."""
    found = [page_gutters(p) for p in pages]
    layouts = Counter(_layout_key(g) for g in found if g)
    common: list[tuple[float, float]] = []
    if layouts:
        key = layouts.most_common(1)[0][0]
        common = next(g for g in found if _layout_key(g) == key)
    for p, g in zip(pages, found, strict=True):
        if not g and common:
            colish = [ln for ln in p.lines if 0.18 * p.width < ln.width < 0.6 * p.width]
            wide = [ln for ln in p.lines if ln.width >= 0.6 * p.width]
            if all(gutter_fits(colish, c, need=3, wide=wide) for c in common):
                g = common
        order_page(p, g)
        join_justified(p)
        separate_side_blocks(p)


# ----------------------------------------------------------------------------- assembly


def _doc_lines(pages: list[PageLines], body: BodyStyle) -> list[DocLine]:
    out: list[DocLine] = []
    for p in pages:
        prev: Line | None = None
        for ln in p.lines:
            if not ln.text:
                continue
            column_start = prev is None or not _same_column(prev, ln)
            if column_start or prev is None:
                starts = True
            else:
                # Extra white space above the line, beyond the spacing its type size needs.
                lead = body.leading * max(ln.size, prev.size, 1.0) / max(body.size, 1.0)
                extra = (ln.base - prev.base) - lead
                starts = extra > max(1.5, 0.15 * body.leading)
            out.append(DocLine(ln, p.page, starts, column_start))
            prev = ln
    return out


def _same_column(a: Line, b: Line) -> bool:
    overlap = min(a.x1, b.x1) - max(a.x0, b.x0)
    return overlap > 0 and b.top >= a.top - 2


def _title_lines(lines: list[DocLine], pages: list[PageLines], body: BodyStyle) -> list[int]:
    """Page-1 lines in the largest type (the title), when it is larger than body text."""
    p1 = [i for i, dl in enumerate(lines) if dl.page == pages[0].page]
    if not p1:
        return []
    height = pages[0].height
    cands = [
        i for i in p1
        if sum(c.isalpha() for c in lines[i].line.text) >= 3
        and lines[i].line.top < 0.7 * height
        and max(len(w) for w in lines[i].line.text.split()) <= 24  # not a run-together logo
    ]
    if not cands:
        return []
    top = max(lines[i].line.size for i in cands)
    if top < body.size + 1.0:
        return []
    chosen = [i for i in cands if lines[i].line.size >= top - 0.6]
    # Keep the first contiguous run only (a second big line elsewhere is a drop cap or logo).
    run = [chosen[0]]
    for i in chosen[1:]:
        if i - run[-1] <= 2:
            run.append(i)
        else:
            break
    return run


def _cover_page(lines: list[DocLine], pages: list[PageLines], body: BodyStyle) -> int | None:
    """A last page with no line in the body's family: a publisher's download cover or an
    advert sheet, whose bold labels ("License", "Email Alerting Service") are no sections."""
    if len(pages) < 3:
        return None
    last = pages[-1].page
    on_page = [dl.line for dl in lines if dl.page == last]
    if not on_page or any(
        family(s.font) == body.family for ln in on_page for s in ln.spans if s.text.strip()
    ):
        return None
    return last


def _page1_end(lines: list[DocLine], title: list[int], first_page: int) -> int:
    """Index where the first page's frontmatter (title, authors, affiliations) ends."""
    start = (title[-1] + 1) if title else 0
    for i in range(start, len(lines)):
        dl = lines[i]
        if dl.page != first_page:
            return i
        t = dl.line.text
        if KNOWN.match(t) or re.match(r"(?i)^\W*abstract\b", t) or parse_number(t)[0] == "1":
            return i
        run = lines[i : i + 3]
        if (
            len(run) == 3
            and all(not r.starts_block or r is run[0] for r in run)
            and all(len(r.line.text) > 40 for r in run)
            and _prose(" ".join(r.line.text for r in run))
        ):
            return i
    return len(lines)


def _prose(text: str) -> bool:
    """Running text, not a list of names: most words start in lower case."""
    words = [w for w in text.split() if w[:1].isalpha()]
    return bool(words) and sum(1 for w in words if w[0].islower()) >= 0.4 * len(words)


def _assemble(
    pages: list[PageLines], page1_text: str, step: Callable[[], None] = lambda: None
) -> Bundle:
    body = measure_body(pages)
    lines = _doc_lines(pages, body)
    title_idx = _title_lines(lines, pages, body)
    p1_end = _page1_end(lines, title_idx, pages[0].page)
    skip = set(title_idx)
    cover = _cover_page(lines, pages, body)
    heading_skip = skip | {i for i, dl in enumerate(lines) if dl.page == cover}
    graphics = {p.page: p.graphics for p in pages}
    for dl in lines:
        dl.in_figure = graphics[dl.page].contains(dl.line)
    title_key = " ".join(lines[i].line.text for i in title_idx)
    step()
    heads = find_headings(lines, body, heading_skip, p1_end, title=title_key)
    step()
    head_at = {c.index: c for c in heads}
    head_lines = {c.index + k for c in heads for k in range(c.count)}
    caps = find_captions(lines, body, head_lines | skip)
    cap_at = {c.index: c for c in caps}
    blocked = head_lines | skip | {c.index + k for c in caps for k in range(c.count)}
    table_of: dict[int, tuple[list[list[str]], list[int]]] = {}  # rows, page of each row
    in_table: set[int] = set()
    page_lines_at = page_ranges(lines)
    for cap in caps:
        if cap.label.lower().startswith("tab"):
            used, rows, row_pages = table_rows(lines, cap.index, cap.count, blocked | in_table,
                                               page_lines_at)
            if rows:
                table_of[cap.index] = (rows, row_pages)
                in_table.update(used)

    forms = word_forms(dl.line.text for dl in lines)  # how it writes a word broken at a line end

    def join(texts: list[str]) -> str:
        return fix_accents(join_lines(texts, forms))

    md: list[str] = []
    md_pages: list[int] = []
    # md line index → (column, page) where a paragraph running across pages reaches the next
    md_breaks: dict[int, list[tuple[int, int]]] = {}
    para: list[Line] = []
    para_pages: list[int] = []
    para_page = 0
    para_start = 0
    front: list[tuple[int, list[Line], str]] = []  # paragraphs before the first heading

    def emit(text: str, page: int) -> None:
        if md:
            md.append("")
            md_pages.append(page)
        md.append(text)
        md_pages.append(page)

    def emit_block(block: list[str], pages: list[int]) -> None:
        """Consecutive lines (a Markdown table) after one blank line, each on its page."""
        for k, (text, page) in enumerate(zip(block, pages, strict=True)):
            if k == 0 and md:
                md.append("")
                md_pages.append(page)
            md.append(text)
            md_pages.append(page)

    def flush() -> None:
        nonlocal para, para_pages
        if para and _is_figure_debris(para, body):
            para = []
        if para:
            joined = join([ln.text for ln in para])
            text = joined
            if re.match(r"^[#|>]|^\*\*", text):
                text = "\\" + text  # body text, not Markdown structure
            if re.match(r"^[•◦▪●∙·]\s*", text):
                text = "- " + re.sub(r"^[•◦▪●∙·]\s*", "", text)
            if text.strip():
                emit(text, para_page)
                breaks = page_breaks([ln.text for ln in para], para_pages, len(text) - len(joined),
                                     join)
                if breaks:
                    md_breaks[len(md) - 1] = breaks
                if not any(h < para_start for h in head_at):
                    front.append((para_start, para, text))
        para, para_pages = [], []

    title_text = ""
    if title_idx:
        title_text = join([lines[i].line.text for i in title_idx])
        title_text = title_text.rstrip("∗*†‡ ")
        emit(title_text, lines[title_idx[0]].page)
    i = 0
    while i < len(lines):
        if i in skip:
            i += 1
            continue
        if i in in_table:
            flush()
            i += 1
            continue
        dl = lines[i]
        if i in head_at:
            flush()
            c = head_at[i]
            emit(_heading_md(c), c.page)
            i += c.count
            continue
        if i in cap_at:
            flush()
            cap = cap_at[i]
            emit(_caption_md(cap, lines, join), cap.page)
            if cap.index in table_of:
                rows, row_pages = table_of[cap.index]
                # Header, separator, then each row on its own page.
                emit_block(markdown_table(rows), [row_pages[0], *row_pages])
            i += cap.count
            continue
        if para and (
            _breaks(para, dl, body)
            or (dl.page != para[-1].page and len(para) >= MAX_PARAGRAPH_LINES)
        ):
            flush()
        if not para:
            para_page = dl.page
            para_start = i
        para.append(dl.line)
        para_pages.append(dl.page)
        i += 1
    flush()

    markdown = "\n".join(md) + "\n"
    page_starts, page_cols = page_starts_of(md_pages, md_breaks, len(pages))
    info = TocInfo(
        converter=CONVERTER,
        title=title_text,
        authors=_authors(lines, title_idx, p1_end, title_text),
        year=_year(page1_text),
        pages=len(pages),
        page_starts=page_starts,
        page_cols=page_cols,
    )
    toc = build_toc(markdown, info)
    if not toc.abstract:
        toc.abstract = _unlabelled_abstract(front, p1_end, body)
        toc.abstract_source = "document" if toc.abstract else ""
    return Bundle(markdown=markdown, toc=toc)


def _unlabelled_abstract(front: list[tuple[int, list[Line], str]], p1_end: int,
                         body: BodyStyle) -> str:
    """An abstract printed without a label: the first paragraph after the author block, set
    apart from the body (bold, italic, another size or another measure) and of abstract
    length. Papers that open straight into body text have none."""
    for k, (start, para, text) in enumerate(front):
        if start < p1_end:
            continue  # title, authors, affiliations
        for _, more, rest in front[k + 1 :]:
            # A paragraph cut before its sentence ended (uneven leading) continues.
            if re.search(r"[.!?][\"'”)\]]?$", text) or abs(more[0].size - para[0].size) > 0.3:
                break
            para, text = para + more, f"{text} {rest}"
        if para[0].page > 2 or not 80 <= len(text.split()) <= 400:
            return ""
        sizes = sorted(ln.size for ln in para)
        widths = sorted(ln.width for ln in para)
        width = widths[len(widths) // 2]
        distinct = (
            (not body.bold and all(ln.bold for ln in para))
            or (not body.italic and all(ln.italic for ln in para))
            or abs(sizes[len(sizes) // 2] - body.size) >= 0.5
            or (body.line_width > 0 and abs(width / body.line_width - 1) > 0.15)
        )
        return text if distinct else ""
    return ""


def _is_figure_debris(para: list[Line], body: BodyStyle) -> bool:
    """Axis ticks and labels inside figures: no real word, or a few small-type words."""
    text = " ".join(ln.text for ln in para)
    if not re.search(r"[A-Za-z]{3}", text):
        return True
    words = text.split()
    small = all(ln.size < body.size - 0.5 for ln in para)
    return small and len(words) <= 3 and not re.search(r"[.!?:]$", text)


def fix_accents(text: str) -> str:
    """TeX sets accents as separate glyphs before the letter ("Cl´ement"): recombine them."""
    if not re.search(r"[\u0300-\u036f]", text):
        return text
    text = re.sub(r"(?<=[A-Za-z]) ?([\u0300-\u036f]) ?([A-Za-zıȷ])", r"\2\1", text)
    text = re.sub(r"(?:(?<=\s)|^)[\u0300-\u036f]\s?", "", text)  # a stray accent
    return unicodedata.normalize("NFC", text)


def _heading_md(c: Candidate) -> str:
    title = fix_accents(re.sub(r"\s+", " ", c.title).strip())
    num = f"{c.number} " if c.number else ""
    if c.number and re.fullmatch(r"[IVX]+", c.number):
        num = f"{c.number}. "  # "II. SYSTEM MODEL" stays unambiguous in Markdown
    return "#" * max(c.level, 1) + " " + num + title


def _caption_md(cap: Caption, lines: list[DocLine], join: Callable[[list[str]], str]) -> str:
    text = join([lines[cap.index + k].line.text for k in range(cap.count)])
    m = _CAPTION.match(text)
    rest = text[m.end() :] if m else text
    rest = re.sub(r"^[\s.:|—–-]+", "", rest).strip()
    return f"**{cap.label}:** {rest}".rstrip()


def _breaks(para: list[Line], dl: DocLine, body: BodyStyle) -> bool:
    """Does `dl` start a new paragraph after the lines in `para`?"""
    prev = para[-1]
    ln = dl.line
    em = max(ln.size, 4.0)
    if abs(ln.size - prev.size) > 0.8:
        return True
    if re.match(r"^[•◦▪●∙·]", ln.text):
        return True
    ends_sentence = bool(re.search(r"[.!?:]['\")\]]?$", prev.text))
    if dl.column_start:
        return ends_sentence
    if dl.starts_block:
        return True
    hanging = re.match(r"^(?:[•◦▪●∙·]|\(?\d{1,2}[.)]|\([a-z]\)|\[\w{1,12}\])\s", para[0].text)
    if 0.6 * em < ln.x0 - prev.x0 < 6 * em and not (hanging and ln.x0 > para[0].x0):
        return True
    right = max(p.x1 for p in para[-3:])
    return ends_sentence and prev.x1 < right - 2.5 * em and len(para) > 1


def _year(page1_text: str) -> int | None:
    """arXiv id, else a copyright/publication line, else the latest year on page 1."""
    lines = [ln for ln in page1_text.split("\n") if not re.search(r"(?i)download", ln)]
    text = "\n".join(lines)
    m = re.search(r"arXiv:\s?(\d{2})(\d{2})\.\d{4,5}", text, re.IGNORECASE)
    if m:
        return 2000 + int(m.group(1))
    for pattern in (r"©|\(c\)|copyright", r"published|proceedings|conference|symposium"):
        for ln in lines:
            if re.search(pattern, ln, re.IGNORECASE):
                year = find_year(ln)
                if year:
                    return year
    return find_year(text)


_NOT_NAME = re.compile(
    r"@|univ|institut|department|dept\b|school|college|laborator|\blabs?\b|research|center|"
    r"centre|inc\b|corp|ltd|gmbh|company|google|microsoft|facebook|amazon|ibm|brain|search|"
    r"transfer|square|street|road|avenue|london|abstract|www|http|\d{4}|press|journal|"
    r"proceedings|conference|copyright|draft|polytechni|ecole|école|faculty|hospital|yahoo|"
    r"campus|kingdom|usa\b",
    re.IGNORECASE,
)


def _authors(lines: list[DocLine], title_idx: list[int], p1_end: int, title: str) -> list[str]:
    """Names from the lines between the title and the abstract (best effort)."""
    start = title_idx[-1] + 1 if title_idx else 0
    names: list[str] = []
    for i in range(start, min(p1_end, start + 40, len(lines))):
        t = fix_accents(lines[i].line.text)
        if re.search(r"\d{3}", t):
            continue  # addresses, dates, phone numbers
        if re.match(r"^\s*[*†‡§¶∗]", t):
            continue  # an affiliation footnote ("‡Biological Sciences, University of ...")
        t = re.sub(r"[\d*†‡§¶∗,]+(?=\s|,|$)", ",", t)
        for part in re.split(r",|;|\band\b|&|\s{2,}", t):
            part = re.sub(r"[^\w.\-' ]", "", part).strip()
            if _NOT_NAME.search(part):
                break  # the rest of the line is an affiliation
            words = part.split()
            if not 2 <= len(words) <= 4:
                continue
            # Names: capitalised words or initials, not acronyms ("FAIR", "ASA").
            name_word = r"[A-Z][A-Za-zà-ÿ'\-]*[a-zà-ÿ]|[A-Z]\.?"
            if part.isupper():  # "MICHAEL J. FISCHER"
                name_word = r"[A-Z][A-Z'\-]+|[A-Z]\.?"
            particle = r"van|von|der|den|de|da|di|del|della|du|dos|la|le|ter|bin|al"
            named = all(
                re.fullmatch(name_word, w) or (0 < k < len(words) - 1 and re.fullmatch(particle, w))
                for k, w in enumerate(words)
            )
            if part.lower() != title.lower() and named:
                names.append(part)
    return names[:40]
