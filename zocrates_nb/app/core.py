"""The parts of `App` every concern of it shares: the data home, its settings, the search index,
the session store, the models; and the sessions as stored. `App` (facade.py) builds on it."""

from __future__ import annotations

import logging
import shutil
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from zocrates_nb.agents.models import ModelRegistry
from zocrates_nb.app import library
from zocrates_nb.app.home import make_home, read_only_notice, refuse_write, working_copy
from zocrates_nb.app.library import IndexStatus
from zocrates_nb.app.limits import check_scope as refuse_scope
from zocrates_nb.config import ConfigError, LimitsSettings, Settings
from zocrates_nb.errors import UsageError
from zocrates_nb.sessions import (
    RENEW_SECONDS,
    SessionNotFound,
    SessionStore,
    refuse_new_turn,
    refuse_resume,
)
from zocrates_nb.sessions.recovery import open_sessions
from zocrates_nb.text import TextTooLong, safe_text
from zocrates_nb.turn import Scope, SessionSummary, TurnResult

if TYPE_CHECKING:
    from zocrates_nb.agents.offline import OfflineEngine
    from zocrates_nb.agents.runtime import Roles
    from zocrates_nb.index import Index
    from zocrates_nb.library.source import LibrarySource
    from zocrates_nb.sessions.state import CheckpointSnapshot

log = logging.getLogger("zocrates_nb.app.facade")

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


class AppCore:
    """What every concern of `App` stands on: the data home's settings, index, session store
    and models, and its sessions."""

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
        self.notices: list[str] = []  # what opening had to repair, for every surface to show
        # A read-only home is read through a private copy (home.py); `read_only_home` names it.
        self.read_only_home: Path | None = None
        self._drop_copy: Callable[[], object] = lambda: None
        if make_home(self.home):
            self.read_only_home, self.home = self.home, working_copy(self.home)
            self._drop_copy = weakref.finalize(self, shutil.rmtree, self.home.parent, True)
            self.notices.append(read_only_notice(self.read_only_home))
        self.registry = ModelRegistry(self.home, overrides)
        self.registry.settings  # noqa: B018 - validate the configuration now (ConfigError)
        self._index = index
        self._own_index = index is None
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

    def close(self) -> None:
        from zocrates_nb.agents.telemetry import release_telemetry

        release_telemetry(self.registry)  # this App's wish for spans ends with it
        if self._own_index and self._index is not None:
            self._index.close()
            self._index = None
        self.store.close()
        self._drop_copy()  # a read-only home's private copy (once; also at exit)

    def __enter__(self) -> Self:
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
            from zocrates_nb.agents.offline import OfflineEngine
            from zocrates_nb.retrieval import library_lexicon

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

    def library_source(self) -> LibrarySource | None:
        """The library this home was last indexed from (`index` with no source re-reads it)."""
        from zocrates_nb.library.source import remembered

        return remembered(self.home)

    def index_hint(self) -> str:
        """What to run to (re)build this home's index, as a user types it."""
        from zocrates_nb.library.source import index_hint

        return index_hint(self.home)

    def check_models(self, model: str | None = None) -> None:
        """Raise, before a turn starts, what would make it fail at once: a model string that is
        not one, or a configured role that cannot be set up (a missing API key, an unknown
        provider) — a `ConfigError` naming the setting. `model` is a turn's own (`--model`)."""
        from zocrates_nb.agents.runtime import check_roles

        check_roles(self.registry, model)

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
        from zocrates_nb.agents.runtime import resolve_roles

        return resolve_roles(self.registry, self.engine, model, self.role_models)

    def check_scope(self, scope: Scope) -> None:
        """Refuse a scope too large or naming what the index lacks, before a turn or search
        starts (limits.py)."""
        if not scope.items and not scope.collections:
            return
        try:
            limits = self.settings.limits
        except ConfigError:  # the turn (or search) says what is wrong with the file
            limits = LimitsSettings()
        refuse_scope(self.library_index, limits, scope)

    def refuse_read_only(self, doing: str) -> None:
        """Raise the one sentence for a change a read-only home cannot take."""
        if self.read_only_home is not None:
            raise refuse_write(self.read_only_home, doing)

    def _writable_index(self) -> Index:
        """The index for an indexing run: a catalogue too damaged to open is rebuilt."""
        from zocrates_nb.index import Index, IndexDamaged

        self.refuse_read_only("index a library")

        try:
            return self.library_index
        except IndexDamaged:
            self._index = Index.open(self.home, self.settings, repair=True)
            return self._index

    def status(self) -> IndexStatus:
        """What the index holds: items, documents per status, chunks, sizes; its paths in the
        home the researcher gave (a read-only home is read through a copy nobody keeps)."""
        status = library.status(self.library_index)
        if self.read_only_home is None:
            return status
        copy, real = str(self.home), str(self.read_only_home)
        return status.model_copy(update={
            k: v.replace(copy, real) for k, v in status if isinstance(v, str) and copy in v
        })  # fmt: skip

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

    def check_ask(self, session_id: str) -> None:
        """Refuse a new question in this session now, as `ask` would: `SessionNotFound`,
        `CheckpointPending` while a checkpoint waits, `SessionBusy` while a turn runs."""
        refuse_new_turn(session_id, self.store.get_state(session_id))

    def check_resume(self, session_id: str, interrupt_id: str | None) -> CheckpointSnapshot:
        """The checkpoint a resume would answer, or its refusal now: `NoPendingCheckpoint`,
        `WrongCheckpoint` (another id waits), `CheckpointClaimed` (another resume holds it)."""
        return refuse_resume(session_id, self.store.pending_checkpoint(session_id), interrupt_id)

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
