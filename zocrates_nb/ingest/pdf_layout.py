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

from zocrates_nb.ingest.pdf_chars import Graphics, Line, Span


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


def join_justified(page: PageLines) -> None:
    """Re-join a justified line that the character reader cut at its stretched word gaps.

    The reader starts a new line at a gap wider than 1.8 em (columns and table cells), but
    a loose justified line ("6.4  Client-driven    or    Server-driven") has word gaps that
    wide too. Its pieces share a baseline and a column, reach from the column's left edge to
    its right edge, and *every* word gap in them is wide (a table row keeps narrow spaces
    inside its cells; a section number may keep its own narrower space); equation numbers
    and cells far apart stay separate. The joined line
    gets plain single spaces, so it no longer reads as a row of table cells.
    """
    right: dict[int, float] = {}
    left: dict[int, float] = {}
    for c in {ln.col for ln in page.lines if ln.col >= 0}:
        long = [ln for ln in page.lines if ln.col == c and len(ln.text) >= 30]
        ends = Counter(round(ln.x1) for ln in long).most_common(1)
        starts = Counter(round(ln.x0) for ln in long).most_common(1)
        if ends and ends[0][1] >= 3 and starts:
            right[c], left[c] = float(ends[0][0]), float(starts[0][0])
    out: list[Line] = []
    i = 0
    lines = page.lines
    while i < len(lines):
        row = [lines[i]]
        while i + len(row) < len(lines):
            a, b = row[-1], lines[i + len(row)]
            em = max(a.size, 4.0)
            if (b.col != a.col or abs(a.bottom - b.bottom) > 0.35 * em
                    or not 1.0 * em < b.x0 - a.x1 < 4.0 * em or abs(a.size - b.size) > 0.5):
                break
            row.append(b)
        i += len(row)
        if len(row) > 1 and _justified_row(row, left, right):
            first = row[0]
            for ln in row[1:]:
                if ln.spans:
                    ln.spans[0].text = " " + ln.spans[0].text.lstrip()
                first.spans.extend(ln.spans)
            for sp in first.spans:  # every gap is a stretched word space, not a cell gap
                sp.text = re.sub(r"(?<=\S)  +(?=\S)", " ", sp.text)
                first.top = min(first.top, ln.top)
                first.bottom = max(first.bottom, ln.bottom)
            first.x1 = row[-1].x1
            first.touch()
            out.append(first)
        else:
            out.extend(row)
    page.lines = out


def _justified_row(row: list[Line], left: dict[int, float], right: dict[int, float]) -> bool:
    c = row[0].col
    if c not in right:
        return False
    em = max(row[0].size, 4.0)
    if abs(row[-1].x1 - right[c]) > 1.5 or not left[c] - 1.5 <= row[0].x0 <= left[c] + 3 * em:
        return False
    texts = [ln.text for ln in row]
    texts[0] = re.sub(r"^(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVX]+)\.? ", "", texts[0])
    if any(re.search(r"\S \S", t) for t in texts):
        return False  # a narrow word space: this line was not stretched
    words = " ".join(texts).split()
    return len(words) >= 3 and all(re.search(r"[A-Za-z]{2}", t) for t in texts)


_SIDE_LABEL = re.compile(r"^(?:Figure|FIGURE|Fig\.|FIG\.|Table|TABLE)\s*(?:[A-Z]?\d+|[IVX]+)[.:]")


def separate_side_blocks(page: PageLines) -> None:
    """Read a caption set beside another block (side-by-side figures) as a block of its own.

    Within a column, text set in two narrow blocks side by side comes out interleaved row by
    row, and where the blocks almost touch the character reader even joins their rows. A
    caption label starting a line well inside its column marks the right-hand block: the
    lines below it that start at the label's left edge, or that have a word starting exactly
    there (joined rows, which are cut there), are read after the block on their left.
    """
    for ln in list(page.lines):
        if _SIDE_LABEL.match(ln.text) and any(k is ln for k in page.lines):
            _side_block(page, ln)


