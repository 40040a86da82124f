"""Discovery and staging as `App` operations: find papers beyond the library (marking what it
already holds), remember them, stage them, and save the staging list to Zotero or a file.

A staging list belongs to a session when one is given, else to the data home (the CLI's
default), so `discover` and `stage add ID` meet across processes. Saving writes only after the
caller passes `confirmed=True` (the CLI's `--yes` or its prompt, the panel's button).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from zocrates_nb.errors import ZocratesError
from zocrates_nb.online import Candidate, Discovery, OnlineDisabled, discover
from zocrates_nb.online.discover import LibraryMatch
from zocrates_nb.sessions.staging import HOME_LIST, Staging

if TYPE_CHECKING:
    from zocrates_nb.app.facade import App

_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^\s?#]+?)(?:\.pdf)?$", re.IGNORECASE)


def library_match(app: App) -> LibraryMatch:
    """The indexed library's papers by DOI, arXiv id (from an arxiv.org URL) and title."""
    rows = []
    for item in app.library_index.items():
        if item.item_type in ("note", "attachment"):
            continue
        m = _ARXIV_URL.search(item.url or "")
        rows.append((item.key, item.title, item.doi or None, m.group(1) if m else None))
    return LibraryMatch.of(rows)


def embedding_similarity(app: App, query: str, texts: list[str]) -> list[float]:
    """Cosine of the query to each text with the library's (bundled, offline) embedding model."""
    embedder = app.library_index.embedder
    q = embedder.embed_query(query)
    return [sum(a * b for a, b in zip(q, v, strict=True)) for v in embedder.embed(texts)]


class _Held:
    """What Zotero holds beyond the last index run too: what this data home saved (the write
    ledger) and what Zotero's local API finds when it is on (loopback: quick). A paper held
    anywhere is not recommended again."""

    def __init__(self, app: App, library: LibraryMatch | None) -> None:
        from zocrates_nb.app.writes import holdings

        self.places = holdings(app, remote=True, to="connector")
        self.places.indexed = library.find if library is not None else None

    def find(self, c: Candidate) -> str | None:
        held = self.places.find(c)
        return None if held is None else held.key


def list_of(app: App, session_id: str | None) -> str:
    if session_id is None:
        return HOME_LIST
    app.store.get_session(session_id)  # SessionNotFound for an unknown id
    return session_id


def run_discovery(app: App, query: str, *, limit: int, session_id: str | None) -> Discovery:
    list_id = list_of(app, session_id)
    if not app.settings.online.enabled:
        raise OnlineDisabled()  # before the index is opened: nothing is read or sent
    try:
        library: LibraryMatch | None = library_match(app)
    except ZocratesError as e:  # an index to rebuild, say: discovery still answers
        library, unmatched = None, f"Your library could not be checked for these papers: {e}"
    else:
        unmatched = ""
    found = discover(app.settings.online, query, limit=limit, library=_Held(app, library),
                     similarity=lambda q, texts: embedding_similarity(app, q, texts))  # fmt: skip
    if unmatched:
        found.errors.append(unmatched)
    Staging(app.store).remember(found.candidates, query=found.query, list_id=list_id)
    return found


def stage(app: App, ids: Sequence[str], *, session_id: str | None) -> list[Candidate]:
    """Stage remembered candidates (all or none), after asking Zotero whether it holds them:
    a paper already there is refused with where it was found."""
    from zocrates_nb.app.writes import held_by_zotero

    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    wanted = staging.remembered(ids, list_id=list_id)  # an unknown id names itself
    held, _unasked = held_by_zotero(app, wanted)
    return staging.stage(ids, list_id=list_id,
                         held={i: h.describe() for i, h in held.items()})  # fmt: skip


def candidates_of(app: App, session_id: str | None, *, staged: bool) -> list[Candidate]:
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    return staging.staged(list_id=list_id) if staged else staging.found(list_id=list_id)
