"""Where a citation points: its paper, the page of the passage, and the links that open them.

One rule for every surface (panel, notes, Markdown, DataFrames): a citation knows its page when
its passage does (each `[n]` the page of its own sentence). The `zotero://` links that open a
paper or its PDF at a page are built where the Zotero key rule lives (`library/paths.py`);
`zotero://` links only work in Zotero and in the panel (JupyterLab's sanitizer drops them from
notebook cells), so text that leaves the panel links papers by https (the DOI, the paper's
page). A base module: it imports the turn record only."""

from __future__ import annotations

from dataclasses import dataclass

from zocrates_nb.turn import Citation, TurnResult


@dataclass(frozen=True)
class CitedPage:
    """One `[n]` of an answer: the paper, the attachment its passage comes from, the page."""

    n: int
    item_key: str
    doc_key: str
    page: int | None


def doc_key(chunk_id: str) -> str:
    """The document a chunk belongs to (chunk ids are `<doc_key>:<n>`)."""
    return chunk_id.rsplit(":", 1)[0] if ":" in chunk_id else chunk_id


def cited_pages(turn: TurnResult) -> dict[int, list[CitedPage]]:
    """Each citation number's places: the page of every sentence a `[n]` supports (the
    passage's page where none is known), several when one `[n]` stands for several passages."""
    out: dict[int, list[CitedPage]] = {}
    for c in turn.citations:
        refs = out.setdefault(c.n, [])
        for ref in places(c):
            if ref not in refs:
                refs.append(ref)
    return out


def places(c: Citation) -> list[CitedPage]:
    """Where one citation's `[n]` markers point, one entry per page, in the answer's order."""
    pages: list[int | None] = [o.page for o in c.occurrences if o.page] or [c.page]
    return [CitedPage(c.n, c.item_key, doc_key(c.chunk_id),
                      p if isinstance(p, int) and p > 0 else None)
            for p in dict.fromkeys(pages)]  # fmt: skip


def pages_label(pages: list[int | None]) -> str:
    """'p. 4', 'pp. 4, 7' or '' when no page is known."""
    known = sorted({p for p in pages if p})
    if not known:
        return ""
    return ("p. " if len(known) == 1 else "pp. ") + ", ".join(map(str, known))


def doi_url(doi: str | None) -> str:
    return f"https://doi.org/{doi}" if doi and doi.startswith("10.") else ""
