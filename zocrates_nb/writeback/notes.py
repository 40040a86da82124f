"""An answer saved as a Zotero note: the question, the answer (Markdown rendered with raw HTML
escaped) and its cited sources. A child note of the cited item when exactly one paper is cited
and the Web API can reach it; otherwise a standalone note (in `collection` when given)."""

from __future__ import annotations

import html
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx
from markdown_it import MarkdownIt

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.turn import TurnResult
from zocrates_nb.writeback.connector import post, selected_target
from zocrates_nb.writeback.result import SaveResult, WriteError
from zocrates_nb.writeback.web import create, web_client

ANSWER_TAG = "zocrates:answer"
_MD = MarkdownIt("commonmark", {"html": False})  # paper/model text never becomes markup


def answer_note_html(turn: TurnResult) -> str:
    """The note's HTML: question as heading, answer, numbered sources with their item keys."""
    if turn.status != "answered" or not turn.answer.strip():
        raise WriteError(f"turn {turn.turn_id} has no answer to save")
    parts = [f"<h1>{html.escape(turn.prompt)}</h1>", _MD.render(turn.answer).strip()]
    cited = sorted(turn.cited_sources, key=lambda s: (s.n is None, s.n or 0))
    if cited:
        rows = []
        for s in cited:
            who = ", ".join(s.authors[:3]) + (" et al." if len(s.authors) > 3 else "")
            label = f"[{s.n}] " if s.n is not None else ""
            year = f" ({s.year})" if s.year else ""
            link = f"zotero://select/library/items/{html.escape(s.item_key)}"
            rows.append(f'<li>{label}{html.escape(who)}{year}. <a href="{link}">'
                        f"{html.escape(s.title)}</a></li>")  # fmt: skip
        parts.append("<h2>Sources</h2>\n<ul>\n" + "\n".join(rows) + "\n</ul>")
    parts.append(f"<p><em>Saved from zocrates-nb, session {html.escape(turn.session_id)}, "
                 f"turn {turn.index}.</em></p>")  # fmt: skip
    return "\n".join(parts)


def note_item(turn: TurnResult) -> dict[str, Any]:
    return {"itemType": "note", "note": answer_note_html(turn), "tags": [{"tag": ANSWER_TAG}]}


def save_note_to_connector(turn: TurnResult, url: str, *, timeout: float = 30.0,
                           transport: httpx.BaseTransport | None = None) -> SaveResult:  # fmt: skip
    """A standalone note in Zotero's selected collection (the connector cannot reach existing
    items, so it is never a child note on this path)."""
    item = {"id": f"note-{turn.turn_id}", **note_item(turn)}
    with httpx.Client(timeout=timeout, transport=transport) as client:
        target = selected_target(client, url)
        if not target.editable:
            raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
        body = {"sessionID": f"zocrates-{uuid.uuid4().hex[:12]}", "items": [item]}
        r = post(client, url, "/connector/saveItems", body)
    if r.status_code != 201:
        raise WriteError(f"Zotero did not save the note (HTTP {r.status_code}); nothing was saved")
    return SaveResult(to="connector", saved=[turn.turn_id],
                      where=f"a standalone note in {target.describe()}")  # fmt: skip


def save_note_to_web(turn: TurnResult, web: ZoteroWebSettings, *, collection: str | None = None,
                     environ: dict[str, str] | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> SaveResult:  # fmt: skip
    """A child note of the one cited item, else a standalone note (in `collection`)."""
    item = note_item(turn)
    cited = {s.item_key for s in turn.cited_sources}
    if len(cited) == 1:
        item["parentItem"] = next(iter(cited))
        where = f"a child note of item {item['parentItem']}"
    else:
        if collection:
            item["collections"] = [collection]
        where = "a standalone note" + (f" in collection {collection}" if collection else "")
    zot = web_client(web, environ=environ)
    report = create(zot, [item], sleep=sleep)
    key = (report.get("success") or {}).get("0")
    if not key:
        fail = (report.get("failed") or {}).get("0") or {}
        raise WriteError(f"Zotero did not save the note: {fail.get('message') or 'not saved'}")
    return SaveResult(to="web", saved=[turn.turn_id], keys={turn.turn_id: key}, where=where)
