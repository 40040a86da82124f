"""Page layout: reading order over columns, and running headers/footers/page numbers.

Columns are found per page from the whitespace gutters that narrow text lines leave free;
lines that cross a gutter (titles, full-width figures and abstracts) cut the page into bands,
and each band is read column by column. Running headers and footers are lines near the top
or bottom edge whose text (digits ignored) repeats on several pages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from zocrates_nb.ingest.pdf_chars import Graphics, Line


@dataclass
class PageLines:
    page: int  # 1-based
    width: float
    height: float
    lines: list[Line]  # in reading order once `order_page` ran
    columns: int = 1
    graphics: Graphics = field(default_factory=Graphics)


_LABEL_START = re.compile(r"^(?:Figure|FIGURE|Fig\.|FIG\.|Table|TABLE)\s*[A-Z]?\d")


def _merge_fragments(lines: list[Line]) -> list[Line]:
    """Join pieces of one visual line that PDFium returned separately (kerning, ligatures)."""
    out: list[Line] = []
    for ln in lines:
        prev = out[-1] if out else None
        if prev is not None:
            em = max(prev.size, 4.0)
            same_base = abs(prev.bottom - ln.bottom) < 0.35 * em
            gap = ln.x0 - prev.x1
            # A section number is set apart from its title by a wider space.
            reach = 3.5 if re.fullmatch(r"(?:\d{1,2}(?:\.\d{1,2})*|[A-Z](?:\.\d{1,2})*|[IVX]+)\.?",
                                        prev.text) else 0.8
            if _LABEL_START.match(ln.text) and gap > 0.3 * em:
                reach = 0.0  # a caption set beside another one starts its own line
            if same_base and -0.5 * em < gap < reach * em and abs(prev.size - ln.size) < 1.5:
                if gap > 0.15 * em and ln.spans:
                    ln.spans[0].text = " " + ln.spans[0].text.lstrip()
                prev.spans.extend(ln.spans)
                prev.touch()
                prev.x1 = max(prev.x1, ln.x1)
                prev.top = min(prev.top, ln.top)
                prev.bottom = max(prev.bottom, ln.bottom)
                continue
        out.append(ln)
    return out


def find_gutters(lines: list[Line], width: float) -> list[tuple[float, float]]:
    """x-intervals free of column-width text lines with text columns on both sides.

    Only lines 0.18–0.6 of the page wide count: body lines in columns. Short lines (figure
    labels, centred author names) and full-width lines may cross a gutter; they become bands.
    """
    colish = [ln for ln in lines if 0.18 * width < ln.width < 0.6 * width]
    if len(colish) < 8:
        return []
    step = 2.0
    bins = int(width / step) + 1
    cover = [0] * bins
    for ln in colish:
        for b in range(max(int(ln.x0 / step), 0), min(int(ln.x1 / step) + 1, bins)):
            cover[b] += 1
    inner = sorted(c for c in cover[int(0.1 * bins) : int(0.9 * bins)] if c > 0)
    peak = inner[int(0.8 * len(inner))] if inner else 0
    # A gutter is a deep valley in the coverage: boxes and sidebars may cross it in places.
    limit = max(2, int(0.05 * len(colish)), int(0.3 * peak))
    gutters: list[tuple[float, float]] = []
    b = int(0.15 * width / step)
    end = int(0.85 * width / step)
    while b < end:
        if cover[b] <= limit:
            s = b
            while b < end and cover[b] <= limit:
                b += 1
            lo, hi = s * step, b * step
            if hi - lo >= 4:
                gutters.append((lo, hi))
        b += 1
    wide = [ln for ln in lines if ln.width >= 0.6 * width]
    good = [g for g in gutters if gutter_fits(colish, g, wide=wide)]
    # Keep the widest free stretch between consecutive text columns.
    merged: list[tuple[float, float]] = []
    for g in good:
        if merged and g[0] - merged[-1][1] < 0.12 * width:
            if g[1] - g[0] > merged[-1][1] - merged[-1][0]:
                merged[-1] = g
        else:
            merged.append(g)
    return merged


def gutter_fits(
    colish: list[Line], g: tuple[float, float], need: int = 5, wide: list[Line] | None = None
) -> bool:
    """Enough column-width lines end left of the gutter and start right of it, and they
    outnumber the full-width lines (a one-column page with a table has no gutter)."""
    lo, hi = g
    left = sum(1 for ln in colish if ln.x1 <= lo + 2)
    right = sum(1 for ln in colish if ln.x0 >= hi - 2)
    cross = sum(1 for ln in colish if ln.x0 < lo - 2 and ln.x1 > hi + 2)
    if wide and len(wide) * 2 > left + right:
        return False
    return left >= need and right >= need and cross <= max(2, 0.4 * min(left, right))


def page_gutters(page: PageLines) -> list[tuple[float, float]]:
    page.lines = _merge_fragments(page.lines)
    return find_gutters(page.lines, page.width)


def order_page(page: PageLines, gutters: list[tuple[float, float]]) -> PageLines:
    """Reading order: each column top to bottom; a line crossing gutters is a barrier for the
    columns it covers, read once every covered column has been read down to it."""
    lines = page.lines
    page.columns = len(gutters) + 1
    if not gutters:
        page.lines = _sort_band(lines)
        return page
    n = len(gutters) + 1

    def span(ln: Line) -> tuple[int, int]:
        first = sum(1 for lo, hi in gutters if ln.x0 > lo - 2)
        last = sum(1 for lo, hi in gutters if ln.x1 > hi + 2)
        if first > last:  # inside a gutter: a page number or a stray mark
            first = last = min(first, last)
        return first, last

    queues: list[list[Line]] = [[] for _ in range(n)]
    spans: dict[int, tuple[int, int]] = {}
    for ln in sorted(lines, key=lambda x: (x.top, x.x0)):
        a, b = span(ln)
        spans[id(ln)] = (a, b)
        ln.col = a if a == b else -1
        for c in range(a, b + 1):
            queues[c].append(ln)
    heads = [0] * n
    ordered: list[Line] = []
    pending: list[Line] = []  # lines of one column, sorted as a band when the column pauses

    def head(c: int) -> Line | None:
        return queues[c][heads[c]] if heads[c] < len(queues[c]) else None

    while any(head(c) is not None for c in range(n)):
        progress = False
        for c in range(n):
            nxt = head(c)
            while nxt is not None and spans[id(nxt)][0] == spans[id(nxt)][1]:
                pending.append(nxt)
                heads[c] += 1
                nxt = head(c)
            ordered.extend(_sort_band(pending))
            pending.clear()
            if nxt is None:
                continue
            a, b = spans[id(nxt)]
            if all(head(k) is nxt for k in range(a, b + 1)):
                ordered.append(nxt)
                for k in range(a, b + 1):
                    heads[k] += 1
                progress = True
                break  # start again from the leftmost column
        if not progress:
            # Barriers waiting on each other: take the topmost one.
            waiting = [h for c in range(n) if (h := head(c)) is not None]
            if not waiting:
                break
            top = min(waiting, key=lambda x: x.top)
            ordered.append(top)
            for k in range(n):
                if top in queues[k][heads[k]:]:
                    queues[k].remove(top)
    page.lines = _regroup_sidebars(ordered, page)
    return page


def _regroup_sidebars(ordered: list[Line], page: PageLines) -> list[Line]:
    """A run of gutter-crossing lines may hold columns of its own (a boxed sidebar)."""
    out: list[Line] = []
    run: list[Line] = []

    def flush() -> None:
        inner = find_gutters(run, page.width) if len(run) >= 10 else []
        if inner:
            sub = PageLines(page.page, page.width, page.height, list(run))
            out.extend(order_page(sub, inner).lines)
            for ln in run:
                ln.col = -1
        else:
            out.extend(run)
        run.clear()

    for ln in ordered:
        if ln.col == -1:
            run.append(ln)
        else:
            flush()
            out.append(ln)
    flush()
    return out


def _sort_band(lines: list[Line]) -> list[Line]:
    """Top to bottom; pieces of one row (same baseline) left to right."""
    rows: list[list[Line]] = []
    for ln in sorted(lines, key=lambda x: x.bottom):
        if rows and abs(rows[-1][0].bottom - ln.bottom) < 0.3 * max(ln.size, 4.0):
            rows[-1].append(ln)
        else:
            rows.append([ln])
    out: list[Line] = []
    for row in rows:
        out.extend(sorted(row, key=lambda x: x.x0))
    return _merge_fragments(out)


_PAGE_NUMBER = re.compile(
    r"^(?:page\s+)?(?:\d{1,4}|[ivxlc]{1,6})(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE
)


def _edge_key(text: str) -> str:
    return re.sub(r"\d+", "#", text.lower()).strip()


def remove_page_furniture(pages: list[PageLines]) -> None:
    """Drop page numbers and running headers/footers (repeated near the page edges)."""
    counts: Counter[str] = Counter()
    for p in pages:
        keys = set()
        for ln in p.lines:
            if _near_edge(ln, p):
                keys.add(_edge_key(ln.text))
        counts.update(keys)
    need = 2 if len(pages) <= 4 else 3
    sizes = sorted(ln.size for p in pages for ln in p.lines)
    usual = sizes[len(sizes) // 2] if sizes else 10.0
    for p in pages:
        kept = []
        for ln in p.lines:
            if ln.bottom < 0 or ln.top > p.height or ln.x1 < 0 or ln.x0 > p.width:
                continue  # outside the page box (printer stamps, clipped text)
            if _near_edge(ln, p):
                text = ln.text
                if _PAGE_NUMBER.match(text):
                    continue
                # Running heads are small; a repeated *large* line is the title on page 1.
                if counts[_edge_key(text)] >= need and ln.size <= usual + 3.5:
                    continue
            kept.append(ln)
        p.lines = kept


def _near_edge(ln: Line, p: PageLines) -> bool:
    return ln.top < 0.12 * p.height or ln.top > 0.88 * p.height
