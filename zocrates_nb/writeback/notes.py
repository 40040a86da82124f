"""An answer saved as a Zotero note: the question, the answer (Markdown rendered with raw HTML
escaped, each in-text `[n]` linked to its paper in Zotero) and its cited sources with the pages
of the sentences they support (each opening the PDF at that page). A child note of the cited
item when exactly one paper is cited and the Web API can reach it; otherwise a standalone note
(in `collection` when given). Through the Web API the note is one ledger batch: saving the same
answer again (a retry, a second click) never makes a second note."""

from __future__ import annotations

import html
import re
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from markdown_it import MarkdownIt

from zocrates_nb.citelinks import CitedPage, cited_pages
from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.library.paths import pdf_url, select_url
from zocrates_nb.turn import TurnResult
from zocrates_nb.writeback.connector import Session, selected_target
from zocrates_nb.writeback.ledger import CONNECTOR, BatchItem, Ledger
from zocrates_nb.writeback.result import SaveResult, WriteError
from zocrates_nb.writeback.web import WebLibrary, write_batches

ANSWER_TAG = "zocrates:answer"
# Paper/model text never becomes markup; Markdown tables become HTML tables.
_MD = MarkdownIt("commonmark", {"html": False}).enable("table")
_MARKER = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_SKIP = re.compile(r"(<(code|pre)\b.*?</\2>|<[^>]+>)", re.S)
# Which cited items and attachments exist in Zotero (a folder library's keys open nothing);
# None: trust the key's shape.
Known = Callable[[str], bool]


def answer_note_html(turn: TurnResult, *, in_zotero: Known | None = None,
                     library: str = "library") -> str:  # fmt: skip
    """The note's HTML: question as heading, the answer with linked `[n]`, numbered sources
    with their pages and links into `library` (the one the note is saved to: "library" or
    "groups/<id>")."""
    if turn.status != "answered" or not turn.answer.strip():
        raise WriteError(f"turn {turn.turn_id} has no answer to save")
    known = in_zotero or (lambda key: bool(select_url(key)))
    pages = cited_pages(turn)
    body = _link_markers(_MD.render(turn.answer).strip(), pages, known, library)
    parts = [f"<h1>{html.escape(turn.prompt)}</h1>", body]
    cited = sorted(turn.cited_sources, key=lambda s: (s.n is None, s.n or 0))
    if cited:
        rows = []
        for s in cited:
            who = ", ".join(s.authors[:3]) + (" et al." if len(s.authors) > 3 else "")
            label = f"[{s.n}] " if s.n is not None else ""
            year = f" ({s.year})" if s.year else ""
            title = html.escape(s.title)
            if known(s.item_key) and (url := select_url(s.item_key, library)):
                title = f'<a href="{url}">{title}</a>'
            refs = [r for n in (s.numbers or ([s.n] if s.n else [])) for r in pages.get(n, [])]
            rows.append(f"<li>{label}{html.escape(who)}{year}. {title}"
                        f"{_pages(refs, known, library)}</li>")  # fmt: skip
        parts.append("<h2>Sources</h2>\n<ul>\n" + "\n".join(rows) + "\n</ul>")
    parts.append(f"<p><em>Saved from zocrates-nb, session {html.escape(turn.session_id)}, "
                 f"turn {turn.index}.</em></p>")  # fmt: skip
    return "\n".join(parts)


def _pages(refs: list[CitedPage], known: Known, library: str) -> str:
    """', p. 4' / ', pp. 4, 7': the pages the passages are on, each opening the PDF there."""
    docs: dict[int, str] = {}
    for r in refs:
        if r.page and r.page not in docs:
            docs[r.page] = r.doc_key
    parts = []
    for page in sorted(docs):
        url = pdf_url(docs[page], page, library) if known(docs[page]) else ""
        parts.append(f'<a href="{url}">{page}</a>' if url else str(page))
    if not parts:
        return ""
    return (", p. " if len(parts) == 1 else ", pp. ") + ", ".join(parts)


def _link_markers(rendered: str, pages: dict[int, list[CitedPage]], known: Known,
                  library: str) -> str:  # fmt: skip
    """Each `[n]` of the rendered answer linked to its paper (outside code and tags)."""

    def one(n: int) -> str:
        refs = pages.get(n) or []
        url = select_url(refs[0].item_key, library) if refs and known(refs[0].item_key) else ""
        return f'<a href="{url}">{n}</a>' if url else str(n)

    def marker(m: re.Match[str]) -> str:
        numbers = [int(x) for x in re.split(r"\s*[,;]\s*", m.group(1))]
        if not any(n in pages for n in numbers):
            return m.group(0)
        return "[" + ", ".join(one(n) for n in numbers) + "]"

    out = []
    for n, piece in enumerate(_SKIP.split(rendered)):
        if piece is None or n % 3 == 2:  # the split's inner group (code|pre)
            continue
        out.append(piece if n % 3 == 1 else _MARKER.sub(marker, piece))
    return "".join(out)


