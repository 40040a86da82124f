"""What the chat panel shows about the library, as the JSON of widgets/PROTOCOL.md.

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
from zocrates_nb.events import CheckpointEvent
from zocrates_nb.turn import Candidate, Citation, Discovery, Scope, TurnResult

if TYPE_CHECKING:
    from zocrates_nb.app import App
    from zocrates_nb.writeback import SaveResult

_STATUS = {"answered": "done", "checkpoint": "checkpoint", "error": "error",
           "cancelled": "stopped", "running": "running"}
_ZOTERO_KEY = re.compile(r"^[A-Z0-9]{8}$")
# RIS and BibTeX reach the browser as a download (never a file in the user's Zotero folder).
SAVE_FILES = {"ris": ("zocrates-staged.ris", "application/x-research-info-systems"),
              "bibtex": ("zocrates-staged.bib", "application/x-bibtex")}


def history_turn(turn: TurnResult, app: App | None = None) -> dict[str, Any]:
    """One stored turn as the front end's `history` entry (PROTOCOL.md)."""
    status = _STATUS[turn.status]
    checkpoint = CheckpointEvent.of(turn)
    if status == "checkpoint" and checkpoint is None:
        status = "stopped"  # paused, but its snapshot is gone: nothing to resume
    if status == "running":
        status = "stopped"  # not running here: the process that ran it is gone
    out: dict[str, Any] = {
        "turn_id": turn.turn_id,
        "prompt": turn.prompt,
        "answer": turn.answer,
        "status": status,
        "cited_sources": source_records(app, turn.cited_sources),
        "other_sources": source_records(app, turn.other_sources),
        "citations": citation_records(app, turn.citations),
        "steps": [s.model_dump(mode="json", exclude_none=True) for s in turn.steps],
        "checkpoint": (checkpoint.model_dump(mode="json") | {"papers": papers_covered(turn)}
                       if checkpoint else None),
        "scope": scope_record(app, turn.scope),
        # A narrower scope whose question another paper answers better: the "widen" button.
        "widen_scope": scope_record(app, turn.widen_scope) if turn.widen_scope else None,
        # A "find papers on X" turn: its candidate cards (null for every other turn).
        "discovery": discovery_record(turn.discovery),
    }
    if status == "error":
        out["error"] = turn.error or "This turn failed."
    if turn.model:
        out["model"] = turn.model
    if turn.seconds:
        out["seconds"] = turn.seconds
    return out


def papers_covered(turn: TurnResult, limit: int = 12) -> list[str]:
    """Titles of the papers a turn's search has gathered passages from, best first."""
    return list(dict.fromkeys(e.title for e in turn.evidence if e.title))[:limit]


def scope_record(app: App | None, scope: Scope) -> dict[str, Any]:
    """A turn's scope as the chips show it: `{mode, items: [{key, title}], collections: [{key,
    name}]}`, with titles and collection names looked up (the key when unknown)."""
    if scope.items:
        items = []
        for key in scope.items:
            record = _item(app, key)
            items.append({"key": key, "title": (record.title if record else "") or key,
                          "year": record.year if record else None})
        return {"mode": "items", "items": items, "collections": []}
    if scope.collections:
        names = _collection_names(app)
        return {"mode": "collections", "items": [],
                "collections": [{"key": c, "name": names.get(c, c)} for c in scope.collections]}
    return {"mode": "library", "items": [], "collections": []}


def source_records(app: App | None, sources: list[Any]) -> list[dict[str, Any]]:
    """Sources as JSON, each with `links` to Zotero (`zotero://select/…`, `zotero://open-pdf/…`)
    when the item comes from a Zotero library (folder and sample items get none), and `href`,
    an https link to the paper (its DOI, else its own page) that notebook cells keep."""
    out = []
    for source in sources:
        record = source.model_dump(mode="json") if hasattr(source, "model_dump") else dict(source)
        links = zotero_links(app, str(record.get("item_key", "")))
        if links:
            record["links"] = links
        if href := paper_href(app, str(record.get("item_key", ""))):
            record["href"] = href
        out.append(record)
    return out


