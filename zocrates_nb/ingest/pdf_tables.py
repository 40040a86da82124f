"""Rows of simple tables, read from the text lines next to a table caption.

A row is the set of lines on one baseline (in the caption's column, or across the page for a
full-width caption) whose cells are set apart by wide gaps (the character reader writes two
spaces there, or starts a new line). Rows are taken from the caption outwards, below it or
else above it, until prose, a wide vertical gap or the page edge. Cells are placed in
columns by their x position. Spanning headers and multi-line cells come out approximate;
tables with fewer than two rows are not kept.
"""

from __future__ import annotations

import re

from zocrates_nb.ingest.pdf_chars import Line
from zocrates_nb.ingest.pdf_headings import DocLine

_MAX_ROWS = 80
Cell = tuple[float, str]  # x0, text


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
          start_base: float) -> list[tuple[list[int], list[Cell]]]:
    taken: list[tuple[list[int], list[Cell]]] = []
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


def table_rows(lines: list[DocLine], index: int, count: int,
               blocked: set[int]) -> tuple[list[int], list[list[str]]]:
    """Line indices used and the rows (cells) of the table captioned at `index`."""
    cap = lines[index]
    col = cap.line.col
    members = [
        i for i, dl in enumerate(lines)
        if dl.page == cap.page and i not in blocked and (col < 0 or dl.line.col in (col, -1))
    ]
    top = cap.line.base
    bottom = lines[index + count - 1].line.base
    rows = _rows(lines, members)
    below = _walk(lines, [r for r in rows if r[0] > bottom], bottom)
    above = _walk(lines, [r for r in reversed(rows) if r[0] < top], top)
    above.reverse()
    groups = below if len(below) >= len(above) else above
    if len(groups) < 2:
        return [], []
    used = [m for members_, _ in groups for m in members_]
    table = _columns([cells for _, cells in groups], max(cap.line.size, 4.0))
    return used, table
