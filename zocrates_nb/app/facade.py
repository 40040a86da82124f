"""`App`: zocrates-nb on one data home, the one API every surface uses.

    from zocrates_nb import App

    app = App.open("~/research")          # or $ZOCRATES_HOME, or ~/.zocrates-nb
    app.index(zotero_dir="~/Zotero")       # or zotero_local=, zotero_web=, folder=, sample=
    app.search("how does raft elect a leader")[0].title
    async for event in app.ask("How does Raft elect a leader?"):
        ...                                # Step, TextDelta, Thinking, then Final/Checkpoint/Error
    # a turn paused at a CheckpointEvent `cp` (cp.interrupt_id == f"{cp.turn_id}-ext1"):
    async for event in app.resume(cp.session_id, cp.interrupt_id, "extend_budget"):
        ...
    app.history(session_id)                    # [TurnResult, …]

It mirrors the CLI: `zocrates-nb index|status|search|toc|read|convert|ask|resume|sessions|doctor`
are these methods. A turn ends with exactly one `Final` (its `TurnResult`), `CheckpointEvent` or
`ErrorEvent`; an error leaves the session usable. A new question while a checkpoint waits raises
`CheckpointPending` at once; a resume of a checkpoint another resume holds (in any process)
raises `CheckpointClaimed`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from zocrates_nb.agents.models import ModelRegistry
from zocrates_nb.agents.offline import OfflineEngine
from zocrates_nb.agents.runtime import Roles, resolve_roles
from zocrates_nb.app import library
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.limits import check_scope
from zocrates_nb.app.runner import OnBegin, TurnRunner
from zocrates_nb.config import ConfigError, LimitsSettings, Settings, default_home
from zocrates_nb.errors import UsageError
from zocrates_nb.events import Event
from zocrates_nb.retrieval import TitleMatch, library_lexicon, search_titles
from zocrates_nb.sessions import (
    RENEW_SECONDS,
    CheckpointClaimed,
    NoPendingCheckpoint,
    SessionBusy,
    SessionNotFound,
    SessionState,
    SessionStore,
    claim_holds,
)
from zocrates_nb.sessions.recovery import open_sessions
from zocrates_nb.text import TextTooLong, safe_text
from zocrates_nb.turn import AskOptions, Scope, SessionSummary, TurnResult

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from zocrates_nb.index import Index, IndexReport
    from zocrates_nb.index.model import DocumentRecord, ItemRecord
    from zocrates_nb.ingest.bundle import Bundle
    from zocrates_nb.online import Candidate, Discovery
    from zocrates_nb.sessions.state import CheckpointClaim, CheckpointSnapshot
    from zocrates_nb.writeback import SaveResult

Action = Literal["extend_budget", "synthesize"]
ACTIONS: tuple[Action, ...] = ("extend_budget", "synthesize")
MAX_QUERY_CHARS = 2_000  # a search query (BM25 and the embedder see far less of it anyway)
MAX_QUESTION_CHARS = 20_000  # a question or a resume's guidance (a pasted paragraph fits)


def user_text(text: object, *, max_chars: int, what: str) -> str:
    """`safe_text` with its cap as a UsageError: what every entry point does to typed text."""
    try:
        return safe_text(text, max_chars=max_chars, what=what)
    except TextTooLong as e:
        raise UsageError(str(e)) from None


def overrides_from_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """`retrieval={"budget": 5}` or `retrieval__budget=5` → {"retrieval.budget": 5}."""
    out: dict[str, Any] = {}

    def flatten(prefix: str, value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                flatten(f"{prefix}.{k}", v)
        else:
            out[prefix] = value

    for k, v in kwargs.items():
        flatten(k.replace("__", "."), v)
    return out


class App:
    """zocrates-nb on one data home: the index, the session store, the agents."""

    def __init__(
        self,
        home: Path,
        overrides: dict[str, Any] | None = None,
        *,
        index: Index | None = None,
        store: SessionStore | None = None,
        role_models: dict[str, Any] | None = None,
    ) -> None:
        self.home = Path(home).expanduser().resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.registry = ModelRegistry(self.home, overrides)
        self.registry.settings  # noqa: B018 - validate the configuration now (ConfigError)
        self._index = index
        self._own_index = index is None
        self.notices: list[str] = []  # what opening had to repair, for every surface to show
        if store is None:
            store, notice = open_sessions(self.home)
            if notice:
                self.notices.append(notice)
        self.store = store
        self.store.recover()  # turns and resumes whose process died: failed, or waiting again
        self._engine: OfflineEngine | None = None
        self._reranker: Any = None
        self.claim_renew_seconds = RENEW_SECONDS  # heartbeat of a running resume's claim
        # pydantic-ai models pinned to roles (custom models, scripted models in tests).
        self.role_models: dict[str, Any] = dict(role_models or {})
        self._runner = TurnRunner(self)

    @classmethod
    def open(
        cls,
        home: Path | str | os.PathLike[str] | None = None,
        *,
        index: Index | None = None,
        store: SessionStore | None = None,
        role_models: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> App:
        """Open the app on a data home (default: $ZOCRATES_HOME or ~/.zocrates-nb).

        Keyword overrides beat the config file: `App.open(models={"base": "ollama:qwen3"})`,
        `App.open(retrieval__budget=5)`.
        """
        return cls(
            Path(home) if home else default_home(),
            overrides_from_kwargs(overrides),
            index=index,
            store=store,
            role_models=role_models,
        )

    def close(self) -> None:
        from zocrates_nb.agents.telemetry import release_telemetry

        release_telemetry(self.registry)  # this App's wish for spans ends with it
        if self._own_index and self._index is not None:
            self._index.close()
            self._index = None
        self.store.close()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ parts
    @property
    def settings(self) -> Settings:
        """The current settings (an edited config file is picked up here)."""
        return self.registry.settings

    @property
    def library_index(self) -> Index:
        """The search index of this data home (catalogue, BM25, vectors), opened on first use."""
        if self._index is None:
            from zocrates_nb.index import Index

            self._index = Index.open(self.home, self.settings)
        return self._index

    @property
    def reranker(self) -> Any:
        from zocrates_nb.retrieval import Reranker

        settings = self.settings.retrieval
        if self._reranker is None or self._reranker.settings != settings:
            self._reranker = Reranker(settings=settings, embedder=self.library_index.embedder)
        return self._reranker

    def engine(self) -> OfflineEngine:
        """The offline engine (embedding model loaded once per process, shared with the index)."""
        if self._engine is None:
            index = self.library_index
            self._engine = OfflineEngine(index.offline_model_name, lexicon=library_lexicon(index))
        return self._engine

    def warm_up(self, progress: Callable[[str], None] | None = None) -> None:
        """Load what a turn needs (index, embedding model, offline engine, reranker) ahead of the
        first question, so that it does not wait 15–30 s on a spinner. `progress(stage)` names
        each part as it starts. A part that fails to load is left for the turn to report."""
        stages: list[tuple[str, Callable[[], object]]] = [
            (
                "the search index and embedding model",
                lambda: self.library_index.search("warm up", limit=1),
            ),
            ("the offline engine", self.engine),
            ("the reranker", lambda: self.reranker.rank("warm up", ["a passage to rank"])),
        ]
        for stage, load in stages:
            if progress is not None:
                progress(stage)
            try:
                load()
            except Exception as e:
                log.warning("could not load %s ahead of the first turn: %s", stage, e)

    def models_ready(self) -> bool:
        """Whether a turn would wait for nothing to load: the local embedding model is in memory,
        the vector store open and this App's offline engine built (its lexicon reads the
        catalogue; another App in the process having loaded the model is not enough)."""
        from zocrates_nb.index.embedder import loaded_models

        index = self.library_index
        return (
            self._engine is not None
            and index.offline_model_name in loaded_models()
            and index.dense_open
        )

    def roles(self, model: str | None = None) -> Roles:
        return resolve_roles(self.registry, self.engine, model, self.role_models)

    # ------------------------------------------------------------------ the library
    def index(
        self,
        *,
        zotero_dir: Path | str | None = None,
        zotero_local: bool = False,
        zotero_web: str | None = None,
        group: bool = False,
        folder: Path | str | None = None,
        sample: bool = False,
        progress: bool = False,
    ) -> IndexReport:
        """Index one library source, incrementally (none given: the auto-detected ~/Zotero).

        `zotero_web` is a Web API library id (a group's when `group`), its key from
        $ZOTERO_API_KEY; `sample=True` is the built-in sample library.
        """
        report = library.index_into(
            self._writable_index(),
            self.home,
            self.settings,
            zotero_dir=Path(zotero_dir) if zotero_dir else None,
            zotero_local=zotero_local,
            zotero_web=zotero_web,
            group=group,
            folder=Path(folder) if folder else None,
            sample=sample,
            progress=progress,
        )
        self._engine = None  # its vocabulary is the library's
        return report

    def _check_scope(self, scope: Scope) -> None:
        """A scope too large or naming what the index lacks is refused at once (limits.py)."""
        if not scope.items and not scope.collections:
            return
        try:
            limits = self.settings.limits
        except ConfigError:  # the turn (or search) says what is wrong with the file
            limits = LimitsSettings()
        check_scope(self.library_index, limits, scope)

    def _writable_index(self) -> Index:
        """The index for an indexing run: a catalogue too damaged to open is rebuilt."""
        from zocrates_nb.index import Index, IndexDamaged

        try:
            return self.library_index
        except IndexDamaged:
            self._index = Index.open(self.home, self.settings, repair=True)
            return self._index

    def status(self) -> IndexStatus:
        """What the index holds: items, documents per status, chunks, sizes."""
        return library.status(self.library_index)

    # ------------------------------------------------------------------ the library's records
    def item(self, key: str) -> ItemRecord | None:
        """An item's metadata, or None when the index does not know the key."""
        return self.library_index.item(key)

    def items(self) -> list[ItemRecord]:
        return self.library_index.items()

    def documents(self, item_key: str | None = None) -> list[DocumentRecord]:
        """The documents (PDFs, notes, snapshots) of an item, or of the whole index."""
        return self.library_index.documents(item_key)

    def document(self, doc_key: str) -> DocumentRecord | None:
        return self.library_index.catalog.document(doc_key)

    def collections(self) -> dict[str, str]:
        """Collection key → its path ("Parent / Child"), for naming a scope."""
        return self.library_index.collection_paths()

    def check_scope(self, scope: Scope) -> None:
        """Refuse a scope too large or naming what the index lacks (before a turn starts)."""
        self._check_scope(scope)

    def search(
        self,
        query: str,
        *,
        items: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        chunk_type: str | None = None,
        limit: int = 10,
    ) -> list[SearchHit]:
        """Hybrid (BM25 + dense) search, within items or collections when given."""
        query = user_text(query, max_chars=MAX_QUERY_CHARS, what="the query")
        scope = Scope(items=list(items or []), collections=list(collections or []))
        self._check_scope(scope)
        return library.search(self.library_index, query, scope, chunk_type=chunk_type,
                              limit=limit)  # fmt: skip

    def toc(self, key: str) -> dict[str, Any]:
        """A document's outline (parent, attachment or note key), as the search agent sees it."""
        return library.toc(self.library_index, self.settings, key)

    def read(self, key: str, asset_ids: Sequence[str]) -> dict[str, Any]:
        """Sections (`s2`), figures (`f1`), tables (`t1`), `abstract`, `full` or pages (`p4`)."""
        return library.read(self.library_index, self.settings, key, list(asset_ids))

    def convert(self, path: Path | str) -> Bundle:
        """Convert one file as indexing would; its `.toc` is what the agents navigate."""
        return library.convert(Path(path))

    def search_titles(self, query: str, limit: int = 10) -> list[TitleMatch]:
        """Items and collections whose title or name matches `query` (for scope pickers)."""
        query = user_text(query, max_chars=MAX_QUERY_CHARS, what="the query")
        return search_titles(self.library_index, query, limit) if query else []

    def example_questions(self, *, cached: bool = False) -> list[str] | None:
        """Up to three questions drawn from the library's own topics (`index/topics.py`),
        cached per index generation. `cached=True` never computes: None when not cached yet."""
        from zocrates_nb.index.topics import cached_example_questions, example_questions

        index = self.library_index
        return cached_example_questions(index) if cached else example_questions(index)

    def doctor(self) -> dict[str, Any]:
        """Models per role, embedding and rerank models, library and index health, cloud use."""
        from zocrates_nb.app.doctor import doctor

        return doctor(self)

    # ------------------------------------------------------------------ sessions
    def new_session(self, title: str = "") -> str:
        return self.store.create_session(title).id

    def sessions(self, limit: int = 50) -> list[SessionSummary]:
        """Sessions, most recently updated first."""
        return [self._summary(s.id, s) for s in self.store.list_sessions(limit)]

    def session(self, session_id: str) -> SessionSummary:
        return self._summary(session_id)

    def _summary(self, session_id: str, record: Any = None) -> SessionSummary:
        s = record or self.store.get_session(session_id)
        pending = self.store.pending_checkpoint(s.id)
        return SessionSummary(
            session_id=s.id,
            title=s.title,
            turns=s.turns,
            created=s.created,
            updated=s.updated,
            pending_checkpoint=pending.interrupt_id if pending else None,
        )

    def pending_checkpoint(self, session_id: str) -> CheckpointSnapshot | None:
        """The checkpoint a session's turn waits at (also while a resume holds it)."""
        return self.store.pending_checkpoint(session_id)

    def running_turn(self, session_id: str) -> CheckpointClaim | None:
        """The live lease of the session's running turn, if any."""
        return self.store.running_turn(session_id)

    def rename_session(self, session_id: str, title: str) -> None:
        self.store.rename_session(session_id, title)

    def delete_session(self, session_id: str) -> None:
        self.store.delete_session(session_id)

    def history(self, session_id: str) -> list[TurnResult]:
        """The session's turns in order; a paused turn carries its `checkpoint`."""
        self.store.get_session(session_id)  # SessionNotFound for an unknown id
        return self.store.turns(session_id)

    def turn(self, turn_id: str, *, session_id: str | None = None) -> TurnResult:
        """One turn as stored (in `session_id`, when given)."""
        result = self.store.get_turn(turn_id)
        if session_id is not None and result.session_id != session_id:
            raise SessionNotFound(f"no turn {turn_id!r} in session {session_id!r}")
        return result

    def set_research_profile(self, session_id: str, profile: str | None) -> None:
        """The researcher's profile (background, focus) the coordinator adapts to."""

        def put(state: SessionState) -> None:
            state.research_profile = (profile or "").strip() or None

        self.store.update_state(session_id, put)

    # ------------------------------------------------------------------ discovery
    def discover(self, query: str, *, limit: int = 10, session_id: str | None = None) -> Discovery:
        """Papers beyond the library from the enabled scholarly APIs (`online.*`), deduplicated,
        ranked, each with why it is relevant and whether the library already holds it; they are
        remembered for `stage`. Raises `OnlineDisabled` (sending nothing) while discovery is
        off. Without `session_id` the data home's own list is used."""
        from zocrates_nb.app.discovery import run_discovery

        query = user_text(query or "", max_chars=MAX_QUERY_CHARS, what="the query")
        return run_discovery(self, query, limit=limit, session_id=session_id)

    def stage(self, ids: Sequence[str], *, session_id: str | None = None) -> list[Candidate]:
        """Put discovered candidates on the staging list (all or none); a paper Zotero already
        holds (the index, this data home's saves, Zotero's local or Web API) is refused with
        where it is."""
        from zocrates_nb.app.discovery import stage

        return stage(self, list(ids), session_id=session_id)

    def unstage(self, ids: Sequence[str], *, session_id: str | None = None) -> int:
        """Take candidates off the staging list; how many were on it."""
        from zocrates_nb.app.discovery import list_of
        from zocrates_nb.sessions.staging import Staging

        return Staging(self.store).unstage(list(ids), list_id=list_of(self, session_id))

    def staged(self, *, session_id: str | None = None) -> list[Candidate]:
        """The staging list, in staging order."""
        from zocrates_nb.app.discovery import candidates_of

        return candidates_of(self, session_id, staged=True)

    def save_staged(
        self,
        to: str,
        *,
        confirmed: bool = False,
        session_id: str | None = None,
        out: Path | str | None = None,
        collection: str | None = None,
        tags: Sequence[str] | None = None,
        ids: Sequence[str] | None = None,
        lost: str | None = None,
    ) -> tuple[SaveResult, str | None]:
        """Save the staging list to Zotero (`connector`: the running app, into `collection` —
        a path or name — else its selected one; `web`: the Web API, `collection` a key) with
        `tags`, or export it (`ris`, `bibtex`: to `out`, else returned as text). Nothing is
        written unless `confirmed`, nothing Zotero holds is written again, and a retry or
        re-run never writes a paper twice (`lost`: "saved"/"unsaved", what the researcher
        found in Zotero for a connector save whose answer was lost). `zotero.sqlite` is never
        touched."""
        from zocrates_nb.app.writes import save_staged

        target = Path(out) if out else None
        return save_staged(self, to, session_id=session_id, confirmed=confirmed, out=target,
                           collection=collection, tags=tags, ids=ids, lost=lost)  # fmt: skip

    def lookup(self, identifiers: Sequence[str]) -> tuple[list[Candidate], dict[str, str]]:
        """The papers DOIs, arXiv ids or ISBNs name (from the scholarly sources, while
        `online.enabled` is on), and the identifiers not found with why. Writes nothing."""
        from zocrates_nb.app.adding import lookup

        return lookup(self, identifiers)

    def add(
        self,
        identifiers: Sequence[str],
        *,
        to: str = "connector",
        confirmed: bool = False,
        collection: str | None = None,
        tags: Sequence[str] | None = None,
        lost: str | None = None,
    ) -> tuple[SaveResult, list[Candidate]]:
        """Add papers by DOI, arXiv id or ISBN to Zotero (`connector` or `web`, into
        `collection` with `tags`), as `save_staged` saves: after `confirmed`, never twice,
        nothing Zotero holds. The result and the papers found."""
        from zocrates_nb.app.adding import add

        return add(self, identifiers, to=to, confirmed=confirmed, collection=collection,
                   tags=tags, lost=lost)  # fmt: skip

    def save_note(
        self,
        session_id: str,
        *,
        to: str,
        turn_id: str | None = None,
        confirmed: bool = False,
        collection: str | None = None,
        tag_cited: bool = False,
    ) -> SaveResult:
        """Save an answer with its cited sources as a Zotero note (`connector`: standalone in
        the selected collection; `web`: a child of the one cited item, else standalone).
        Default: the session's last answered turn. `tag_cited` (web) tags the cited items
        `zocrates:cited`. Nothing is written unless `confirmed`."""
        from zocrates_nb.app.writes import save_note

        return save_note(self, session_id, turn_id=turn_id, to=to, confirmed=confirmed,
                         collection=collection, tag_cited=tag_cited)  # fmt: skip

    # ------------------------------------------------------------------ turns
    def ask(
        self,
        prompt: str,
        options: AskOptions | None = None,
        *,
        session_id: str | None = None,
        cancel: asyncio.Event | None = None,
        on_begin: OnBegin | None = None,
        **option_kwargs: Any,
    ) -> AsyncIterator[Event]:
        """Ask a question; returns the turn's event stream.

        Options come as an `AskOptions` or as its keywords (`items=`, `collections=`, `hitl=`,
        `budget=`, `word_ceiling=`, `model=`). Raises at once `CheckpointPending` when the
        session has a checkpoint waiting, `SessionNotFound` for an unknown session id, and
        `UsageError` for an empty or over-long question, options out of bounds, or a scope
        too large or naming collections or item keys the index lacks (`limits.*`), and
        `SessionBusy` while another turn of the session runs (in any process). A question that
        loses the race for its session raises SessionBusy from the stream, before any event.
        `cancel` stops the turn (saved as cancelled); `on_begin(session_id, turn_id)` is
        called once the turn holds its session.
        """
        prompt = user_text(prompt or "", max_chars=MAX_QUESTION_CHARS, what="the question")
        if not prompt:
            raise UsageError("ask needs a question")
        try:
            opts = AskOptions.of(options, **option_kwargs)
        except ValidationError as e:
            raise UsageError.invalid(e) from None
        self._check_scope(opts.scope)
        if session_id is None:
            session_id = self.new_session()
        else:
            from zocrates_nb.sessions import CheckpointPending

            state = self.store.get_state(session_id)  # SessionNotFound when unknown
            if state.checkpoint is not None and state.checkpoint.kind == "checkpoint":
                raise CheckpointPending(session_id, state.checkpoint)
            if claim_holds(state.running):
                raise SessionBusy(session_id, state.running)
        return self._runner.ask(session_id, prompt, opts, cancel, on_begin)

    def resume(
        self,
        session_id: str,
        interrupt_id: str | None,
        action: Action | str,
        guidance: str = "",
        *,
        cancel: asyncio.Event | None = None,
        on_begin: OnBegin | None = None,
    ) -> AsyncIterator[Event]:
        """Continue a paused search: `extend_budget` (with optional guidance) or `synthesize`.

        Works in a new process: the run continues from the snapshot in the session store. Raises
        at once `NoPendingCheckpoint` when nothing (or another interrupt id) waits, and
        `CheckpointClaimed` while another resume — in this or another process — holds it (a
        resume that loses that race raises it from the stream, before any event).
        """
        if action not in ACTIONS:
            raise UsageError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
        guidance = user_text(guidance or "", max_chars=MAX_QUESTION_CHARS, what="the guidance")
        snapshot = self.store.pending_checkpoint(session_id)
        if snapshot is None:
            raise NoPendingCheckpoint(f"session {session_id} has no checkpoint waiting")
        if interrupt_id and interrupt_id != snapshot.interrupt_id:
            raise NoPendingCheckpoint(
                f"session {session_id} waits at {snapshot.interrupt_id}, not {interrupt_id}"
            )
        if claim_holds(snapshot.claim):
            raise CheckpointClaimed(session_id, snapshot)
        if snapshot.kind == "answer" and action != "synthesize":
            raise UsageError(
                "this turn's search is kept but its answer failed: only `synthesize` retries it"
            )
        return self._runner.resume(session_id, snapshot.interrupt_id, action, guidance, cancel,
                                   on_begin)  # fmt: skip


def open_app(home: Path | str | os.PathLike[str] | None = None, **overrides: Any) -> App:
    """`App.open` as a function (for notebooks)."""
    return App.open(home, **overrides)