def citation_records(app: App | None, citations: list[Citation]) -> list[dict[str, Any]]:
    """Citations as JSON; one whose passage is in a PDF of a Zotero library carries `links`:
    `select` (the paper) and `pdf` (`zotero://open-pdf/…?page=N`: the PDF at the cited page)."""
    out = []
    for c in citations:
        record = c.model_dump(mode="json")
        links = zotero_links(app, c.item_key)
        ref = cite_of(c)
        if links and _is_pdf(app, ref.doc_key):
            links["pdf"] = pdf_url(ref.doc_key, ref.page)
        if links:
            record["links"] = links
        out.append(record)
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
        doc = app.library_index.catalog.document(doc_key)
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
        pdfs = [d for d in app.library_index.documents(item_key) if d.kind == "pdf"]
    except Exception:
        pdfs = []
    if pdfs and _ZOTERO_KEY.match(pdfs[0].doc_key):
        links["pdf"] = f"zotero://open-pdf/library/items/{pdfs[0].doc_key}"
    return links


def candidate_record(candidate: Candidate) -> dict[str, Any]:
    """A candidate as its card shows it (the abstract stays in Python: `why` quotes it)."""
    return candidate.model_dump(mode="json", exclude={"abstract", "score"})


def discovery_record(discovery: Discovery | None) -> dict[str, Any] | None:
    """`{query, candidates: [candidate], errors: [str]}`, or None for a turn that is not one."""
    if discovery is None:
        return None
    return {"query": discovery.query,
            "candidates": [candidate_record(c) for c in discovery.candidates],
            "errors": list(discovery.errors)}  # fmt: skip


def save_message(result: SaveResult, text: str | None, titles: dict[str, str]) -> dict[str, Any]:
    """The `save_result` message: what was saved where, each failure with its plain reason and
    the paper's title, and for RIS/BibTeX the file's text for the browser to download."""
    out: dict[str, Any] = {
        "kind": "save_result",
        "ok": True,
        "to": result.to,
        "saved": list(result.saved),
        "failed": [{"id": i, "title": titles.get(i, i), "reason": why}
                   for i, why in {**result.failed, **result.held}.items()],
        # Not saved yet (an answer lost, a rate limit): saving again sends them, never twice.
        "pending": [{"id": i, "title": titles.get(i, i)} for i in result.pending],
        "message": result.message,
        "where": result.where,
        "attached": len(result.attached),
        "unattached": [{"id": i, "title": titles.get(i, i), "reason": why}
                       for i, why in result.unattached.items()],
    }
    if result.to == "web" and result.where:
        out["where"] = f"your Zotero web library ({result.where})"
    if text is not None and result.to in SAVE_FILES:
        name, mime = SAVE_FILES[result.to]
        out["file"] = {"name": name, "mime": mime, "text": text}
        out["where"] = f"{name}, downloaded by your browser"
    return out


def library_summary(app: App) -> dict[str, Any]:
    """The empty screen's line and examples: `{items, collections, examples: [str] | None}`;
    `examples` is None until the library's topics are drawn (`fill_examples`)."""
    index = app.library_index
    items = [i for i in index.items() if i.item_type not in ("note", "attachment")] \
        or index.items()
    return {"items": len(items), "collections": len(index.collection_paths()),
            "examples": app.example_questions(cached=True)}


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
        return app.library_index.item(key)
    except Exception:  # an index that cannot be read names nothing; the turn still shows
        return None


def _collection_names(app: App | None) -> dict[str, str]:
    if app is None:
        return {}
    try:
        return app.library_index.collection_paths()
    except Exception:
        return {}


__all__ = ["candidate_record", "citation_records", "discovery_record", "fill_examples",
           "history_turn", "library_summary", "papers_covered", "save_message", "scope_record",
           "source_records", "zotero_links"]
