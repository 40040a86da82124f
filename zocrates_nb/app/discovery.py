"""Discovery and staging as `App` operations: find papers beyond the library (marking what it
already holds), remember them, stage them, and save the staging list to Zotero or a file.

A staging list belongs to a session when one is given, else to the data home (the CLI's
default), so `discover` and `stage add ID` meet across processes. Saving writes only after the
caller passes `confirmed=True` (the CLI's `--yes` or its prompt, the panel's button).
"""

from __future__ import annotations

from collections.abc import Sequence

from zocrates_nb.app.core import MAX_QUERY_CHARS, AppCore, user_text
from zocrates_nb.app.writes import held_by_zotero, holdings, library_match, list_of
from zocrates_nb.errors import ZocratesError
from zocrates_nb.online import Candidate, Discovery, OnlineDisabled, discover
from zocrates_nb.online.discover import LibraryMatch
from zocrates_nb.sessions.staging import Staging


def embedding_similarity(app: AppCore, query: str, texts: list[str]) -> list[float]:
    """Cosine of the query to each text with the library's (bundled, offline) embedding model."""
    embedder = app.library_index.embedder
    q = embedder.embed_query(query)
    return [sum(a * b for a, b in zip(q, v, strict=True)) for v in embedder.embed(texts)]


class _Held:
    """What Zotero holds beyond the last index run too: what this data home saved (the write
    ledger) and what Zotero's local API finds when it is on (loopback: quick). A paper held
    anywhere is not recommended again."""

    def __init__(self, app: AppCore, library: LibraryMatch | None) -> None:
        self.places = holdings(app, remote=True, to="connector")
        self.places.indexed = library.find if library is not None else None

    def find(self, c: Candidate) -> str | None:
        held = self.places.find(c)
        return None if held is None else held.key


def run_discovery(app: AppCore, query: str, *, limit: int, session_id: str | None) -> Discovery:
    query = user_text(query or "", max_chars=MAX_QUERY_CHARS, what="the query")
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


def stage(app: AppCore, ids: Sequence[str], *, session_id: str | None) -> list[Candidate]:
    """Stage remembered candidates (all or none), after asking Zotero whether it holds them:
    a paper already there is refused with where it was found."""
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    wanted = staging.remembered(ids, list_id=list_id)  # an unknown id names itself
    held, _unasked = held_by_zotero(app, wanted)
    return staging.stage(ids, list_id=list_id,
                         held={i: h.describe() for i, h in held.items()})  # fmt: skip


def candidates_of(app: AppCore, session_id: str | None, *, staged: bool) -> list[Candidate]:
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    return staging.staged(list_id=list_id) if staged else staging.found(list_id=list_id)
