"""What the chat panel shows of a turn and of the library: the App's `TurnView`s, the library.

The panel's front end holds no library logic: a turn is the App's one view of it (`App.view`:
its scope's chips named, its sources and citations linked), and Python describes
the library for the empty screen (its size, and example questions drawn from its own topics by
`App.example_questions`). Nothing here writes to the index. Papers found beyond the library
(`discovery`) travel as candidate records; a save's outcome as a `save_result` message.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

from zocrates_nb.turn import Candidate, TurnResult, TurnView
from zocrates_nb.widget import protocol as p

if TYPE_CHECKING:
    from zocrates_nb.app import App, SaveResult

# RIS and BibTeX reach the browser as a download (never a file in the user's Zotero folder).
SAVE_FILES = {
    "ris": ("zocrates-staged.ris", "application/x-research-info-systems"),
    "bibtex": ("zocrates-staged.bib", "application/x-bibtex"),
}


def turn_view(app: App | None, turn: TurnResult, **changes: Any) -> TurnView:
    """A turn as the panel shows it: the App's one view of it (`App.view`), or without an App
    the same view without the library's names and links."""
    if app is None:
        from zocrates_nb.app import turn_view as unlinked

        return unlinked(None, turn, **changes)
    return app.view(turn, **changes)


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


__all__ = [
    "candidate_record",
    "fill_examples",
    "history_turn",
    "library_summary",
    "panel_json",
    "save_message",
    "turn_view",
]
