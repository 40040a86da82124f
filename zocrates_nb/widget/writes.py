"""The chat panel's other writes to Zotero: an answer saved as a note ("Save as note" on every
answer), its verified quotes as highlights in the PDFs ("Highlight in Zotero") and papers added
by identifier ("Add a paper by identifier" in the staging tray).

Like a save of the staging list, each writes only when the front end says the researcher
confirmed (`confirmed: true`, exactly the boolean), runs in a worker thread (the kernel's loop
stays free) and answers with one message saying what happened (PROTOCOL.md)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from zocrates_nb.app import describe_error
from zocrates_nb.errors import UsageError
from zocrates_nb.widget import protocol as p
from zocrates_nb.widget.records import save_message

if TYPE_CHECKING:
    from zocrates_nb.app import App

NOTE_TARGETS = ("connector", "web")
MAX_IDENTIFIERS = 20
UNCONFIRMED = "Nothing was saved: it writes to Zotero, so confirm it in the panel first."


class PanelWrites:
    """Handlers `ChatWidget` mixes in: `save_note`, `annotate` and `add_papers`."""

    app: App
    session_id: str
    send_message: Callable[[p.Outbound], None]
    _spawn: Callable[[Callable[[], Any]], asyncio.Task[None]]
    refresh_staged: Callable[[], None]
    _writes: asyncio.Task[None] | None = None

    def _busy_writing(self) -> None:
        if self._writes is not None and not self._writes.done():
            raise UsageError("a write to Zotero is still running: wait for its result")

    def _on_save_note(self, msg: p.SaveNote) -> None:
        """`save_note` → one `note_result`."""
        turn_id, to = msg.turn_id, msg.to
        refusal = ("This answer is not in a session." if not self.session_id or not turn_id
                   else f"Save a note to {' or '.join(NOTE_TARGETS)}." if to not in NOTE_TARGETS
                   else UNCONFIRMED if not msg.confirmed else "")  # fmt: skip
        if refusal:
            self.send_message(p.NoteResult(turn_id=turn_id, to=to, ok=False, message=refusal))
            return
        self._busy_writing()
        session_id = self.session_id

        async def save() -> None:
            try:
                result = await asyncio.to_thread(self.app.save_note, session_id, to=to,
                                                 turn_id=turn_id, confirmed=True)  # fmt: skip
                said = result.message or f"Saved the answer as {result.where}."
                done = p.NoteResult(turn_id=turn_id, to=to, ok=True, message=said)
            except Exception as e:  # nothing written: say so plainly
                said = describe_error(e, doing="Saving the note")
                done = p.NoteResult(turn_id=turn_id, to=to, ok=False, message=said)
            self.send_message(done)

        self._writes = self._spawn(save)

    def _on_annotate(self, msg: p.Annotate) -> None:
        """`annotate` → one `annotate_result`: a dry run for the confirm step, or the write."""
        turn_id, write = msg.turn_id, msg.confirmed
        if not self.session_id or not turn_id:
            self.send_message(p.AnnotateResult(turn_id=turn_id, ok=False,
                                               message="This answer is not in a session."))
            return
        if write:
            self._busy_writing()
        session_id = self.session_id

        async def run() -> None:
            try:
                r = await asyncio.to_thread(self.app.annotate, session_id, turn=turn_id,
                                            confirmed=write, dry_run=not write)  # fmt: skip
                done = p.AnnotateResult(
                    turn_id=turn_id, dry_run=r.dry_run, message=r.message,
                    ok=all(h.state in ("would write", "written", "already") for h in r.highlights),
                    highlights=[p.HighlightLine(title=h.title, page_label=h.page_label,
                                                quote=h.quote, state=h.state)
                                for h in r.highlights],
                    skipped=[p.SkippedLine(quote=s.quote, title=s.title, why=s.why)
                             for s in r.skipped])  # fmt: skip
            except Exception as e:  # nothing written: say so plainly
                done = p.AnnotateResult(turn_id=turn_id, ok=False, dry_run=not write,
                                        message=describe_error(e, doing="Highlighting"))
            self.send_message(done)

        task = self._spawn(run)
        if write:
            self._writes = task

    def _on_add_papers(self, msg: p.AddPapers) -> None:
        """`add_papers` (DOIs, arXiv ids, ISBNs) → one `save_result` (as a save of the staging
        list answers)."""
        to = msg.to
        ids = [i.strip()[:200] for i in msg.ids if isinstance(i, str) and i.strip()]
        refusal = ("Name a paper: a DOI, an arXiv id or an ISBN." if not ids
                   else f"Add at most {MAX_IDENTIFIERS} papers at a time."
                   if len(ids) > MAX_IDENTIFIERS
                   else UNCONFIRMED if not msg.confirmed else "")  # fmt: skip
        if refusal:
            self.send_message(p.SaveResult(ok=False, to=to, message=refusal))
            return
        self._busy_writing()

        async def add() -> None:
            try:
                result, found = await asyncio.to_thread(self.app.add, ids, to=to,
                                                        confirmed=True)  # fmt: skip
                reply = save_message(result, None, {c.id: c.title for c in found})
            except Exception as e:
                reply = p.SaveResult(ok=False, to=to, message=describe_error(e, doing="Adding"))
            self.send_message(reply)

        self._writes = self._spawn(add)
