"""What the chat panel shows of a turn and of the library: `TurnView`s with links and names.

The panel's front end holds no library logic: Python names a turn's scope (titles and collection
names, not keys), links a source to Zotero (only for items that come from Zotero), and describes
the library for the empty screen (its size, and example questions drawn from its own topics by
`App.example_questions`). Nothing here writes to the index. Papers found beyond the library
(`discovery`) travel as candidate records; a save's outcome as a `save_result` message.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import TYPE_CHECKING, Any

from zocrates_nb.citelinks import doi_url, pdf_url
from zocrates_nb.citelinks import of as cite_of
from zocrates_nb.turn import (
    Candidate,
    Citation,
    CitationView,
    Scope,
    ScopeChips,
    Source,
    SourceView,
    TurnResult,
    TurnView,
)
from zocrates_nb.widget import protocol as p

if TYPE_CHECKING:
    from zocrates_nb.app import App, SaveResult

_ZOTERO_KEY = re.compile(r"^[A-Z0-9]{8}$")
# RIS and BibTeX reach the browser as a download (never a file in the user's Zotero folder).
SAVE_FILES = {
    "ris": ("zocrates-staged.ris", "application/x-research-info-systems"),
    "bibtex": ("zocrates-staged.bib", "application/x-bibtex"),
}


def turn_view(app: App | None, turn: TurnResult, **changes: Any) -> TurnView:
    """A turn as the panel shows it: sources and citations with their links, the scope's chips
    named, a checkpoint card with the papers covered so far (`TurnView`, PROTOCOL.md)."""
    view = TurnView.of(
        turn,
        cited_sources=source_records(app, turn.cited_sources),
        other_sources=source_records(app, turn.other_sources),
        elsewhere=source_records(app, turn.elsewhere),
        citations=citation_records(app, turn.citations),
        chips=scope_record(app, turn.scope),
        widen_chips=scope_record(app, turn.widen_scope) if turn.widen_scope else None,
        **changes,
    )
    if view.checkpoint is not None:
        view.checkpoint.papers = papers_covered(turn)
    if view.status == "error" and not view.error:
        view.error = "This turn failed."
    return view


def panel_json(view: TurnView) -> dict[str, Any]:
    """A view as the comm carries it: the evidence rows (the passages' full text) stay in
    Python, as do the candidates' abstracts (`why` quotes them)."""
    exclude: dict[str, Any] = {"evidence": True}
    if view.discovery is not None:
        exclude["discovery"] = {"candidates": {"__all__": {"abstract", "score"}}}
    return view.model_dump(mode="json", exclude=exclude)


def history_turn(turn: TurnResult, app: App | None = None) -> dict[str, Any]:
    """One stored turn as the front end's `history` entry: a turn still `running` in the
    record is not running here (the process that ran it is gone), so it shows as cancelled."""
    view = turn_view(app, turn)
    if view.status == "running":
        view.status = "cancelled"
    return panel_json(view)


def papers_covered(turn: TurnResult, limit: int = 12) -> list[str]:
    """Titles of the papers a turn's search has gathered passages from, best first."""
    return list(dict.fromkeys(e.title for e in turn.evidence if e.title))[:limit]


def scope_record(app: App | None, scope: Scope) -> ScopeChips:
    """A scope's chips with titles and collection names looked up (the key when unknown)."""
    chips = ScopeChips.of(scope)
    for item in chips.items:
        record = _item(app, item.key)
        item.title = (record.title if record else "") or item.key
        item.year = record.year if record else None
    if chips.collections:
        names = _collection_names(app)
        for c in chips.collections:
            c.name = names.get(c.key, c.key)
    return chips


def source_records(app: App | None, sources: list[Source]) -> list[SourceView]:
    """Sources with `links` to Zotero (`zotero://select/…`, `zotero://open-pdf/…`) when the item
    comes from a Zotero library (folder and sample items get none), and `href`, an https link
    to the paper (its DOI, else its own page) that notebook cells keep."""
    return [SourceView(**s.model_dump(), links=zotero_links(app, s.item_key),
                       href=paper_href(app, s.item_key)) for s in sources]  # fmt: skip


def citation_records(app: App | None, citations: list[Citation]) -> list[CitationView]:
    """Citations; one whose passage is in a PDF of a Zotero library carries `links`: `select`
    (the paper) and `pdf` (`zotero://open-pdf/…?page=N`: the PDF at the cited page)."""
    out = []
    for c in citations:
        links = zotero_links(app, c.item_key)
        ref = cite_of(c)
        if links and _is_pdf(app, ref.doc_key):
            links["pdf"] = pdf_url(ref.doc_key, ref.page)
        out.append(CitationView(**c.model_dump(), links=links))
    return out


def paper_href(app: App | None, item_key: str) -> str:
    record = _item(app, item_key)
    if record is None:
        return ""
    url = str(getattr(record, "url", "") or "")
    return doi_url(getattr(record, "doi", "") or "") or (
        url if url.startswith(("https://", "http://")) else "")  # fmt: skip


def _is_pdf(app: App | None, doc_key: str) -> bool:
    if app is None:
        return False
    try:
        doc = app.document(doc_key)
    except Exception:
        return False
    return doc is not None and doc.kind == "pdf" and bool(_ZOTERO_KEY.match(doc_key))


def zotero_links(app: App | None, item_key: str) -> dict[str, str]:
    """`{select, pdf?}` zotero:// URLs for an item of a Zotero library, else `{}`."""
    record = _item(app, item_key)
    if app is None or record is None or not _ZOTERO_KEY.match(item_key):
        return {}
    if not record.version.startswith("v"):  # Zotero's change marker; folder items have none
        return {}
    links = {"select": f"zotero://select/library/items/{item_key}"}
    try:
        pdfs = [d for d in app.documents(item_key) if d.kind == "pdf"]
    except Exception:
        pdfs = []
    if pdfs and _ZOTERO_KEY.match(pdfs[0].doc_key):
        links["pdf"] = f"zotero://open-pdf/library/items/{pdfs[0].doc_key}"
    return links


def candidate_record(candidate: Candidate) -> dict[str, Any]:
    """A candidate as its card shows it (the abstract stays in Python: `why` quotes it)."""
    return candidate.model_dump(mode="json", exclude={"abstract", "score"})


def save_message(result: SaveResult, text: str | None, titles: dict[str, str]) -> p.SaveResult:
    """The `save_result` message: what was saved where, each failure with its plain reason and
    the paper's title, and for RIS/BibTeX the file's text for the browser to download."""

    def paper(i: str, reason: str = "") -> p.Unsaved:
        return p.Unsaved(id=i, title=titles.get(i) or result.titles.get(i) or i, reason=reason)

    where, file = result.where, None
    if result.to == "web" and result.where:
        where = f"your Zotero web library ({result.where})"
    if text is not None and result.to in SAVE_FILES:
        name, mime = SAVE_FILES[result.to]
        file = p.SaveFile(name=name, mime=mime, text=text)
        where = f"{name}, downloaded by your browser"
    return p.SaveResult(
        ok=True,
        to=result.to,
        saved=list(result.saved),
        failed=[paper(i, why) for i, why in {**result.failed, **result.held}.items()],
        # Not saved yet (an answer lost, a rate limit): saving again sends them, never twice.
        pending=[paper(i) for i in result.pending],
        message=result.message,
        where=where,
        attached=len(result.attached),
        unattached=[paper(i, why) for i, why in result.unattached.items()],
        **({"file": file} if file is not None else {}),
    )


def library_summary(app: App) -> dict[str, Any]:
    """The empty screen's line and examples: `{items, collections, examples: [str] | None}`;
    `examples` is None until the library's topics are drawn (`fill_examples`)."""
    every = app.items()
    items = [i for i in every if i.item_type not in ("note", "attachment")] or every
    return {
        "items": len(items),
        "collections": len(app.collections()),
        "examples": app.example_questions(cached=True),
        **retracted_summary(app, refresh=False),
    }


def retracted_summary(app: App, *, refresh: bool | None = None) -> dict[str, Any]:
    """The header's retracted papers: `{retracted: [{item_key, title, notice}], retractions:
    the check's line}` (`refresh=False`: the last check only, nothing sent)."""
    found = app.retractions(refresh=refresh)
    return {"retracted": [{"item_key": r.item_key, "title": r.title, "notice": r.notice}
                          for r in found.papers],
            "retractions": found.message}  # fmt: skip


async def fill_retractions(app: App, panel: Any) -> None:
    """Check the library's DOIs in a worker thread when online search is on and the last check
    is due, then update the header. A failure leaves the header as it is."""
    with contextlib.suppress(Exception):
        found = await asyncio.to_thread(retracted_summary, app)
        panel.library = {**panel.library, **found}


async def fill_examples(app: App, panel: Any) -> None:
    """Unless cached, draw the example questions in a worker thread (the panel shows without
    them first), then set them on the panel's `library`. A failure leaves the screen as it is."""
    if panel.library.get("examples") is not None:
        return
    with contextlib.suppress(Exception):
        examples = await asyncio.to_thread(app.example_questions)
        panel.library = {**panel.library, "examples": examples}


def _item(app: App | None, key: str) -> Any:
    if app is None or not key:
        return None
    try:
        return app.item(key)
    except Exception:  # an index that cannot be read names nothing; the turn still shows
        return None


def _collection_names(app: App | None) -> dict[str, str]:
    if app is None:
        return {}
    try:
        return app.collections()
    except Exception:
        return {}


__all__ = [
    "candidate_record",
    "citation_records",
    "fill_examples",
    "history_turn",
    "library_summary",
    "panel_json",
    "papers_covered",
    "save_message",
    "scope_record",
    "source_records",
    "turn_view",
    "zotero_links",
]
