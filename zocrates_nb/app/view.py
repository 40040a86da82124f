"""One view of a turn for every surface: `TurnView`, built once by `App.view`.

The panel, the HTTP API, the CLI (`ask --json` and the printed answer), DataFrames, notes and
exports all receive this one view: the scope's chips named (titles, collection names), each
source and citation linked (`zotero://select/…`, `zotero://open-pdf/…?page=N` at the page of
the sentence each `[n]` supports), a checkpoint card with the papers covered so far. Names come
from what the turn holds (its evidence rows carry each paper's title and year); the library is
asked only for what a turn does not hold (whether an item is Zotero's, its PDF, DOI and URL),
once per paper. Items from a folder or the sample get no `zotero://` links.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from zocrates_nb.citelinks import doc_key, doi_url
from zocrates_nb.library.paths import pdf_url, select_url, zotero_key
from zocrates_nb.turn import (
    Citation,
    CitationView,
    Scope,
    ScopeChips,
    Source,
    SourceView,
    TurnResult,
    TurnView,
)


class LibraryReader(Protocol):
    """What a view reads of the library (`App`'s own look-ups)."""

    def item(self, key: str) -> Any: ...

    def documents(self, item_key: str | None = None) -> list[Any]: ...

    def document(self, doc_key: str) -> Any: ...

    def collections(self) -> dict[str, str]: ...


@dataclass
class _Paper:
    """What a view needs of one paper beyond the turn: its links and https address."""

    title: str = ""
    year: int | None = None
    zotero: bool = False  # an item of a Zotero library (folder and sample items are not)
    pdf: str = ""  # its first PDF's attachment key
    href: str = ""


@dataclass
class _Library:
    """The library as one view reads it: each paper and document asked about once."""

    app: LibraryReader | None
    papers: dict[str, _Paper] = field(default_factory=dict)
    pdfs: dict[str, bool] = field(default_factory=dict)

    def paper(self, key: str) -> _Paper:
        if key not in self.papers:
            self.papers[key] = self._paper(key)
        return self.papers[key]

    def _paper(self, key: str) -> _Paper:
        record = _quiet(lambda: self.app.item(key)) if self.app and key else None
        if record is None:
            return _Paper()
        url = str(getattr(record, "url", "") or "")
        href = doi_url(getattr(record, "doi", "") or "") or (
            url if url.startswith(("https://", "http://")) else "")  # fmt: skip
        zotero = zotero_key(key) and record.version.startswith("v")
        docs = (_quiet(lambda: self.app.documents(key)) or []) if zotero and self.app else []
        pdfs = [d.doc_key for d in docs if d.kind == "pdf" and zotero_key(d.doc_key)]
        return _Paper(record.title, record.year, zotero, pdfs[0] if pdfs else "", href)

    def is_pdf(self, key: str) -> bool:
        if key not in self.pdfs:
            doc = _quiet(lambda: self.app.document(key)) if self.app else None
            self.pdfs[key] = doc is not None and doc.kind == "pdf" and zotero_key(key)
        return self.pdfs[key]

    def links(self, item_key: str) -> dict[str, str]:
        paper = self.paper(item_key)
        if not paper.zotero:
            return {}
        links = {"select": select_url(item_key)}
        if paper.pdf:
            links["pdf"] = pdf_url(paper.pdf)
        return links


def _quiet(read: Any) -> Any:
    try:
        return read()
    except Exception:  # an index that cannot be read names nothing; the turn still shows
        return None


def turn_view(app: LibraryReader | None, turn: TurnResult, **changes: Any) -> TurnView:
    """A turn as every surface shows it (`TurnView`, widgets/PROTOCOL.md): sources and
    citations with their links, the scope's chips named, a checkpoint card with the papers
    covered so far; `changes` are applied last."""
    lib = _Library(app)
    known = {e.item_key: (e.title, e.year) for e in turn.evidence if e.title}
    view = TurnView.of(
        turn,
        cited_sources=sources(lib, turn.cited_sources),
        other_sources=sources(lib, turn.other_sources),
        elsewhere=sources(lib, turn.elsewhere),
        citations=citations(lib, turn.citations),
        chips=chips(lib, turn.scope, known),
        widen_chips=chips(lib, turn.widen_scope, known) if turn.widen_scope else None,
        **changes,
    )
    if view.checkpoint is not None:
        view.checkpoint.papers = papers_covered(turn)
    if view.status == "error" and not view.error:
        view.error = "This turn failed."
    return view


def papers_covered(turn: TurnResult, limit: int = 12) -> list[str]:
    """Titles of the papers a turn's search has gathered passages from, best first."""
    return list(dict.fromkeys(e.title for e in turn.evidence if e.title))[:limit]


def chips(lib: _Library, scope: Scope,
          known: dict[str, tuple[str, int | None]] | None = None) -> ScopeChips:  # fmt: skip
    """A scope's chips with titles and collection names (the key when unknown)."""
    out = ScopeChips.of(scope)
    for item in out.items:
        title, year = (known or {}).get(item.key) or (lib.paper(item.key).title,
                                                      lib.paper(item.key).year)
        item.title, item.year = title or item.key, year
    if out.collections:
        names = (_quiet(lib.app.collections) if lib.app else None) or {}
        for c in out.collections:
            c.name = names.get(c.key, c.key)
    return out


def sources(lib: _Library, items: list[Source]) -> list[SourceView]:
    """Sources with `links` to Zotero (an item of a Zotero library) and `href`, an https link
    to the paper (its DOI, else its own page) that notebook cells keep."""
    return [SourceView(**s.model_dump(), links=lib.links(s.item_key),
                       href=lib.paper(s.item_key).href) for s in items]  # fmt: skip


def citations(lib: _Library, items: list[Citation]) -> list[CitationView]:
    """Citations; one whose passage is in a PDF of a Zotero library carries `links`: `select`
    and `pdf` (at its page), and `occurrence_links`: each `[n]`'s PDF link at its own page."""
    out = []
    for c in items:
        links = lib.links(c.item_key)
        doc = doc_key(c.chunk_id)
        each: list[str] = []
        if links and lib.is_pdf(doc):
            links["pdf"] = pdf_url(doc, c.page)
            each = [pdf_url(doc, o.page or c.page) for o in c.occurrences]
        out.append(CitationView(**c.model_dump(), links=links, occurrence_links=each))
    return out
