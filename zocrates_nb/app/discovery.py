"""Discovery and staging as `App` operations: find papers beyond the library (marking what it
already holds), remember them, stage them, and save the staging list to Zotero or a file.

A staging list belongs to a session when one is given, else to the data home (the CLI's
default), so `discover` and `stage add ID` meet across processes. Saving writes only after the
caller passes `confirmed=True` (the CLI's `--yes` or its prompt, the panel's button).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from zocrates_nb.errors import UsageError, ZocratesError
from zocrates_nb.online import Candidate, Discovery, OnlineDisabled, discover
from zocrates_nb.online.discover import LibraryMatch
from zocrates_nb.sessions.staging import HOME_LIST, Staging
from zocrates_nb.writeback import (
    SaveResult,
    save_to_connector,
    save_to_web,
    to_bibtex,
    to_ris,
)

if TYPE_CHECKING:
    from zocrates_nb.app.facade import App

SaveTarget = Literal["connector", "web", "ris", "bibtex"]
SAVE_TARGETS: tuple[SaveTarget, ...] = ("connector", "web", "ris", "bibtex")
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
    found = discover(app.settings.online, query, limit=limit, library=library,
                     similarity=lambda q, texts: embedding_similarity(app, q, texts))  # fmt: skip
    if unmatched:
        found.errors.append(unmatched)
    Staging(app.store).remember(found.candidates, query=found.query, list_id=list_id)
    return found


def save_staged(
    app: App,
    to: SaveTarget | str,
    *,
    session_id: str | None,
    confirmed: bool,
    out: Path | None = None,
    collection: str | None = None,
    ids: Sequence[str] | None = None,
) -> tuple[SaveResult, str | None]:
    """Save the staging list (or `ids` of it); returns the result and, for RIS/BibTeX without
    `out`, the file's text. What is saved to Zotero leaves the list; exports keep it."""
    if to not in SAVE_TARGETS:
        raise UsageError(f"save to one of {', '.join(SAVE_TARGETS)}, not {to!r}")
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    staged = staging.staged(list_id=list_id)
    if ids:
        unknown = set(ids) - {c.id for c in staged}
        if unknown:
            raise UsageError(f"not staged: {', '.join(sorted(unknown))}")
        staged = [c for c in staged if c.id in set(ids)]
    if not staged:
        raise UsageError("nothing is staged: stage candidates first (stage add ID)")
    writes = to in ("connector", "web") or out is not None
    if writes and not confirmed:
        raise UsageError("saving writes to Zotero or a file: confirm it first (--yes)")
    if to in ("ris", "bibtex"):
        text = to_ris(staged) if to == "ris" else to_bibtex(staged)
        result = SaveResult(to=to, saved=[c.id for c in staged],
                            where=str(out) if out else "standard output")  # fmt: skip
        if out is None:
            return result, text
        try:
            Path(out).expanduser().write_text(text, encoding="utf-8")
        except OSError as e:
            raise UsageError(f"could not write {out}: {e.strerror or e}") from None
        return result, None
    # A paper staged days ago may have reached the library since (added by hand, re-indexed):
    # writing it again would duplicate it, so it is checked once more and left out.
    held = already_held(app, staged)
    staged = [c for c in staged if c.id not in held]
    zotero = app.settings.zotero
    timeout = app.settings.online.timeout
    if not staged:
        result = SaveResult(to=to)
    elif to == "connector":
        result = save_to_connector(staged, zotero.connector_url, timeout=timeout,
                                   find_pdfs=app.settings.online.enabled)  # fmt: skip
    else:
        result = save_to_web(staged, zotero.web, collection=collection)
    result.failed.update({i: f"already in your library ({key}), so not saved again"
                          for i, key in held.items()})  # fmt: skip
    staging.unstage([*result.saved, *held], list_id=list_id)
    return result, None


def already_held(app: App, staged: Sequence[Candidate]) -> dict[str, str]:
    """Staged candidates the indexed library holds now: candidate id → library item key."""
    try:
        library = library_match(app)
    except ZocratesError:  # no index to check against: the earlier check stands
        return {}
    return {c.id: key for c in staged if (key := library.find(c))}


def candidates_of(app: App, session_id: str | None, *, staged: bool) -> list[Candidate]:
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    return staging.staged(list_id=list_id) if staged else staging.found(list_id=list_id)


def save_note(
    app: App,
    session_id: str,
    *,
    turn_id: str | None,
    to: str,
    confirmed: bool,
    collection: str | None = None,
    tag_cited: bool = False,
) -> SaveResult:
    """Save an answer (the session's last answered turn unless `turn_id`) as a Zotero note;
    with `tag_cited` (Web API only) its cited items also get the `zocrates:cited` tag."""
    from zocrates_nb.writeback import save_note_to_connector, save_note_to_web

    if to not in ("connector", "web"):
        raise UsageError(f"save a note to connector or web, not {to!r}")
    turns = app.history(session_id)
    if turn_id is not None:
        turn = app.turn(turn_id, session_id=session_id)
    else:
        answered = [t for t in turns if t.status == "answered"]
        if not answered:
            raise UsageError(f"session {session_id} has no answer to save yet")
        turn = answered[-1]
    if not confirmed:
        raise UsageError("saving a note writes to Zotero: confirm it first (--yes)")
    if tag_cited and to != "web":
        raise UsageError("tagging cited items needs the Web API (--to web): the connector "
                         "cannot reach items already in Zotero")  # fmt: skip
    zotero = app.settings.zotero
    if to == "connector":
        return save_note_to_connector(
            turn, zotero.connector_url, timeout=app.settings.online.timeout
        )
    result = save_note_to_web(turn, zotero.web, collection=collection)
    if tag_cited:
        from zocrates_nb.writeback.web import tag_items

        tagged = tag_items([s.item_key for s in turn.cited_sources], zotero.web)
        result.failed.update({k: f"not tagged: {why}" for k, why in tagged.failed.items()})
        result.tagged = tagged.saved
    return result
