"""Adding papers by identifier (a DOI, an arXiv id, an ISBN) as `App` operations: each is
looked up in the scholarly sources that register it (Crossref, arXiv, Semantic Scholar,
OpenAlex; Open Library for books), only while `online.enabled` is on, then saved to Zotero
like a staged paper (the ledger, the collection and tags asked for, nothing Zotero already
holds written again)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from zocrates_nb.errors import UsageError
from zocrates_nb.online import Candidate, OnlineDisabled, discover
from zocrates_nb.online.sources import identifier, not_an_identifier
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import SaveResult

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

MAX_IDENTIFIERS = 50
ADD_TARGETS = ("connector", "web")


def lookup(app: AppCore, identifiers: Sequence[str]) -> tuple[list[Candidate], dict[str, str]]:
    """The paper each identifier names, and (identifier → why) those not found."""
    if not app.settings.online.enabled:
        raise OnlineDisabled()
    idents = list(dict.fromkeys(i.strip() for i in identifiers if i and i.strip()))
    if not idents:
        raise UsageError("name a paper to add: a DOI, an arXiv id or an ISBN")
    if len(idents) > MAX_IDENTIFIERS:
        raise UsageError(f"add at most {MAX_IDENTIFIERS} papers at a time")
    found: list[Candidate] = []
    unknown: dict[str, str] = {}
    for ident in idents:
        if identifier(ident) is None:
            unknown[ident[:80]] = not_an_identifier(ident)
            continue
        run = discover(app.settings.online, ident, limit=1)
        paper = next(iter(run.candidates), None)
        if paper is None:
            why = "; ".join(run.errors) or "no scholarly source knows it"
            unknown[ident] = why
        elif all(paper.id != c.id for c in found):
            found.append(paper)
    return found, unknown


def add(app: AppCore, identifiers: Sequence[str], *, to: str = "connector", confirmed: bool,
        collection: str | None = None, tags: Sequence[str] | None = None,
        lost: str | None = None) -> tuple[SaveResult, list[Candidate]]:  # fmt: skip
    """Look the identifiers up and save the papers to Zotero (after `confirmed`): the result
    (an identifier not found is a failure keyed by itself) and the papers found."""
    from zocrates_nb.app.writes import save_papers

    if to not in ADD_TARGETS:
        raise UsageError(f"add to {' or '.join(ADD_TARGETS)}, not {to!r}")
    if not confirmed:
        raise UsageError("adding writes to Zotero: confirm it first (--yes)")
    found, unknown = lookup(app, identifiers)
    result = save_papers(app, to, found, WriteLedger(app.store), collection=collection,
                         tags=tags, lost=lost)  # fmt: skip
    result.failed.update({i: f"not added: {why}" for i, why in unknown.items()})
    return result, found