def _side_block(page: PageLines, label: Line) -> None:
    x = label.x0
    em = max(label.size, 4.0)
    same = [ln for ln in page.lines if ln.col == label.col]
    long = [ln.x0 for ln in same if len(ln.text) >= 30]
    if len(long) < 3 or x < min(long) + 3 * em:
        return
    cut: list[tuple[Line, Line, Line]] = []  # (line, left part, right part)
    block = [label]
    for ln in sorted(same, key=lambda k: k.base):
        if ln.base <= label.base:
            continue
        last = block[-1]
        if ln.base - last.base > 1.6 * max(last.size, em):
            break
        if ln.x1 <= x + 2:
            continue  # the neighbouring block
        if abs(ln.x0 - x) <= 2 and abs(ln.size - label.size) <= 0.8:
            block.append(ln)
        elif ln.x0 < x - em and (parts := _cut_at(ln, x)):
            cut.append((ln, *parts))
            block.append(parts[1])
        else:
            break
    top, bottom = label.top - 0.5 * em, block[-1].bottom + 1.6 * em
    left = [ln for ln in same if ln.x1 <= x + 2 and ln.x0 < x - 5 * em
            and ln.bottom > top and ln.top < bottom]
    ends = [a.x1 for _, a, _ in cut]
    if len(block) < 2 or not left or (ends and max(ends) - min(ends) > 2.5):
        return  # the left parts of a real block end flush, where its column ends
    lines = page.lines
    for ln, a, _ in cut:
        lines[next(k for k, o in enumerate(lines) if o is ln)] = a
        left.append(a)
    moved = set(map(id, block))
    rest = [ln for ln in lines if id(ln) not in moved]
    # The left block may run on below the caption: take its lines while they keep close.
    at = {id(ln): k for k, ln in enumerate(rest)}
    end = max(at[id(ln)] for ln in left)
    while end + 1 < len(rest):
        nxt, prev = rest[end + 1], rest[end]
        if (nxt.col != label.col or nxt.x1 > x + 2
                or not 0 < nxt.base - prev.base <= 1.6 * max(prev.size, 4.0)):
            break
        end += 1
    page.lines = rest[: end + 1] + block + rest[end + 1 :]


def _cut_at(ln: Line, x: float) -> tuple[Line, Line] | None:
    """The parts of `ln` left and right of a word starting at `x` (None: no word starts
    there, or the part before it does not end clear of it)."""
    flat: list[tuple[int, int, float, float]] = []  # span, word, x0, x1
    for si, sp in enumerate(ln.spans):
        toks = sp.text.split()
        if len(toks) != len(sp.words):
            return None
        flat.extend((si, wi, w[0], w[1]) for wi, w in enumerate(sp.words))
    for k in range(1, len(flat)):
        si, wi, x0, _ = flat[k]
        if abs(x0 - x) <= 1.5 and flat[k - 1][3] < x - 1.0:
            break
    else:
        return None
    sp = ln.spans[si]
    starts = [m.start() for m in re.finditer(r"\S+", sp.text)]
    head = Span(sp.text[: starts[wi]].rstrip(), sp.size, sp.bold, sp.italic, sp.font,
                sp.x0, flat[k - 1][3], sp.weight, sp.words[:wi])
    tail = Span(sp.text[starts[wi]:], sp.size, sp.bold, sp.italic, sp.font, x0, sp.x1,
                sp.weight, sp.words[wi:])
    left_spans = [*ln.spans[:si], *([head] if wi else [])]
    right_spans = [tail, *ln.spans[si + 1 :]]
    a = Line(ln.page, ln.x0, ln.top, flat[k - 1][3], ln.bottom, left_spans, ln.invisible,
             ln.base, ln.col)
    b = Line(ln.page, x0, ln.top, ln.x1, ln.bottom, right_spans, ln.invisible, ln.base, ln.col)
    return a, b


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
        # A running head is printed once per page; a numbered pattern repeated on the page
        # itself ("S00041", "S00042"… down a table column) is content reaching the edge.
        on_page = Counter(k for ln in p.lines if "#" in (k := _edge_key(ln.text)))
        for ln in p.lines:
            if ln.bottom < 0 or ln.top > p.height or ln.x1 < 0 or ln.x0 > p.width:
                continue  # outside the page box (printer stamps, clipped text)
            if _near_edge(ln, p):
                text = ln.text
                if _PAGE_NUMBER.match(text):
                    continue
                key = _edge_key(text)
                # Running heads are small; a repeated *large* line is the title on page 1.
                if counts[key] >= need and ln.size <= usual + 3.5 and on_page[key] < 3:
                    continue
            kept.append(ln)
        p.lines = kept


def _near_edge(ln: Line, p: PageLines) -> bool:
    return ln.top < 0.12 * p.height or ln.top > 0.88 * p.height
