"""Retracted papers in the library as `App` operations: the check of the library's DOIs (made
when online search is on and the last one is due, cached in the data home with its date), the
papers it flags for `status`, `doctor` and the panel's header, and an answer's sources marked
when they cite one. Offline nothing is sent: the last check is shown with its date."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from zocrates_nb.errors import ZocratesError
from zocrates_nb.online.notices import RetractedPaper, RetractionStatus
from zocrates_nb.turn import Source, TurnResult

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore
    from zocrates_nb.online.retractions import RetractionCheck


def library_dois(app: AppCore) -> dict[str, tuple[str, str]]:
    """DOI (lower case) → (item key, title) of the library's papers."""
    from zocrates_nb.online.retractions import normal_dois

    out: dict[str, tuple[str, str]] = {}
    for item in app.library_index.items():
        for doi in normal_dois([item.doi]):
            out.setdefault(doi, (item.key, item.title))
    return out


def retraction_check(app: AppCore, *, refresh: bool | None = None) -> RetractionCheck:
    """The last check, made again first when online search is on and it is due (`refresh`
    True: always; False: never). A check with a failed source keeps the notices found before."""
    from zocrates_nb.online.retractions import check, load, save

    cached = load(app.home)
    online = app.settings.online
    if refresh is False or not online.enabled:
        return cached
    dois = list(library_dois(app))
    if not (refresh or cached.due(dois)):
        return cached
    fresh = check(dois, online)
    if fresh.errors:
        for doi, notice in cached.notices.items():
            fresh.notices.setdefault(doi, notice)
    save(app.home, fresh)
    return fresh


def retraction_status(app: AppCore, *, refresh: bool | None = None) -> RetractionStatus:
    try:
        papers = library_dois(app)
        found = retraction_check(app, refresh=refresh)
    except (ZocratesError, OSError) as e:
        return RetractionStatus(message=f"Retractions could not be checked: {str(e)[:200]}")
    flagged = [RetractedPaper(item_key=key, title=title, doi=doi, retracted=n.retracted,
                              notice=n.sentence())
               for doi, (key, title) in sorted(papers.items(), key=lambda kv: kv[1][1])
               if (n := found.notice(doi))]  # fmt: skip
    status = RetractionStatus(checked=found.checked.date().isoformat() if found.checked else None,
                              dois=len(papers), papers=flagged, errors=found.errors)  # fmt: skip
    status.message = status.describe(app.settings.online.enabled)
    return status


def mark(app: AppCore, record: TurnResult) -> TurnResult:
    """The record with each source of a flagged paper marked, and the answer saying which of
    its cited papers were retracted (from the last check; nothing is sent here)."""
    from zocrates_nb.online.retractions import load

    try:
        found = load(app.home)
        if not found.notices:
            return record
        index = app.library_index
    except (ZocratesError, OSError):
        return record

    def flagged(s: Source) -> Source:
        item = index.item(s.item_key)
        notice = found.notice(item.doi if item is not None else None)
        if notice is None:
            return s
        return s.model_copy(update={"retracted": notice.retracted, "notice": notice.sentence()})

    cited = [flagged(s) for s in record.cited_sources]
    other = [flagged(s) for s in record.other_sources]
    lines = [f"- [{s.n}] *{_plain(s.title)}*: {s.notice}." for s in cited if s.notice]
    answer = record.answer
    if lines and record.answer.strip():
        answer = answer.rstrip() + "\n\n**Note on the cited papers**\n\n" + "\n".join(lines)
    return record.model_copy(update={"cited_sources": cited, "other_sources": other,
                                     "answer": answer})  # fmt: skip


def _plain(title: str) -> str:
    """A title as plain words inside the answer's Markdown (no emphasis, links or tags)."""
    return " ".join(re.sub(r"[*_`\[\]<>#|]", " ", title).split())
