"""The turn state machine: a new question, or a paused search resumed, from its first step to
exactly one `Final`, `CheckpointEvent` or `ErrorEvent` — and the turn's `TurnResult` in
sessions.db at every end (answered, paused, failed, cancelled).

A resume holds its checkpoint's claim in the store while it runs (renewed by a heartbeat); the
claim ends with the turn: a new checkpoint or the answer resolves it, an error or a stop leaves
the checkpoint waiting again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from zocrates_nb.agents.active import build_active_items, dump_active_items, load_active_items
from zocrates_nb.agents.citations import check_unsourced, sanitize
from zocrates_nb.agents.coordinator import (
    SEARCH_TOOL,
    CoordinatorDeps,
    coordinator_agent,
    coordinator_brief,
    record_answer,
)
from zocrates_nb.agents.discovery import MAX_RECOMMENDATIONS, DiscoveryOutcome
from zocrates_nb.agents.model_guard import GuardedModel
from zocrates_nb.agents.offline import briefed
from zocrates_nb.agents.pipeline import (
    AnswerFailed,
    Outcome,
    PausedRun,
    SearchPipeline,
    dump_messages,
    load_messages,
)
from zocrates_nb.agents.prompts import ActiveItemView
from zocrates_nb.agents.runtime import Roles, TurnContext, UsageBook, role_call
from zocrates_nb.agents.synthesizer import stream_handler
from zocrates_nb.app.describe import describe_error
from zocrates_nb.app.stream import EventQueue, event_stream
from zocrates_nb.events import ErrorEvent, Event, Final
from zocrates_nb.retrieval import RunState, allowed_keys, collection_names
from zocrates_nb.sessions import (
    CheckpointPending,
    CheckpointSnapshot,
    SessionBusy,
    maybe_compact,
    offline_summarize,
)
from zocrates_nb.sessions.state import ActiveItem, SessionState
from zocrates_nb.turn import AskOptions, CheckpointInfo, TurnResult

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

_T = TypeVar("_T")
log = logging.getLogger("zocrates_nb.app")

CANCELLED = "The turn was cancelled."
# Told (session id, turn id) once a turn holds its session (new question) or checkpoint
# (resume): a refusal can no longer come after it, so a server may send its 200 then.
OnBegin = Callable[[str, str], None]


class TurnRunner:
    """Runs the turns of one App (its store, index, settings and models)."""

    def __init__(self, app: AppCore) -> None:
        self.app = app
        self.store = app.store

    # ------------------------------------------------------------------ a new question
    async def ask(
        self,
        session_id: str,
        prompt: str,
        options: AskOptions,
        cancel: asyncio.Event | None,
        on_begin: OnBegin | None = None,
    ) -> AsyncIterator[Event]:
        """Open the turn and take the session's lease first, in one transaction: a question
        that loses the race for the session raises SessionBusy (or CheckpointPending) from the
        stream before any event (a surface answers 409), never an event inside a stream."""
        begin = asyncio.ensure_future(
            asyncio.to_thread(self.store.begin_turn, session_id, prompt, options)
        )
        try:
            result = await asyncio.shield(begin)
        except asyncio.CancelledError:  # stopped at once: the thread still opens the turn
            with contextlib.suppress(Exception):  # (and leases the session): end it too
                await _off_loop(self._end, await begin, None, "cancelled", CANCELLED)
            raise
        if on_begin is not None:
            on_begin(session_id, result.turn_id)
        started: list[bool] = []  # the turn's task ran (a stop can come before it starts)
        run = lambda q: self._leased(session_id, self._ask(q, result, prompt, options, started))  # noqa: E731
        try:
            async for event in event_stream(run, cancel):
                yield event
        finally:
            if not started:
                with contextlib.suppress(BaseException):
                    await _off_loop(self._end, result, None, "cancelled", CANCELLED)
        if not started:
            yield ErrorEvent(session_id=session_id, turn_id=result.turn_id, message=CANCELLED,
                             retryable=True)  # fmt: skip

    async def _leased(self, session_id: str, run: Awaitable[None]) -> None:
        """Run a new question's turn while renewing its session lease (taken by `begin_turn`,
        ended by the turn's last write), so a long turn never looks abandoned."""
        beat = asyncio.ensure_future(self._renew_lease(session_id))
        try:
            await run
        finally:
            beat.cancel()

    async def _renew_lease(self, session_id: str) -> None:
        while True:
            await asyncio.sleep(self.app.claim_renew_seconds)
            try:
                await asyncio.to_thread(self.store.renew_turn, session_id)
            except Exception as e:  # a busy database: try again at the next beat
                log.warning("renewing the turn lease of %s failed: %s", session_id,
                            describe_error(e, doing="Renewing the lease"))  # fmt: skip

    async def _ask(
        self,
        queue: EventQueue,
        result: TurnResult,
        prompt: str,
        options: AskOptions,
        started: list[bool],
    ) -> None:
        started.append(True)
        app, store = self.app, self.store
        session_id = result.session_id
        turn: TurnContext | None = None
        roles: Roles | None = None
        t0 = time.monotonic()
        try:
            app.settings  # noqa: B018 - reload an edited config before the turn
            index = app.library_index
            scope = options.scope
            try:
                allowed = await asyncio.to_thread(allowed_keys, index, scope)
            except ValueError as e:
                await self._fail(queue, result, None, str(e), retryable=False)
                return
            names = await asyncio.to_thread(collection_names, index, scope.collections)
            active = await asyncio.to_thread(build_active_items, index, scope.items)
            await asyncio.to_thread(self._save_scope, session_id, active, options)
            roles = await asyncio.to_thread(app.roles, options.model)
            turn = self._context(queue, result, roles, allowed, names, active)
            await self._load_models(turn)
            history = await asyncio.to_thread(store.load_messages, session_id)
            state = await asyncio.to_thread(store.get_state, session_id)
            deps = CoordinatorDeps(turn=turn, profile=state.research_profile)
            brief = await asyncio.to_thread(coordinator_brief, turn, prompt)
            rm = roles.coordinator
            with (
                turn.phase("coordinator", role="coordinator"),
                role_call(rm, turn) as call,
                briefed(brief),
            ):
                run = await coordinator_agent.run(
                    prompt,
                    message_history=history or None,
                    deps=deps,
                    model=rm.model,
                    model_settings=rm.settings or None,
                    event_stream_handler=stream_handler(turn, "coordinator"),
                    run_id=call.run_id,
                )
            turn.usage.add_run(rm, run.usage)
            output, new_messages = run.output, run.new_messages()
            seconds = time.monotonic() - t0
            if isinstance(output, Outcome) and output.paused is not None:
                paused = output.paused.model_copy(update={
                    "coordinator_messages": dump_messages(new_messages),
                    "active_items": dump_active_items(active),
                })  # fmt: skip
                await self._pause(turn, result, output, paused, seconds)
                return
            found: dict[str, Any] = {}
            if isinstance(output, Outcome):
                text = output.text
                messages = record_answer(new_messages, text)
                outcome: Outcome | None = output
            elif isinstance(output, DiscoveryOutcome):
                text, outcome = output.text, None
                messages = record_answer(new_messages, text)
                found = {"discovery": output.discovery, "search_goal": output.goal,
                         "tool_calls": len(output.queries)}  # fmt: skip
            else:
                keys = {a.key for a in active} | {c.key for a in active for c in a.children}
                own = check_unsourced(sanitize(str(output), keys))  # no passage to cite
                text, messages, outcome = own.text, new_messages, None
                if own.unsupported:
                    found["unsupported_claims"] = own.unsupported
            await asyncio.to_thread(
                store.append_messages, session_id, messages, turn_id=result.turn_id
            )
            await self._answer(turn, result, outcome, text, seconds, **found)
            await self._compact(session_id, roles, turn, result)
        except asyncio.CancelledError:
            if result is not None:
                await _off_loop(self._end, result, turn, "cancelled", CANCELLED)
            queue.put_nowait(ErrorEvent(session_id=session_id, turn_id=_id(result),
                                        message=CANCELLED, retryable=True))  # fmt: skip
        except (CheckpointPending, SessionBusy) as e:
            await self._fail(queue, result, turn, str(e), retryable=False, session_id=session_id)
        except AnswerFailed as e:
            assert result is not None and turn is not None
            await self._keep_search(queue, result, turn, e, time.monotonic() - t0)
        except Exception as e:
            message = describe_error(e, roles, doing="The turn")
            await self._fail(queue, result, turn, message, session_id=session_id)

    async def _load_models(self, turn: TurnContext) -> None:
        """The first turn after a start loads the models as a step of its own (timed in its
        trail, counted in the seconds the answer shows), each part named as it starts; a
        warm-up already under way is waited for, not repeated."""
        if await asyncio.to_thread(self.app.models_ready):
            return
        loop = asyncio.get_running_loop()

        def progress(stage: str) -> None:
            loop.call_soon_threadsafe(turn.step, "loading", f"Loading {stage}…")

        turn.step("loading", "Loading models (the first question after a start)")
        with turn.phase("loading"):
            await asyncio.to_thread(self.app.warm_up, progress)

    # ------------------------------------------------------------------ a resumed search
    async def resume(
        self,
        session_id: str,
        interrupt_id: str,
        action: str,
        guidance: str,
        cancel: asyncio.Event | None,
        on_begin: OnBegin | None = None,
    ) -> AsyncIterator[Event]:
        """Claim the checkpoint, run the resumed turn, and end the claim with the stream."""
        snapshot = await asyncio.to_thread(self.store.claim_checkpoint, session_id, interrupt_id)
        assert snapshot.claim is not None
        token = snapshot.claim.token
        if on_begin is not None:
            on_begin(session_id, snapshot.turn_id)
        try:
            run = lambda q: self._resume(q, session_id, snapshot, token, action, guidance)  # noqa: E731
            async for event in event_stream(run, cancel):
                yield event
        finally:
            # Usually a no-op: the turn ended its claim. Not when the stream was closed before
            # the run began; then the checkpoint must wait again, not stay claimed.
            with contextlib.suppress(BaseException):
                await _off_loop(self.store.release_checkpoint, session_id, token)

    async def _resume(
        self,
        queue: EventQueue,
        session_id: str,
        snapshot: CheckpointSnapshot,
        claim: str,
        action: str,
        guidance: str,
    ) -> None:
        """The resumed turn, holding the checkpoint's claim (token `claim`) until it ends."""
        store, app = self.store, self.app
        result: TurnResult | None = None
        roles: Roles | None = None
        resolved = False  # the answer cleared the checkpoint: no claim left to release
        turn: TurnContext | None = None
        t0 = time.monotonic()

        def end_claim(message: str) -> None:
            """After an error or a stop: the checkpoint waits again (its turn back at
            `checkpoint`), or — once resolved — the turn records the error."""
            with contextlib.suppress(Exception):
                if resolved and result is not None:
                    store.update_turn(result.turn_id, status="error", error=message)
                else:
                    store.release_checkpoint(session_id, claim)

        heartbeat = asyncio.ensure_future(self._renew_claim(session_id, claim))
        try:
            result = await asyncio.to_thread(store.get_turn, snapshot.turn_id)
            app.settings  # noqa: B018
            paused = PausedRun.model_validate(snapshot.payload)
            run_state = RunState.from_json(paused.run_state)
            names = await asyncio.to_thread(
                collection_names, app.library_index, result.options.scope.collections
            )
            active = load_active_items(paused.active_items)
            roles = await asyncio.to_thread(app.roles, result.options.model)
            turn = self._context(queue, result, roles, run_state.allowed_keys, names, active)
            turn.usage = UsageBook(result.usage.model_copy(deep=True))
            turn.timings.update(result.timings)
            turn.steps = list(result.steps)
            outcome = await SearchPipeline(turn).resume(paused, action, guidance)
            seconds = result.seconds + time.monotonic() - t0
            if outcome.paused is not None:
                again = outcome.paused.model_copy(update={
                    "coordinator_messages": paused.coordinator_messages,
                    "active_items": paused.active_items,
                })  # fmt: skip
                await self._pause(turn, result, outcome, again, seconds, claim=claim)
                return
            # Resolve first (only while this resume still holds the claim), then record.
            await asyncio.to_thread(store.clear_checkpoint, session_id, claim=claim)
            resolved = True
            messages = record_answer(load_messages(paused.coordinator_messages), outcome.text)
            await asyncio.to_thread(
                store.append_messages, session_id, messages, turn_id=result.turn_id
            )
            await self._answer(turn, result, outcome, outcome.text, seconds)
            await self._compact(session_id, roles, turn, result)
        except asyncio.CancelledError:
            message = CANCELLED + ("" if resolved else " The checkpoint still waits.")
            await _off_loop(end_claim, message)
            queue.put_nowait(ErrorEvent(session_id=session_id, turn_id=snapshot.turn_id,
                                        message=message, retryable=True))  # fmt: skip
        except Exception as e:
            message = describe_error(e, roles, doing="The turn")
            await _off_loop(end_claim, message)
            retry_id = await _off_loop(self._failed_resume, snapshot, turn, message, resolved)
            queue.put_nowait(ErrorEvent(session_id=session_id, turn_id=snapshot.turn_id,
                                        message=message, retryable=not resolved,
                                        retry_id=retry_id))  # fmt: skip
        finally:
            heartbeat.cancel()

    def _failed_resume(
        self,
        snapshot: CheckpointSnapshot,
        turn: TurnContext | None,
        message: str,
        resolved: bool,
    ) -> str | None:
        """A resume that failed keeps what it spent on the turn's record; a kept search (an
        "answer" snapshot) waits again for "Retry answer": its id, for the error event."""
        if turn is not None:
            with contextlib.suppress(Exception):
                self.store.update_turn(snapshot.turn_id, usage=turn.usage.record,
                                       steps=turn.trail())  # fmt: skip
        if snapshot.kind == "answer" and not resolved:
            with contextlib.suppress(Exception):
                self.store.update_turn(snapshot.turn_id, error=message)
            return snapshot.interrupt_id
        return None

    async def _renew_claim(self, session_id: str, claim: str) -> None:
        """Keep a long resume's claim fresh, so its lease never lapses while it runs."""
        while True:
            await asyncio.sleep(self.app.claim_renew_seconds)
            try:
                held = await asyncio.to_thread(self.store.renew_claim, session_id, claim)
            except Exception as e:  # a busy database: try again at the next beat
                log.warning("renewing the checkpoint claim of %s failed: %s", session_id, e)
                continue
            if not held:
                return

    # ------------------------------------------------------------------ the record
    def _context(
        self,
        queue: EventQueue,
        result: TurnResult,
        roles: Roles,
        allowed: list[str],
        collections: list[str],
        active: list[ActiveItemView],
    ) -> TurnContext:
        from zocrates_nb.app.discovery import run_discovery  # (its network clients: when used)

        app = self.app
        return TurnContext(
            session_id=result.session_id,
            turn_id=result.turn_id,
            user_query=result.prompt,
            queue=queue,
            store=self.store,
            index=app.library_index,
            settings=app.settings,
            roles=roles,
            reranker=app.reranker,
            options=result.options,
            allowed_keys=allowed,
            collections=collections,
            active_items=active,
            # Discovery's one way out: the App's (library matching, candidates remembered in
            # this session's staging list for `stage add ID`).
            discover=lambda query: run_discovery(
                app, query, limit=MAX_RECOMMENDATIONS, session_id=result.session_id
            ),
        )

    @staticmethod
    def _record(
        turn: TurnContext,
        result: TurnResult,
        outcome: Outcome | None,
        seconds: float,
        **fields: Any,
    ) -> TurnResult:
        """The turn's record as it stands: what the run found, cited, spent and showed."""
        update: dict[str, Any] = {
            "usage": turn.usage.record,
            "timings": dict(turn.timings),
            "steps": turn.trail(),
            "seconds": round(seconds, 3),
            "model": turn.roles.display,
            "warnings": _warnings(result, turn),
        }
        if outcome is not None:
            update.update(evidence=outcome.evidence, search_goal=outcome.goal,
                          parts=outcome.question_parts, elsewhere=outcome.elsewhere,
                          widen_scope=outcome.widen_scope)  # fmt: skip
            if outcome.state is not None:
                update.update(tool_calls=outcome.state.tool_count,
                              extensions=outcome.state.extension_count)  # fmt: skip
            if outcome.answer is not None:
                a = outcome.answer
                update.update(cited_sources=a.cited_sources, other_sources=a.other_sources,
                              citations=a.citations, unsupported_claims=a.unsupported,
                              citations_verified=a.verified)  # fmt: skip
        return result.model_copy(update={**update, **fields})

    async def _answer(
        self,
        turn: TurnContext,
        result: TurnResult,
        outcome: Outcome | None,
        text: str,
        seconds: float,
        **fields: Any,
    ) -> None:
        record = self._record(turn, result, outcome, seconds, status="answered", answer=text,
                              checkpoint=None, error=None, **fields)  # fmt: skip
        stored = await asyncio.to_thread(self.store.save_turn, record)
        turn.emit(Final.of(stored))

    async def _pause(
        self,
        turn: TurnContext,
        result: TurnResult,
        outcome: Outcome,
        paused: PausedRun,
        seconds: float,
        *,
        claim: str | None = None,
    ) -> None:
        ev = outcome.checkpoint
        assert ev is not None
        info = CheckpointInfo.model_validate(
            ev.model_dump(exclude={"type", "session_id", "turn_id"})
        )
        record = self._record(turn, result, outcome, seconds, checkpoint=info)
        snapshot = CheckpointSnapshot(interrupt_id=ev.interrupt_id, turn_id=result.turn_id,
                                      payload=paused.model_dump(mode="json"))  # fmt: skip
        await asyncio.to_thread(
            self.store.save_checkpoint, result.session_id, snapshot, turn=record, claim=claim
        )
        turn.emit(ev)

    async def _keep_search(
        self,
        queue: EventQueue,
        result: TurnResult,
        turn: TurnContext,
        failed: AnswerFailed,
        seconds: float,
    ) -> None:
        """Writing the answer failed after the search finished: keep the search (its evidence
        in the turn's record, its run state as an "answer" snapshot) so `synthesize` writes the
        answer again without searching again; the error says so and carries the retry id."""
        retry_id = f"{result.turn_id}-answer"
        message = (
            f"{failed} The search is kept: retry the answer (zocrates-nb resume --session "
            f"{result.session_id} --action synthesize) without searching again."
        )
        call = ToolCallPart(SEARCH_TOOL, {"request": failed.outcome.goal})
        coordinator: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart(result.prompt)]),
            ModelResponse(parts=[call]),
            ModelRequest(parts=[ToolReturnPart(SEARCH_TOOL, "", tool_call_id=call.tool_call_id)]),
        ]
        paused = failed.paused.model_copy(update={
            "coordinator_messages": dump_messages(coordinator),
            "active_items": dump_active_items(turn.active_items),
        })  # fmt: skip
        snapshot = CheckpointSnapshot(
            interrupt_id=retry_id,
            turn_id=result.turn_id,
            kind="answer",
            payload=paused.model_dump(mode="json"),
        )
        record = self._record(turn, result, failed.outcome, seconds, error=message, answer="")
        try:
            await asyncio.to_thread(
                self.store.save_checkpoint, result.session_id, snapshot, turn=record
            )
        except Exception as e:  # the store failed too: an ordinary failed turn
            log.warning("keeping the search of %s failed: %s", result.turn_id, e)
            await self._fail(queue, result, turn, str(failed))
            return
        error = ErrorEvent(session_id=result.session_id, turn_id=result.turn_id,
                           message=message, retryable=True, retry_id=retry_id)  # fmt: skip
        queue.put_nowait(error)

    def _end(self, result: TurnResult, turn: TurnContext | None, status: str, error: str) -> None:
        """Record a turn that ended without an answer (failed or cancelled)."""
        extra: dict[str, Any] = {}
        if turn is not None:
            extra = {"steps": turn.trail(), "usage": turn.usage.record,
                     "timings": dict(turn.timings), "model": turn.roles.display,
                     "warnings": _warnings(result, turn)}  # fmt: skip
        with contextlib.suppress(Exception):
            self.store.update_turn(result.turn_id, status=status, answer="", error=error, **extra)

    async def _fail(
        self,
        queue: EventQueue,
        result: TurnResult | None,
        turn: TurnContext | None,
        message: str,
        *,
        retryable: bool = True,
        session_id: str = "",
    ) -> None:
        if result is not None:
            await _off_loop(self._end, result, turn, "error", message)
        queue.put_nowait(
            ErrorEvent(
                session_id=result.session_id if result else session_id,
                turn_id=_id(result),
                message=message,
                retryable=retryable,
            )
        )

    def _save_scope(
        self, session_id: str, active: list[ActiveItemView], options: AskOptions
    ) -> None:
        def put(state: SessionState) -> None:
            state.active_items = [
                ActiveItem(
                    item_key=a.key,
                    title=a.title,
                    children=[{"key": c.key, "kind": c.kind, "title": c.title} for c in a.children],
                )
                for a in active
            ]
            state.scope = options.scope

        self.store.update_state(session_id, put)

    async def _compact(
        self, session_id: str, roles: Roles, turn: TurnContext, result: TurnResult
    ) -> None:
        """Post-turn compaction (after the answer is out, never before a first token). What
        the compactor's model spent is booked on the turn's stored record."""
        cfg = self.app.settings.sessions.compaction
        if not cfg.enabled:
            return
        before = turn.usage.record.requests
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
        except asyncio.CancelledError:  # the answer is recorded: a stop now ends only this
            return
        except Exception as e:  # compaction is an optimisation: never fail a turn on it
            log.warning("compaction of session %s failed: %s", session_id, type(e).__name__)
        finally:
            if turn.usage.record.requests != before:
                with contextlib.suppress(Exception):
                    await _off_loop(self._book_compaction, result.turn_id, turn)

    def _book_compaction(self, turn_id: str, turn: TurnContext) -> None:
        self.store.update_turn(turn_id, usage=turn.usage.record)


async def _off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """A store write from a turn's last moments, in a worker thread: a locked sessions.db must
    not stall the event loop (the Jupyter server's, the kernel's). Shielded, so a second
    cancellation cannot abandon the write halfway through awaiting it."""
    return await asyncio.shield(asyncio.to_thread(fn, *args))


def _warnings(result: TurnResult, turn: TurnContext) -> list[str]:
    """The record's warnings so far (a resumed turn's earlier ones too) and this run's."""
    return list(dict.fromkeys([*result.warnings, *turn.warnings()]))


def _id(result: TurnResult | None) -> str:
    return result.turn_id if result is not None else ""


def summarizer(roles: Roles) -> Callable[[str, str], Awaitable[str] | str]:
    """The compaction summarizer: the coordinator's model, or the offline extractive summary."""
    rm = roles.coordinator
    if rm.offline:
        return offline_summarize
    # The coordinator's model, its requests booked under the compactor's name.
    model = rm.model.for_role("compactor") if isinstance(rm.model, GuardedModel) else rm.model

    async def summarize(previous: str, transcript: str) -> str:
        from pydantic_ai import Agent

        agent: Agent[None, str] = Agent(
            model,
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
