"""Rows of simple tables, read from the text lines next to a table caption.

A row is the set of lines on one baseline (in the caption's column, or across the page for a
full-width caption) whose cells are set apart by wide gaps (the character reader writes two
spaces there, or starts a new line). Rows are taken from the caption outwards, below it or
else above it, until prose, a wide vertical gap or the page edge. Cells are placed in
columns by their x position. Spanning headers and multi-line cells come out approximate;
tables with fewer than two rows are not kept. A table that runs to the foot of its page
continues on the next pages while they open with rows (after at most a "(continued)" line)
and hold no heading or caption of their own;
a header row repeated at the top of a page is dropped. Each step looks at one page, so a
table over hundreds of pages costs time in proportion to its rows.
"""

from __future__ import annotations

import re

from zocrates_nb.ingest.pdf_chars import Line
from zocrates_nb.ingest.pdf_headings import DocLine

_MAX_ROWS = 150  # per page
MAX_TABLE_ROWS = 100_000
Cell = tuple[float, str]  # x0, text
Group = tuple[list[int], list[Cell]]  # line indices of one row, its cells


def _cells(ln: Line) -> list[Cell]:
    """Cells of one line segment; x positions inside it are estimated from character offsets."""
    text = ln.text
    out: list[Cell] = []
    for m in re.finditer(r"\S+(?: \S+)*", text):
        x = ln.x0 + ln.width * m.start() / max(len(text), 1)
        out.append((x, m.group(0)))
    return out


def _rows(lines: list[DocLine], members: list[int]) -> list[tuple[float, list[int]]]:
    """Group line indices by baseline: (baseline, indices) sorted top to bottom."""
    rows: list[tuple[float, list[int]]] = []
    for i in sorted(members, key=lambda k: lines[k].line.base):
        ln = lines[i].line
        if rows and abs(rows[-1][0] - ln.base) < 0.4 * max(ln.size, 4.0):
            rows[-1][1].append(i)
        else:
            rows.append((ln.base, [i]))
    return rows


def _walk(lines: list[DocLine], rows: list[tuple[float, list[int]]],
          start_base: float) -> list[Group]:
    taken: list[Group] = []
    last = start_base
    singles = 0
    for base, members in rows:
        size = max(lines[members[0]].line.size, 4.0)
        reach = 3.2 if taken else 5.0  # captions keep some distance from their table
        if abs(base - last) > reach * size or len(taken) >= _MAX_ROWS:
            break
        cells = sorted(c for m in members for c in _cells(lines[m].line))
        words = sum(len(t.split()) for _, t in cells)
        if len(cells) < 2:
            # A lone label inside a table is fine once; prose or a second one ends it.
            if words > 6 or singles >= 1 or not taken:
                break
            singles += 1
        else:
            if words > 6 * len(cells) + 4:
                break  # running text that happens to share a baseline
            singles = 0
        taken.append((members, cells))
        last = base
    while taken and len(taken[-1][1]) < 2:
        taken.pop()
    return taken


def _columns(rows: list[list[Cell]], em: float) -> list[list[str]]:
    """Align cells to column anchors: x positions where cells of several rows start."""
    xs = sorted(x for row in rows for x, _ in row)
    clusters: list[list[float]] = []
    for x in xs:
        if clusters and x - clusters[-1][-1] <= 1.5 * em:
            clusters[-1].append(x)
        else:
            clusters.append([x])
    need = 2 if len(rows) > 2 else 1
    anchors = [sum(c) / len(c) for c in clusters if len(c) >= need] or [xs[0]]
    out: list[list[str]] = []
    for row in rows:
        cells = [""] * len(anchors)
        for x, text in row:
            k = min(range(len(anchors)), key=lambda j: abs(anchors[j] - x))
            cells[k] = f"{cells[k]} {text}".strip()
        out.append(cells)
    used = [j for j in range(len(anchors)) if any(r[j] for r in out)]
    return [[r[j] for j in used] for r in out]


def _page_members(lines: list[DocLine], pages: dict[int, range], page: int, col: int,
                  blocked: set[int]) -> list[int]:
    return [
        i for i in pages.get(page, range(0))
        if i not in blocked and (col < 0 or lines[i].line.col in (col, -1))
    ]


def page_ranges(lines: list[DocLine]) -> dict[int, range]:
    """Line indices of each page (lines come page by page)."""
    out: dict[int, range] = {}
    start = 0
    for i in range(1, len(lines) + 1):
        if i == len(lines) or lines[i].page != lines[start].page:
            out[lines[start].page] = range(start, i)
            start = i
    return out


def table_rows(lines: list[DocLine], index: int, count: int, blocked: set[int],
               pages: dict[int, range] | None = None
               ) -> tuple[list[int], list[list[str]], list[int]]:
    """Line indices used, the rows (cells) and each row's page of the table captioned at
    `index`; `pages` is `page_ranges(lines)` (computed when not given)."""
    pages = pages if pages is not None else page_ranges(lines)
    cap = lines[index]
    col = cap.line.col
    members = _page_members(lines, pages, cap.page, col, blocked)
    top = cap.line.base
    bottom = lines[index + count - 1].line.base
    rows = _rows(lines, members)
    under = [r for r in rows if r[0] > bottom]
    below = _walk(lines, under, bottom)
    above = _walk(lines, [r for r in reversed(rows) if r[0] < top], top)
    above.reverse()
    groups = below if len(below) >= len(above) else above
    if len(groups) < 2:
        return [], [], []
    if groups is below and len(below) == len(under):  # runs to the foot of the page
        groups += _continued(lines, pages, cap.page, col, blocked, groups[0][1])
    used = [m for members_, _ in groups for m in members_]
    with_cells = [(members_, cells) for members_, cells in groups if cells]
    table = _columns([cells for _, cells in with_cells], max(cap.line.size, 4.0))
    row_pages = [lines[members_[0]].page for members_, _ in with_cells]
    return used, table, row_pages


def _continued(lines: list[DocLine], pages: dict[int, range], page: int, col: int,
               blocked: set[int], header: list[Cell]) -> list[Group]:
    """Rows of a table going on over the following pages (see the module docstring).

    A repeated header row is returned with no cells, so its lines count as used but it adds
    no row."""
    head_text = [t for _, t in header]
    out: list[Group] = []
    total = 0
    while total < MAX_TABLE_ROWS:
        page += 1
        if any(i in blocked for i in pages.get(page, range(0))):
            break  # a heading or another caption: this page is not more of the table
        members = _page_members(lines, pages, page, col, blocked)
        rows = _rows(lines, members)
        lead = 0  # a "Table 3 (continued)" line or a short running title above the rows
        while lead < min(2, len(rows)) and len(rows[lead][1]) == 1 and len(
            lines[rows[lead][1][0]].line.text.split()
        ) <= 8 and "  " not in lines[rows[lead][1][0]].line.text:
            lead += 1
        rest = rows[lead:]
        if not rest:
            break
        taken = _walk(lines, rest, rest[0][0])
        if len(taken) < 2:
            break
        first_text = [t for _, t in taken[0][1]]
        if first_text == head_text:
            taken[0] = (taken[0][0], [])
        for _, members_ in rows[:lead]:
            out.append((members_, []))  # the "(continued)" line: used, not a row
        out.extend(taken)
        total += len(taken)
        if len(taken) < len(rest):
            break  # prose after the rows: the table ends on this page
    return out