def note_item(turn: TurnResult, *, in_zotero: Known | None = None,
              library: str = "library") -> dict[str, Any]:  # fmt: skip
    return {"itemType": "note", "note": answer_note_html(turn, in_zotero=in_zotero,
                                                         library=library),
            "tags": [{"tag": ANSWER_TAG}]}  # fmt: skip


def save_note_to_connector(turn: TurnResult, url: str, *, ledger: Ledger,
                           timeout: float = 30.0, transport: httpx.BaseTransport | None = None,
                           in_zotero: Known | None = None) -> SaveResult:  # fmt: skip
    """A standalone note in Zotero's selected collection (the connector cannot reach existing
    items, so it is never a child note on this path), as one ledger-kept connector session: a
    lost answer is sent again under the same session, a second save makes no second note."""
    entry = BatchItem(f"note:{turn.turn_id}", {"id": f"note-{turn.turn_id}",
                                               **note_item(turn, in_zotero=in_zotero)},
                      [f"note:{turn.turn_id}"], turn.prompt)  # fmt: skip
    if ledger.written(CONNECTOR, entry.candidate_id) is not None:
        return SaveResult(to="connector", held={turn.turn_id: "already saved as a note through "
                                                "the Zotero app"},
                          message="This answer was already saved as a note through the Zotero "
                                  "app; it was not saved again.")  # fmt: skip
    with ledger.lease(CONNECTOR), httpx.Client(timeout=timeout, transport=transport) as client:
        target = selected_target(client, url, others="web: your Zotero web library")
        if not target.editable:
            raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
        session = Session(client, url, ledger, SaveResult(to="connector"), time.time)
        for batch in ledger.pending(CONNECTOR):
            if any(i.candidate_id == entry.candidate_id for i in batch.items):
                session.send(batch)  # this note's earlier, unanswered session: same sessionID
        if entry.candidate_id not in session.result.saved:
            opened = ledger.open_batch(CONNECTOR, f"zocrates-{uuid.uuid4().hex[:12]}", [entry])
            if opened is not None:
                session.send(opened)
    if entry.candidate_id not in session.result.saved:
        raise WriteError(session.result.message or "Zotero did not save the note")
    return SaveResult(to="connector", saved=[turn.turn_id],
                      where=f"a standalone note in {target.describe()}")  # fmt: skip


def save_note_to_web(turn: TurnResult, web: ZoteroWebSettings, *, ledger: Ledger,
                     collection: str | None = None, environ: dict[str, str] | None = None,
                     in_zotero: Known | None = None, standalone: bool = False,
                     sleep: Callable[[float], None] = time.sleep) -> SaveResult:  # fmt: skip
    """A child note of the one cited item when the target library holds it, else (asked
    for with `standalone`) a standalone note (in `collection`); written once per library."""
    library = WebLibrary(web, environ=environ)
    scope = f"groups/{web.library_id}" if web.library_type == "group" else "library"
    item = note_item(turn, in_zotero=in_zotero, library=scope)
    cited = {s.item_key: s.title for s in turn.cited_sources}
    if len(cited) == 1 and not standalone:
        key, title = next(iter(cited.items()))
        if not library.has(key):
            raise WriteError(
                f"The paper this answer cites, '{title}' ({key}), is not in "
                f"{library.describe()}, so the note cannot be attached to it. Save the note "
                "standalone (--standalone), or add the paper to that library first "
                "(zocrates-nb add DOI --to web) and save the note again."
            )
        item["parentItem"] = key
        where = f"a child note of '{title}' ({key}) in {library.describe()}"
    else:
        if collection:
            item["collections"] = [collection]
        where = ("a standalone note" + (f" in collection {collection}" if collection else "")
                 + f" in {library.describe()}")  # fmt: skip
    entry = BatchItem(f"note:{turn.turn_id}", item, [f"note:{turn.turn_id}"], turn.prompt)
    previous = ledger.written(library.target, entry.candidate_id)
    if previous is not None:
        return SaveResult(to="web", where=where, held={turn.turn_id: f"already saved as note "
                                                       f"{previous.item_key}"},
                          keys={turn.turn_id: previous.item_key},
                          message=f"This answer was already saved as note "
                                  f"{previous.item_key} in {library.describe()}; it was not "
                                  "saved again.")  # fmt: skip
    result = write_batches(library, ledger, [entry], sleep=sleep)
    new_key = result.keys.get(entry.candidate_id)
    if not new_key:
        failed = result.failed.get(entry.candidate_id)
        raise WriteError(f"Zotero did not save the note: {failed or result.message or 'not saved'}")
    return SaveResult(to="web", saved=[turn.turn_id], keys={turn.turn_id: new_key}, where=where)
