"""The public API: one app object on a data home, sessions, and turns as async event streams.

    app = App.open()                       # ~/.zocrates-nb, or ZOCRATES_HOME, or a path
    sid = app.new_session()
    async for event in app.ask("How does Raft elect a leader?", session_id=sid):
        ...                                # Step, TextDelta, Thinking, then Final/Checkpoint/Error
    # the turn paused at a CheckpointEvent `cp`; its id names turn and extension:
    # cp.interrupt_id == f"{cp.turn_id}-ext1"
    async for event in app.resume(sid, cp.interrupt_id, "extend_budget"):
        ...

The widget, the HTTP server and the CLI are thin consumers of this stream, so they behave the
same. A turn ends with exactly one `Final`, `CheckpointEvent` or `ErrorEvent`; an error leaves the
session usable. A new question while a checkpoint waits raises `CheckpointPending` at once; a
resume of a checkpoint another resume holds (in any process) raises `CheckpointClaimed`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from zocrates_nb.agents.citations import sanitize
from zocrates_nb.agents.coordinator import CoordinatorDeps, coordinator_agent, record_answer
from zocrates_nb.agents.models import (
    ModelRegistry,
    describe_model_error,
    redact,
)
from zocrates_nb.agents.offline import OfflineEngine
from zocrates_nb.agents.pipeline import (
    Outcome,
    SearchPipeline,
    dump_messages,
    load_messages,
)
from zocrates_nb.agents.prompts import ActiveChild, ActiveItemView
from zocrates_nb.agents.runtime import Roles, TurnContext, resolve_roles
from zocrates_nb.agents.synthesizer import stream_handler
from zocrates_nb.config import ConfigError, Settings, default_home
from zocrates_nb.events import ErrorEvent, Event, Final
from zocrates_nb.sessions import (
    RENEW_SECONDS,
    CheckpointClaimed,
    CheckpointPending,
    CheckpointSnapshot,
    NoPendingCheckpoint,
    SessionNotFound,
    SessionStore,
    claim_holds,
    maybe_compact,
    offline_summarize,
)
from zocrates_nb.sessions.state import ActiveItem, SessionState

log = logging.getLogger("zocrates_nb.app")

Action = Literal["extend_budget", "synthesize"]
ACTIONS = ("extend_budget", "synthesize")
CANCELLED = "The turn was cancelled."


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out[prefix] = value


def overrides_from_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """`retrieval={"budget": 5}` or `retrieval__budget=5` → {"retrieval.budget": 5}."""
    out: dict[str, Any] = {}
    for k, v in kwargs.items():
        key = k.replace("__", ".")
        if isinstance(v, dict):
            _flatten(key, v, out)
        else:
            out[key] = v
    return out


class App:
    """zocrates-nb on one data home: the index, the session store, the agents."""

    def __init__(
        self,
        home: Path,
        overrides: dict[str, Any] | None = None,
        *,
        index: Any = None,
        store: SessionStore | None = None,
        role_models: dict[str, Any] | None = None,
    ) -> None:
        self.home = Path(home).expanduser().resolve()
        self.home.mkdir(parents=True, exist_ok=True)
        self.registry = ModelRegistry(self.home, overrides)
        self.registry.settings  # noqa: B018 - validate the configuration now (ConfigError)
        self._index = index
        self._own_index = index is None
        self.store = store or SessionStore.open(self.home)
        self._engine: OfflineEngine | None = None
        self._reranker: Any = None
        self.claim_renew_seconds = RENEW_SECONDS  # heartbeat of a running resume's claim
        # pydantic-ai models pinned to roles (custom models, scripted models in tests).
        self.role_models: dict[str, Any] = dict(role_models or {})

    @classmethod
    def open(
        cls,
        home: Path | str | os.PathLike[str] | None = None,
        *,
        index: Any = None,
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
    def index(self) -> Any:
        if self._index is None:
            from zocrates_nb.index import Index

            self._index = Index.open(self.home, self.settings)
        return self._index

    @property
    def reranker(self) -> Any:
        from zocrates_nb.retrieval import Reranker

        settings = self.settings.retrieval
        if self._reranker is None or self._reranker.settings != settings:
            self._reranker = Reranker(settings=settings, embedder=self.index.embedder)
        return self._reranker

    def engine(self) -> OfflineEngine:
        """The offline engine (embedding model loaded once per process, shared with the index)."""
        if self._engine is None:
            index = self.index
            self._engine = OfflineEngine(index.model_name, lexicon=library_lexicon(index))
        return self._engine

    def roles(self, model: str | None = None) -> Roles:
        return resolve_roles(self.registry, self.engine, model, self.role_models)

    # ------------------------------------------------------------------ sessions
    def new_session(self, title: str = "") -> str:
        return self.store.create_session(title).id

    def sessions(self, limit: int = 50) -> list[dict[str, Any]]:
        out = []
        for s in self.store.list_sessions(limit):
            pending = self.store.pending_checkpoint(s.id)
            out.append(
                {
                    "session_id": s.id,
                    "title": s.title,
                    "turns": s.turns,
                    "created": s.created.isoformat(),
                    "updated": s.updated.isoformat(),
                    "pending_checkpoint": pending.interrupt_id if pending else None,
                }
            )
        return out

    def history(self, session_id: str) -> list[dict[str, Any]]:
        """The session's turns for display (a pending checkpoint comes back with its turn)."""
        out = []
        for t in self.store.history(session_id):
            out.append(
                {
                    "turn_id": t.turn_id,
                    "index": t.index,
                    "prompt": t.prompt,
                    "status": t.status,
                    "answer": t.answer,
                    "cited_sources": t.cited_sources,
                    "other_sources": t.other_sources,
                    "citations": t.citations,
                    "checkpoint": t.checkpoint,
                    "error": t.error,
                    "scope": t.scope,
                    "created": t.created.isoformat() if t.created else None,
                }
            )
        return out

    def turn(self, turn_id: str) -> dict[str, Any]:
        """One turn as stored (answer, sources, evidence with text, usage, checkpoint…)."""
        t = self.store.get_turn(turn_id)
        return {
            "turn_id": t.turn_id,
            "session_id": t.session_id,
            "index": t.index,
            "prompt": t.prompt,
            "status": t.status,
            "answer": t.answer,
            **t.payload,
        }

    def set_research_profile(self, session_id: str, profile: str | None) -> None:
        """The researcher's profile (background, focus) the coordinator adapts to."""

        def put(state: SessionState) -> None:
            state.research_profile = (profile or "").strip() or None

        self.store.update_state(session_id, put)

    def search_titles(self, query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Items and collections whose title or name matches `query` (for scope chips)."""
        q = " ".join(query.casefold().split())
        if not q:
            return []
        words = re.findall(r"\w+", q)
        scored: list[tuple[float, dict[str, Any]]] = []
        index = self.index
        for it in index.items():
            if it.item_type in ("note", "attachment"):
                continue
            title = it.title.casefold()
            authors = " ".join(it.authors).casefold()
            hay = f"{title} {authors} {it.year or ''}"
            hits = sum(1 for w in words if w in hay)
            if not hits:
                continue
            score = (
                hits / len(words)
                + (1.0 if q in title else 0.0)
                + (0.5 if title.startswith(q) else 0.0)
            )
            scored.append(
                (
                    score,
                    {
                        "kind": "item",
                        "item_key": it.key,
                        "title": it.title,
                        "authors": it.authors,
                        "year": it.year,
                    },
                )
            )
        for key, path in index.collection_paths().items():
            name = path.casefold()
            hits = sum(1 for w in words if w in name)
            if hits:
                scored.append(
                    (
                        hits / len(words) + (1.0 if q in name else 0.0) + 0.1,
                        {"kind": "collection", "key": key, "title": path},
                    )
                )
        scored.sort(key=lambda s: -s[0])
        return [d for _, d in scored[:limit]]

    # ------------------------------------------------------------------ doctor
    def doctor(self) -> dict[str, Any]:
        """Models per role, embedding and rerank models, library and index health, cloud use."""
        from zocrates_nb.retrieval.rerank import describe

        info: dict[str, Any] = {"home": str(self.home)}
        models = self.registry.doctor_info()
        info["models"] = models
        info["any_cloud_endpoint"] = models.get("any_cloud")
        info["telemetry"] = self.registry.telemetry_status or models.get("telemetry")
        try:
            index = self.index
            status = index.status()
            docs = status.get("documents", {})
            errors = [
                {"doc_key": d.doc_key, "item_key": d.item_key, "status": d.status, "error": d.error}
                for d in index.documents()
                if d.status in ("error", "skipped")
            ]
            info["embedding_model"] = status.get("embedding_model")
            info["rerank"] = describe(self.reranker)
            info["library"] = {
                "items": status.get("items"),
                "documents": docs,
                "chunks": status.get("chunks"),
                "last_indexed": status.get("last_indexed"),
            }
            info["index_health"] = {
                "ok": bool(status.get("chunks")) and not docs.get("indexing"),
                "problems": errors[:50],
                "note": ""
                if status.get("chunks")
                else "the index is empty: run `zocrates-nb index` first",
            }
        except Exception as e:  # a broken index is a doctor finding, not a crash
            info["index_health"] = {"ok": False, "error": redact(str(e))}
        info["sessions"] = len(self.store.list_sessions(10_000))
        return info

    # ------------------------------------------------------------------ turns
    def ask(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        items: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        hitl: bool = True,
        budget: int | None = None,
        word_ceiling: int | None = None,
        model: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[Event]:
        """Ask a question; returns the turn's event stream.

        Raises `CheckpointPending` right away when the session has a checkpoint waiting, and
        `SessionNotFound` for an unknown session id.
        """
        if not prompt or not prompt.strip():
            raise ValueError("ask needs a question")
        if session_id is None:
            session_id = self.new_session()
        else:
            pending = self.store.pending_checkpoint(session_id)  # SessionNotFound when unknown
            if pending is not None:
                raise CheckpointPending(session_id, pending)
        sid = session_id

        async def run(queue: asyncio.Queue[Event | None]) -> None:
            await self._run_turn(
                queue,
                sid,
                prompt.strip(),
                list(items or []),
                list(collections or []),
                hitl,
                budget,
                word_ceiling,
                model,
            )

        return self._stream(run, cancel)

    def resume(
        self,
        session_id: str,
        interrupt_id: str | None,
        action: Action | str,
        guidance: str = "",
        *,
        cancel: asyncio.Event | None = None,
    ) -> AsyncIterator[Event]:
        """Continue a paused search: `extend_budget` (with optional guidance) or `synthesize`.

        Works in a new process: the run continues from the snapshot in the session store. Raises
        at once `NoPendingCheckpoint` when nothing (or another interrupt id) waits, and
        `CheckpointClaimed` while another resume — in this or another process — holds it.

        The stream claims the checkpoint in the store before it runs (a resume that loses that
        race raises `CheckpointClaimed` from the stream, before any event); the claim ends with
        the turn: a new checkpoint or the answer resolves it, an error or a stop leaves the
        checkpoint waiting again.
        """
        if action not in ACTIONS:
            raise ValueError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
        snapshot = self.store.pending_checkpoint(session_id)
        if snapshot is None:
            raise NoPendingCheckpoint(f"session {session_id} has no checkpoint waiting")
        if interrupt_id and interrupt_id != snapshot.interrupt_id:
            raise NoPendingCheckpoint(
                f"session {session_id} waits at {snapshot.interrupt_id}, not {interrupt_id}"
            )
        if claim_holds(snapshot.claim):
            raise CheckpointClaimed(session_id, snapshot)
        return self._resume_stream(
            session_id, snapshot.interrupt_id, str(action), guidance, cancel
        )

    async def _resume_stream(
        self,
        session_id: str,
        interrupt_id: str,
        action: str,
        guidance: str,
        cancel: asyncio.Event | None,
    ) -> AsyncIterator[Event]:
        """Claim the checkpoint, run the resumed turn, and end the claim with the stream."""
        snapshot = await asyncio.to_thread(self.store.claim_checkpoint, session_id, interrupt_id)
        assert snapshot.claim is not None
        token = snapshot.claim.token
        try:

            async def run(queue: asyncio.Queue[Event | None]) -> None:
                await self._run_resume(queue, session_id, snapshot, token, action, guidance)

            async for event in self._stream(run, cancel):
                yield event
        finally:
            # Usually a no-op: the turn ended its claim. Not when the stream was closed before
            # the run began; then the checkpoint must wait again, not stay claimed.
            with contextlib.suppress(Exception):
                self.store.release_checkpoint(session_id, token)

    async def _stream(
        self,
        run: Callable[[asyncio.Queue[Event | None]], Awaitable[None]],
        cancel: asyncio.Event | None,
    ) -> AsyncIterator[Event]:
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        task = asyncio.ensure_future(run(queue))
        watcher = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        try:
            while True:
                getter = asyncio.ensure_future(queue.get())
                waits: set[asyncio.Future[Any]] = {getter}
                if watcher is not None:
                    waits.add(watcher)
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:  # cancelled by the caller: the task reports and ends
                    getter.cancel()
                    watcher = None
                    task.cancel()
                    continue
                event = getter.result()
                if event is None:
                    break
                yield event
        finally:
            if watcher is not None:
                watcher.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    # ------------------------------------------------------------------ the turn body
    def _active_items(self, keys: Sequence[str]) -> list[ActiveItemView]:
        return build_active_items(self.index, keys)

    def _turn_context(
        self,
        queue: asyncio.Queue[Event | None],
        session_id: str,
        turn_id: str,
        prompt: str,
        roles: Roles,
        scope: Any,
        active: list[ActiveItemView],
        collections: list[str],
        hitl: bool,
        budget: int | None,
        word_ceiling: int | None,
    ) -> TurnContext:
        return TurnContext(
            session_id=session_id,
            turn_id=turn_id,
            user_query=prompt,
            queue=queue,
            store=self.store,
            index=self.index,
            settings=self.settings,
            roles=roles,
            reranker=self.reranker,
            scope=scope,
            active_items=active,
            collections=collections,
            hitl=hitl,
            budget=budget,
            word_ceiling=word_ceiling,
        )

    async def _run_turn(
        self,
        queue: asyncio.Queue[Event | None],
        session_id: str,
        prompt: str,
        items: list[str],
        collections: list[str],
        hitl: bool,
        budget: int | None,
        word_ceiling: int | None,
        model: str | None,
    ) -> None:
        from zocrates_nb.retrieval import make_scope
        from zocrates_nb.sessions import Scope as SessionScope

        turn_id: str | None = None
        roles: Roles | None = None
        t0 = time.monotonic()

        def fail(message: str, retryable: bool = True) -> None:
            if turn_id is not None:
                with contextlib.suppress(Exception):
                    self.store.update_turn(
                        turn_id, status="error", answer="", payload={"error": message}
                    )
            queue.put_nowait(
                ErrorEvent(
                    session_id=session_id,
                    turn_id=turn_id or "",
                    message=message,
                    retryable=retryable,
                )
            )

        try:
            record = await asyncio.to_thread(
                self.store.begin_turn,
                session_id,
                prompt,
                SessionScope(items=items, collections=collections),
            )
            turn_id = record.turn_id
            self.settings  # noqa: B018 - reload an edited config before the turn
            try:
                scope = await asyncio.to_thread(
                    make_scope, self.index, items=items, collections=collections
                )
            except ValueError as e:
                fail(str(e), retryable=False)
                return
            active = await asyncio.to_thread(self._active_items, items)
            await asyncio.to_thread(self._save_scope, session_id, active, items, collections)
            roles = await asyncio.to_thread(self.roles, model)
            turn = self._turn_context(
                queue,
                session_id,
                turn_id,
                prompt,
                roles,
                scope,
                active,
                collections,
                hitl,
                budget,
                word_ceiling,
            )
            history = await asyncio.to_thread(self.store.load_messages, session_id)
            state = await asyncio.to_thread(self.store.get_state, session_id)
            deps = CoordinatorDeps(turn=turn, profile=state.research_profile)
            rm = roles.coordinator
            with turn.phase("coordinator", role="coordinator"):
                result = await coordinator_agent.run(
                    prompt,
                    message_history=history or None,
                    deps=deps,
                    model=rm.model,
                    model_settings=rm.settings or None,
                    event_stream_handler=stream_handler(turn, "coordinator"),
                )
            turn.usage.add("coordinator", result.usage, rm.model_string)
            output = result.output
            new_messages = result.new_messages()
            if isinstance(output, Outcome) and output.kind == "checkpoint":
                payload = {
                    **output.snapshot,
                    "coordinator_messages": dump_messages(new_messages),
                    "user_query": prompt,
                    "active_items": [view_to_json(a) for a in active],
                    "scope": scope.model_dump(mode="json"),
                    "collections": collections,
                    "hitl": hitl,
                    "model": model,
                    "usage": turn.usage.to_json(),
                    "timings": dict(turn.timings),
                    "seconds": round(time.monotonic() - t0, 3),
                }
                await self._pause(session_id, turn_id, output, payload)
                assert output.checkpoint is not None
                turn.emit(output.checkpoint)
                return
            if isinstance(output, Outcome):
                text = output.text
                messages = record_answer(new_messages, text)
            else:
                keys = {a.key for a in active} | {c.key for a in active for c in a.children}
                text = sanitize(str(output), keys)
                messages = new_messages
            await asyncio.to_thread(
                self.store.append_messages, session_id, messages, turn_id=turn_id
            )
            final = self._final(turn, output, text, time.monotonic() - t0)
            turn.emit(final)
            await self._compact(session_id, roles)
        except asyncio.CancelledError:
            if turn_id is not None:
                with contextlib.suppress(Exception):
                    self.store.update_turn(
                        turn_id, status="cancelled", payload={"error": CANCELLED}
                    )
            queue.put_nowait(
                ErrorEvent(
                    session_id=session_id, turn_id=turn_id or "", message=CANCELLED, retryable=True
                )
            )
        except CheckpointPending as e:
            fail(str(e), retryable=False)
        except Exception as e:
            fail(self._describe(e, roles))
        finally:
            queue.put_nowait(None)

    async def _run_resume(
        self,
        queue: asyncio.Queue[Event | None],
        session_id: str,
        snapshot: CheckpointSnapshot,
        claim: str,
        action: str,
        guidance: str,
    ) -> None:
        """The resumed turn, holding the checkpoint's claim (token `claim`) until it ends."""
        from zocrates_nb.retrieval.state import Scope as RunScope

        turn_id = snapshot.turn_id
        payload = dict(snapshot.payload)
        roles: Roles | None = None
        resolved = False  # the answer cleared the checkpoint: no claim left to release
        t0 = time.monotonic()

        def end_claim(message: str) -> None:
            """After an error or a stop: the checkpoint waits again (its turn back at
            `checkpoint`), or — once resolved — the turn records the error."""
            with contextlib.suppress(Exception):
                if resolved:
                    self.store.update_turn(turn_id, status="error", payload={"error": message})
                else:
                    self.store.release_checkpoint(session_id, claim)

        heartbeat = asyncio.ensure_future(self._renew_claim(session_id, claim))
        try:
            self.settings  # noqa: B018
            scope = RunScope.model_validate(payload.get("scope") or {})
            active = [view_from_json(a) for a in payload.get("active_items") or []]
            roles = await asyncio.to_thread(self.roles, payload.get("model"))
            turn = self._turn_context(
                queue,
                session_id,
                turn_id,
                str(payload.get("user_query", "")),
                roles,
                scope,
                active,
                list(payload.get("collections") or []),
                bool(payload.get("hitl", True)),
                None,
                None,
            )
            turn.usage.merge(payload.get("usage") or {})
            turn.timings.update(payload.get("timings") or {})
            outcome = await SearchPipeline(turn).resume(payload, action, guidance)
            seconds = float(payload.get("seconds") or 0.0) + time.monotonic() - t0
            if outcome.kind == "checkpoint":
                new_payload = {
                    **payload,
                    **outcome.snapshot,
                    "usage": turn.usage.to_json(),
                    "timings": dict(turn.timings),
                    "seconds": round(seconds, 3),
                }
                await self._pause(session_id, turn_id, outcome, new_payload, claim=claim)
                assert outcome.checkpoint is not None
                turn.emit(outcome.checkpoint)
                return
            # Resolve first (only while this resume still holds the claim), then record.
            await asyncio.to_thread(self.store.clear_checkpoint, session_id, claim=claim)
            resolved = True
            coordinator_messages = load_messages(payload.get("coordinator_messages"))
            messages = record_answer(coordinator_messages, outcome.text)
            await asyncio.to_thread(
                self.store.append_messages, session_id, messages, turn_id=turn_id
            )
            turn.emit(self._final(turn, outcome, outcome.text, seconds))
            await self._compact(session_id, roles)
        except asyncio.CancelledError:
            message = CANCELLED + ("" if resolved else " The checkpoint still waits.")
            end_claim(message)
            queue.put_nowait(
                ErrorEvent(
                    session_id=session_id, turn_id=turn_id, message=message, retryable=True
                )
            )
        except Exception as e:
            message = self._describe(e, roles)
            end_claim(message)
            queue.put_nowait(
                ErrorEvent(
                    session_id=session_id,
                    turn_id=turn_id,
                    message=message,
                    retryable=not resolved,
                )
            )
        finally:
            heartbeat.cancel()
            queue.put_nowait(None)

    async def _renew_claim(self, session_id: str, claim: str) -> None:
        """Keep a long resume's claim fresh, so its lease never lapses while it runs."""
        while True:
            await asyncio.sleep(self.claim_renew_seconds)
            try:
                held = await asyncio.to_thread(self.store.renew_claim, session_id, claim)
            except Exception as e:  # a busy database: try again at the next beat
                log.warning("renewing the checkpoint claim of %s failed: %s", session_id, e)
                continue
            if not held:
                return

    # ------------------------------------------------------------------ helpers
    def _save_scope(
        self,
        session_id: str,
        active: list[ActiveItemView],
        items: list[str],
        collections: list[str],
    ) -> None:
        from zocrates_nb.sessions import Scope as SessionScope

        def put(state: SessionState) -> None:
            state.active_items = [
                ActiveItem(
                    item_key=a.key,
                    title=a.title,
                    children=[{"key": c.key, "kind": c.kind, "title": c.title} for c in a.children],
                )
                for a in active
            ]
            state.scope = SessionScope(items=items, collections=collections)

        self.store.update_state(session_id, put)

    async def _pause(
        self,
        session_id: str,
        turn_id: str,
        outcome: Outcome,
        payload: dict[str, Any],
        *,
        claim: str | None = None,
    ) -> None:
        assert outcome.checkpoint is not None
        ev = outcome.checkpoint
        ev.session_id, ev.turn_id = session_id, turn_id
        snapshot = CheckpointSnapshot(
            interrupt_id=ev.interrupt_id, turn_id=turn_id, payload=payload
        )
        await asyncio.to_thread(
            self.store.save_checkpoint,
            session_id,
            snapshot,
            turn_payload={
                "checkpoint": ev.model_dump(mode="json"),
                "usage": payload.get("usage", {}),
            },
            claim=claim,
        )

    def _final(self, turn: TurnContext, output: Any, text: str, seconds: float) -> Final:
        usage = turn.usage.to_json()
        if isinstance(output, Outcome) and output.answer is not None:
            a = output.answer
            final = Final(
                answer=text,
                cited_sources=a.cited_sources,
                other_sources=a.other_sources,
                citations=a.citations,
                usage=usage,
                seconds=round(seconds, 3),
                model=turn.roles.display,
            )
            pipeline = SearchPipeline(turn)
            evidence = pipeline.evidence_rows(output.ranked, a, True, output.gathered)
            goal = output.goal
        else:
            final = Final(
                answer=text, usage=usage, seconds=round(seconds, 3), model=turn.roles.display
            )
            evidence, goal = [], ""
        final.session_id, final.turn_id = turn.session_id, turn.turn_id
        self.store.update_turn(
            turn.turn_id,
            status="answered",
            answer=text,
            payload={
                "cited_sources": [s.model_dump(mode="json") for s in final.cited_sources],
                "other_sources": [s.model_dump(mode="json") for s in final.other_sources],
                "citations": [c.model_dump(mode="json") for c in final.citations],
                "evidence": evidence,
                "search_goal": goal,
                "usage": usage,
                "timings": dict(turn.timings),
                "seconds": final.seconds,
                "model": final.model,
                "checkpoint": None,
            },
        )
        return final

    async def _compact(self, session_id: str, roles: Roles) -> None:
        """Post-turn compaction (after the answer is out, never before a first token)."""
        cfg = self.settings.sessions.compaction
        if not cfg.enabled:
            return
        try:
            await maybe_compact(
                self.store,
                session_id,
                summarizer(roles),
                min_turns=cfg.min_turns,
                token_floor=cfg.token_floor,
                ceiling=cfg.ceiling,
                keep_last=cfg.keep_last,
            )
        except Exception as e:  # compaction is an optimisation: never fail a turn on it
            log.warning("compaction of session %s failed: %s", session_id, type(e).__name__)

    def _describe(self, e: BaseException, roles: Roles | None) -> str:
        from pydantic_ai import exceptions as x

        model_errors = (
            x.ModelAPIError,
            x.UnexpectedModelBehavior,
            x.UserError,
            ConfigError,
            ConnectionError,
            TimeoutError,
        )
        if isinstance(e, SessionNotFound | NoPendingCheckpoint):
            return str(e)
        if isinstance(e, model_errors) or any(isinstance(c, model_errors) for c in _causes(e)):
            resolved = None
            if roles is not None:
                names = {
                    r.model_string for r in (roles.coordinator, roles.search, roles.synthesizer)
                }
                if len(names) == 1:
                    resolved = roles.coordinator.resolved
            return describe_model_error(e, resolved)
        log.exception("turn failed")
        return redact(f"The turn failed: {type(e).__name__}: {e}")


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and len(out) < 20:
        out.append(cur)
        if isinstance(cur, BaseExceptionGroup):
            out.extend(cur.exceptions)
        cur = cur.__cause__ or cur.__context__
    return out


def summarizer(roles: Roles) -> Callable[[str, str], Awaitable[str] | str]:
    """The compaction summarizer: the coordinator's model, or the offline extractive summary."""
    rm = roles.coordinator
    if rm.offline:
        return offline_summarize

    async def summarize(previous: str, transcript: str) -> str:
        from pydantic_ai import Agent

        agent: Agent[None, str] = Agent(
            rm.model,
            name="compactor",
            instructions=(
                "Summarize this research conversation for its own continuation: the questions "
                "asked, what the answers established (with paper titles), open threads. Keep "
                "it under 400 words. Fold the previous summary in."
            ),
        )
        prompt = f"Previous summary:\n{previous or '(none)'}\n\nConversation:\n{transcript}"
        result = await agent.run(prompt, model_settings=rm.settings or None)
        return result.output

    return summarize


# ============================================================================ active items
def library_lexicon(index: Any) -> Callable[[str], bool]:
    """Whether a word occurs anywhere in the library (BM25 term lookup, cached)."""
    from functools import lru_cache

    from zocrates_nb.index import SearchFilter

    @lru_cache(maxsize=4096)
    def has(word: str) -> bool:
        try:
            return bool(index.catalog.bm25(word, SearchFilter(), 1))
        except Exception:
            return True  # unsure: assume present (never refuse on a lookup failure)

    return has


def build_active_items(index: Any, keys: Sequence[str]) -> list[ActiveItemView]:
    """The selected items with their attachments and notes (short notes carry their text)."""
    from zocrates_nb.retrieval.scope import parent_key

    out: list[ActiveItemView] = []
    seen: set[str] = set()
    for raw in keys:
        parent = parent_key(index, raw) or parent_key(index, raw.upper()) or raw
        if parent in seen:
            continue
        seen.add(parent)
        item = index.item(parent)
        docs = index.documents(parent)
        children: list[ActiveChild] = []
        for d in sorted(docs, key=lambda d: (d.kind == "note", d.doc_key)):
            if d.doc_key == parent:
                continue
            if d.kind == "note":
                text = ""
                with contextlib.suppress(Exception):
                    text = index.bundle(d.doc_key).markdown
                plain = re.sub(r"[#*_>`|\[\]]", " ", text)
                children.append(
                    ActiveChild(
                        d.doc_key,
                        "note",
                        d.title or "Note",
                        words=len(plain.split()),
                        text=plain.strip(),
                    )
                )
            else:
                children.append(
                    ActiveChild(d.doc_key, "attachment", d.title or d.kind, content_type=d.kind)
                )
        title = item.title if item else (docs[0].title if docs else raw)
        out.append(
            ActiveItemView(
                parent,
                title,
                item.year if item else None,
                list(item.authors) if item else [],
                children,
            )
        )
    return out


def view_to_json(v: ActiveItemView) -> dict[str, Any]:
    return {
        "key": v.key,
        "title": v.title,
        "year": v.year,
        "authors": v.authors,
        "children": [
            {
                "key": c.key,
                "kind": c.kind,
                "title": c.title,
                "content_type": c.content_type,
                "words": c.words,
                "text": c.text,
            }
            for c in v.children
        ],
    }


def view_from_json(d: dict[str, Any]) -> ActiveItemView:
    return ActiveItemView(
        d["key"],
        d.get("title", ""),
        d.get("year"),
        list(d.get("authors") or []),
        [
            ActiveChild(
                c["key"],
                c.get("kind", "attachment"),
                c.get("title", ""),
                c.get("content_type", ""),
                int(c.get("words") or 0),
                c.get("text", ""),
            )
            for c in d.get("children") or []
        ],
    )


def open_app(home: Path | str | os.PathLike[str] | None = None, **overrides: Any) -> App:
    """`App.open` as a function (for notebooks)."""
    return App.open(home, **overrides)


__all__ = ["ACTIONS", "App", "CheckpointClaimed", "NoPendingCheckpoint", "open_app"]
