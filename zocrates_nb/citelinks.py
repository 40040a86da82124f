"""Where a citation points: its paper, the page of the passage, and the links that open them.

One rule for every surface (panel, notes, Markdown, DataFrames): a citation knows its page when
its passage does; `zotero://open-pdf/library/items/<attachment>?page=N` opens the cited PDF at
that page in Zotero, `zotero://select/library/items/<item>` selects the paper. `zotero://`
links only work in Zotero and in the panel (JupyterLab's sanitizer drops them from notebook
cells), so text that leaves the panel links papers by https (the DOI, the paper's page).
A base module: it imports the turn record only."""

from __future__ import annotations

import re
from dataclasses import dataclass

from zocrates_nb.turn import Citation, TurnResult

ZOTERO_KEY = re.compile(r"^[A-Z0-9]{8}$")


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
    """Each citation number's passages (several when one `[n]` stands for several)."""
    out: dict[int, list[CitedPage]] = {}
    for c in turn.citations:
        out.setdefault(c.n, [])
        ref = of(c)
        if ref not in out[c.n]:
            out[c.n].append(ref)
    return out


def of(c: Citation) -> CitedPage:
    page = c.page if isinstance(c.page, int) and c.page > 0 else None
    return CitedPage(c.n, c.item_key, doc_key(c.chunk_id), page)


def pages_label(pages: list[int | None]) -> str:
    """'p. 4', 'pp. 4, 7' or '' when no page is known."""
    known = sorted({p for p in pages if p})
    if not known:
        return ""
    return ("p. " if len(known) == 1 else "pp. ") + ", ".join(map(str, known))


def select_url(item_key: str, library: str = "library") -> str:
    """A link that selects the item in Zotero; `library` is "library" (the user's own) or
    "groups/<id>" (a group library), as Zotero's URLs name them."""
    if not ZOTERO_KEY.match(item_key) or not _LIBRARY.match(library):
        return ""
    return f"zotero://select/{library}/items/{item_key}"


def pdf_url(attachment_key: str, page: int | None = None, library: str = "library") -> str:
    if not ZOTERO_KEY.match(attachment_key) or not _LIBRARY.match(library):
        return ""
    url = f"zotero://open-pdf/{library}/items/{attachment_key}"
    return f"{url}?page={page}" if page else url


_LIBRARY = re.compile(r"^(library|groups/\d{1,12})$")


def doi_url(doi: str | None) -> str:
    return f"https://doi.org/{doi}" if doi and doi.startswith("10.") else ""
