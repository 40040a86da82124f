"""Writing to Zotero as `App` operations: saving staged papers (connector, Web API, RIS/BibTeX)
and answers as notes. Every write goes through the data home's write ledger (sessions.db), and
before anything is written the library is asked whether it already holds the paper (the index,
the ledger, Zotero's local API, the Web API): a paper already there is never written again.
Writes happen only after the caller passes `confirmed=True`."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from zocrates_nb.errors import UsageError, ZocratesError
from zocrates_nb.library.paths import select_url
from zocrates_nb.online import Candidate
from zocrates_nb.online.discover import LibraryMatch
from zocrates_nb.sessions.staging import HOME_LIST, Staging
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import SaveResult, save_to_connector, save_to_web, to_bibtex, to_ris
from zocrates_nb.writeback.holdings import Held, Holdings, LocalLibrary, remote_places
from zocrates_nb.writeback.ledger import BatchItem
from zocrates_nb.writeback.result import WriteError
from zocrates_nb.writeback.web import WebLibrary

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

SaveTarget = Literal["connector", "web", "ris", "bibtex"]
SAVE_TARGETS: tuple[SaveTarget, ...] = ("connector", "web", "ris", "bibtex")
LOST = ("saved", "unsaved")
_ARXIV_URL = re.compile(r"arxiv\.org/(?:abs|pdf)/([^\s?#]+?)(?:\.pdf)?$", re.IGNORECASE)


def library_match(app: AppCore) -> LibraryMatch:
    """The indexed library's papers by DOI, arXiv id (from an arxiv.org URL) and title."""
    rows = []
    for item in app.library_index.items():
        if item.item_type in ("note", "attachment"):
            continue
        m = _ARXIV_URL.search(item.url or "")
        rows.append((item.key, item.title, item.doi or None, m.group(1) if m else None))
    return LibraryMatch.of(rows)


def list_of(app: AppCore, session_id: str | None) -> str:
    if session_id is None:
        return HOME_LIST
    app.store.get_session(session_id)  # SessionNotFound for an unknown id
    return session_id


def holdings(app: AppCore, *, remote: bool = True, to: str | None = None) -> Holdings:
    """Where to ask whether Zotero holds a paper: the index (when it can be read), the ledger,
    and with `remote` Zotero's local API and the Web API (when configured)."""
    try:
        indexed = library_match(app).find
    except ZocratesError:  # an index to rebuild, say: the other places still answer
        indexed = None
    places = []
    if remote:
        zotero = app.settings.zotero
        web = None
        if zotero.web.library_id and to != "connector":
            try:
                web = WebLibrary(zotero.web, timeout=app.settings.online.timeout)
            except WriteError:  # no API key in the environment: nothing to ask there
                web = None
        places = remote_places(web=web, connector_url=str(zotero.connector_url),
                               timeout=min(5.0, app.settings.online.timeout))  # fmt: skip
    # Per library: the destination's (by default the configured web library, else the app's).
    default = "web" if app.settings.zotero.web.library_id else "connector"
    target = _target(app, to if to in ("web", "connector") else default)
    names = {p.target: p.name for p in places if p.target}
    return Holdings(indexed, WriteLedger(app.store).saved(target), places, names=names)


def held_by_zotero(
    app: AppCore, candidates: Sequence[Candidate], *, remote: bool = True, to: str | None = None
) -> tuple[dict[str, Held], list[str]]:
    """Candidate id → where Zotero holds it; and the places that could not be asked."""
    places = holdings(app, remote=remote, to=to)
    found = {c.id: held for c in candidates if (held := places.find(c))}
    return found, places.unasked


def save_staged(
    app: AppCore,
    to: SaveTarget | str,
    *,
    session_id: str | None,
    confirmed: bool,
    out: Path | None = None,
    collection: str | None = None,
    tags: Sequence[str] | None = None,
    ids: Sequence[str] | None = None,
    lost: str | None = None,
) -> tuple[SaveResult, str | None]:
    """Save the staging list (or `ids` of it); returns the result and, for RIS/BibTeX without
    `out`, the file's text. What is saved to Zotero leaves the list; exports keep it."""
    if to not in SAVE_TARGETS:
        raise UsageError(f"save to one of {', '.join(SAVE_TARGETS)}, not {to!r}")
    if lost is not None and lost not in LOST:
        raise UsageError(f"--lost is saved or unsaved, not {lost!r}")
    staging = Staging(app.store)
    list_id = list_of(app, session_id)
    staged = staging.staged(list_id=list_id)
    if ids:
        unknown = set(ids) - {c.id for c in staged}
        if unknown:
            raise UsageError(f"not staged: {', '.join(sorted(unknown))}")
        staged = [c for c in staged if c.id in set(ids)]
    ledger = WriteLedger(app.store)
    if not staged and not (to in ("web", "connector") and ledger.pending(_target(app, to))):
        raise UsageError("nothing is staged: stage candidates first (stage add ID)")
    writes = to in ("connector", "web") or out is not None
    if writes and not confirmed:
        raise UsageError("saving writes to Zotero or a file: confirm it first (--yes)")
    if to in ("ris", "bibtex"):
        return export(staged, to, out)
    result = save_papers(app, to, staged, ledger, collection=collection, tags=tags, lost=lost)
    staging.unstage([*result.saved, *result.held], list_id=list_id)
    return result, None


