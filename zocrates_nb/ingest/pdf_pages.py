"""Where each page begins in a PDF's Markdown: a line, and a column inside it when a paragraph
runs on from the page before (`Toc.page_starts`, `Toc.page_cols`), so a sentence's page is
exact, not its paragraph's."""

from __future__ import annotations

from collections.abc import Callable


def page_breaks(lines: list[str], pages: list[int], shift: int,
                join: Callable[[list[str]], str]) -> list[tuple[int, int]]:
    """Where a paragraph of printed `lines` (each on its page) that runs across pages reaches
    each next page: (column in its Markdown line, page). `join` makes the paragraph of lines;
    `shift` is what was put before the joined text (an escape, a bullet)."""
    out = []
    for k in range(1, len(lines)):
        if pages[k] != pages[k - 1]:
            out.append((len(join(lines[:k])) + shift, pages[k]))
    return out


def page_starts_of(md_pages: list[int], md_breaks: dict[int, list[tuple[int, int]]],
                 n_pages: int) -> tuple[list[int], list[int]]:
    """Where each page begins in the Markdown: (1-based line, column) per page, monotone (a
    page without new text shares the next start). A page begins at a line's start, or inside
    a paragraph that ran on from the page before (`md_breaks`)."""
    begins = []  # (line index, column, page), in document order
    for j, page in enumerate(md_pages):
        begins.append((j, 0, page))
        begins.extend((j, col, p) for col, p in md_breaks.get(j, []))
    last = (max(len(md_pages), 1) - 1, 0)
    starts: list[tuple[int, int]] = []
    k = 0
    for page in range(1, n_pages + 1):
        while k < len(begins) and begins[k][2] < page:
            k += 1
        starts.append(begins[k][:2] if k < len(begins) else last)
    for m in range(1, len(starts)):
        starts[m] = max(starts[m], starts[m - 1])
    return [j + 1 for j, _ in starts], [c for _, c in starts]
