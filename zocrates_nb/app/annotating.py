"""Highlights in the user's PDFs as an `App` operation: a turn's verified quotes written as
Zotero highlight annotations through the Web API, after the caller confirms (`confirmed=True`),
or shown without writing (`dry_run`). What the highlights are and how they stay single is
`writeback/annotations.py`; here the turn is chosen and its documents looked up in the index."""

from __future__ import annotations

from typing import TYPE_CHECKING

from zocrates_nb.errors import UsageError, ZocratesError
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.turn import TurnResult
from zocrates_nb.writeback.annotations import AnnotateResult, Attachment, write_highlights

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore


def pick_turn(app: AppCore, session_id: str, turn: str | int | None) -> TurnResult:
    """The session's turn by number (1, 2, …) or id; by default its last answered turn."""
    turns = app.history(session_id)
    if turn is None:
        answered = [t for t in turns if t.status == "answered"]
        if not answered:
            raise UsageError(f"session {session_id} has no answer yet")
        return answered[-1]
    if isinstance(turn, int) or str(turn).strip().isdigit():
        n = int(turn)
        found = [t for t in turns if t.index == n]
        if not found:
            raise UsageError(f"session {session_id} has no turn {n} (it has {len(turns)})")
        return found[0]
    return app.turn(str(turn), session_id=session_id)


def attachments(app: AppCore, key: str) -> Attachment | None:
    """A cited document as the index knows it: its kind, file and whether Zotero holds it (an
    item of a Zotero library carries Zotero's version marker; a folder's files do not)."""
    try:
        index = app.library_index
        doc = index.catalog.document(key)
        if doc is None:
            return None
        parent = index.item(doc.item_key)
        zotero = doc.version.startswith("v") and (parent is None or parent.version.startswith("v"))
        return Attachment(doc.doc_key, doc.kind, doc.file, zotero)
    except ZocratesError:
        return None


def annotate(app: AppCore, session_id: str, *, turn: str | int | None = None, to: str = "web",
             confirmed: bool = False, dry_run: bool = False) -> AnnotateResult:  # fmt: skip
    if to != "web":
        raise UsageError("highlights are written through the Web API (--to web): the Zotero "
                         "app's connector cannot reach the PDFs already in Zotero")  # fmt: skip
    record = pick_turn(app, session_id, turn)
    if not dry_run and not confirmed:
        raise UsageError("highlighting writes to your Zotero library: confirm it first (--yes), "
                         "or see what would be written (--dry-run)")  # fmt: skip
    return write_highlights(record, lambda key: attachments(app, key), app.settings.zotero.web,
                            ledger=WriteLedger(app.store), dry_run=dry_run)  # fmt: skip