def save_papers(app: AppCore, to: str, papers: list[Candidate], ledger: WriteLedger, *,
                collection: str | None, tags: Sequence[str] | None,
                lost: str | None) -> SaveResult:  # fmt: skip
    """Write the papers Zotero does not hold yet. A paper staged days ago may have reached
    Zotero since (saved from here, added by hand): writing it again would duplicate it, so
    Zotero is asked once more and it is left out (`held`, with where it is)."""
    held, unasked = held_by_zotero(app, papers, to=to)
    fresh = [c for c in papers if c.id not in held]
    pending = ledger.pending(_target(app, to))
    if fresh or pending:
        result = write(app, to, fresh, ledger, collection=collection, tags=tags, lost=lost)
    else:
        result = SaveResult(to=to)
    # A paper another process saved while this one waited for the library: held, by the ledger.
    done = {*result.saved, *result.failed, *result.pending}
    late = Holdings(saved=ledger.saved(_target(app, to)))
    held.update({c.id: h for c in fresh if c.id not in done and (h := late.find(c))})
    result.held.update({i: f"already {h.describe()}; not saved again"
                        for i, h in held.items() if i not in result.saved})  # fmt: skip
    result.titles.update({c.id: c.title for c in papers})
    # Each paper counted once: what Zotero saved is not also pending, failed or held.
    result.pending = [i for i in dict.fromkeys(result.pending) if i not in result.saved]
    result.failed = {i: why for i, why in result.failed.items() if i not in result.saved}
    if unasked:
        result.warnings.append(f"Could not ask {' or '.join(unasked)} whether it already "
                               "holds these papers.")  # fmt: skip
    return result


def write(app: AppCore, to: str, candidates: list[Candidate], ledger: WriteLedger, *,
          collection: str | None, tags: Sequence[str] | None,
          lost: str | None) -> SaveResult:  # fmt: skip
    zotero = app.settings.zotero
    if to == "connector":
        local = LocalLibrary(str(zotero.connector_url), min(5.0, app.settings.online.timeout))

        def is_saved(item: BatchItem) -> bool | None:
            try:
                return bool(local.find(set(item.identities), item.title))
            except Exception:  # its local API is off, or Zotero closed: not known
                return None

        return save_to_connector(candidates, str(zotero.connector_url), ledger=ledger,
                                 collection=_collection_path(app, collection),
                                 tags=list(tags or []), lost=lost, is_saved=is_saved,
                                 timeout=app.settings.online.timeout,
                                 find_pdfs=app.settings.online.enabled)  # fmt: skip
    return save_to_web(candidates, zotero.web, ledger=ledger, collection=collection,
                       tags=None if not tags else ["zocrates:discovered", *tags],
                       timeout=max(60.0, app.settings.online.timeout))  # fmt: skip


def export(staged: list[Candidate], to: str, out: Path | None) -> tuple[SaveResult, str | None]:
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


def _target(app: AppCore, to: str) -> str:
    from zocrates_nb.writeback.ledger import CONNECTOR, target_of

    web = app.settings.zotero.web
    return CONNECTOR if to == "connector" else target_of(web.library_type, str(web.library_id))


def _collection_path(app: AppCore, collection: str | None) -> str | None:
    """A collection key the index knows, as its path (the connector chooses by path)."""
    if not collection:
        return None
    try:
        return app.library_index.collection_paths().get(collection, collection)
    except ZocratesError:
        return collection


def save_note(
    app: AppCore,
    session_id: str,
    *,
    turn_id: str | None,
    to: str,
    confirmed: bool,
    collection: str | None = None,
    tag_cited: bool = False,
    standalone: bool = False,
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
    known = in_zotero(app)
    if to == "connector":
        return save_note_to_connector(turn, str(zotero.connector_url), in_zotero=known,
                                      ledger=WriteLedger(app.store),
                                      timeout=app.settings.online.timeout)  # fmt: skip
    result = save_note_to_web(turn, zotero.web, ledger=WriteLedger(app.store),
                              collection=collection, in_zotero=known,
                              standalone=standalone)  # fmt: skip
    if tag_cited:
        from zocrates_nb.writeback.web import tag_items

        tagged = tag_items([s.item_key for s in turn.cited_sources], zotero.web)
        result.failed.update({k: f"not tagged: {why}" for k, why in tagged.failed.items()})
        result.tagged = tagged.saved
    return result


def in_zotero(app: AppCore) -> Callable[[str], bool]:
    """Whether a key opens something in Zotero: an item of a Zotero library in the index, or
    its PDF attachment (a folder library's keys open nothing there). A key the index does not
    know is judged by its shape."""

    def known(key: str) -> bool:
        try:
            index = app.library_index
            if (record := index.item(key)) is not None:
                return record.version.startswith("v")
            if (doc := index.catalog.document(key)) is not None:
                parent = index.item(doc.item_key)
                return doc.kind == "pdf" and parent is not None and (
                    parent.version.startswith("v"))  # fmt: skip
        except Exception:  # an index that cannot be read: judge by the key
            pass
        return bool(select_url(key))

    return known
