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
from typing import Any

from zocrates_nb.agents.active import build_active_items
from zocrates_nb.agents.citations import check_unsourced, sanitize
from zocrates_nb.agents.coordinator import (
    CoordinatorDeps,
    coordinator_agent,
    coordinator_brief,
    record_answer,
)
from zocrates_nb.agents.discovery import MAX_RECOMMENDATIONS, DiscoveryOutcome
from zocrates_nb.agents.offline import briefed
from zocrates_nb.agents.pipeline import (
    AnswerFailed,
    Outcome,
    PausedRun,
    SearchPipeline,
)
from zocrates_nb.agents.prompts import ActiveItemView
from zocrates_nb.agents.runtime import Roles, TurnContext, UsageBook, role_call
from zocrates_nb.agents.synthesizer import stream_handler
from zocrates_nb.app.describe import describe_error
from zocrates_nb.app.recording import CANCELLED, TurnRecorder, off_loop, turn_id_of
from zocrates_nb.app.stream import EventQueue, event_stream
from zocrates_nb.events import ErrorEvent, Event, StepTimer
from zocrates_nb.retrieval import allowed_keys, collection_names
from zocrates_nb.sessions import CheckpointPending, CheckpointSnapshot, SessionBusy
from zocrates_nb.turn import AskOptions, TurnResult

log = logging.getLogger("zocrates_nb.app")

# Told (session id, turn id) once a turn holds its session (new question) or checkpoint
# (resume): a refusal can no longer come after it, so a server may send its 200 then.
OnBegin = Callable[[str, str], None]


class TurnRunner(TurnRecorder):
    """Runs the turns of one App (its store, index, settings and models)."""

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
                await off_loop(self._end, await begin, None, "cancelled", CANCELLED)
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
                    await off_loop(self._end, result, None, "cancelled", CANCELLED)
        if not started:
            yield ErrorEvent(session_id=session_id, turn_id=result.turn_id, message=CANCELLED,
                             retryable=True)  # fmt: skip

    async def _leased(self, session_id: str, run: Awaitable[None]) -> None:
        """Run a new question's turn while renewing its session lease (taken by `begin_turn`,
        ended by the turn's last write), so a long turn never looks abandoned."""
        beat = asyncio.ensure_future(self._heartbeat(self.store.renew_turn, session_id))
        try:
            await run
        finally:
            beat.cancel()

    async def _heartbeat(self, renew: Callable[..., bool], session_id: str, *args: str) -> None:
        """Keep a running turn's lease (or a resume's claim) fresh until it is no longer held,
        so it never lapses while the turn runs."""
        while True:
            await asyncio.sleep(self.app.claim_renew_seconds)
            try:
                held = await asyncio.to_thread(renew, session_id, *args)
            except Exception as e:  # a busy database: try again at the next beat
                log.warning("renewing the lease of %s failed: %s", session_id,
                            describe_error(e, doing="Renewing the lease"))  # fmt: skip
                continue
            if not held:
                return

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
            # Asked before the turn's parts are built (building the roles makes the engine).
            ready = await asyncio.to_thread(app.models_ready)
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
            if not ready:
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
                    "coordinator_messages": new_messages, "active_items": active})  # fmt: skip
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
            await self._answer(turn, result, outcome, text, seconds, roles, **found)
        except asyncio.CancelledError:
            if result is not None:
                await off_loop(self._end, result, turn, "cancelled", CANCELLED)
            queue.put_nowait(ErrorEvent(session_id=session_id, turn_id=turn_id_of(result),
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
        warm-up already under way is waited for, not repeated. Called when `App.models_ready`
        said, before the turn was set up, that something still had to load."""
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
                await off_loop(self.store.release_checkpoint, session_id, token)

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

        heartbeat = asyncio.ensure_future(
            self._heartbeat(self.store.renew_claim, session_id, claim)
        )
        try:
            result = await asyncio.to_thread(store.get_turn, snapshot.turn_id)
            app.settings  # noqa: B018
            paused = PausedRun.model_validate(snapshot.payload)
            run_state = paused.run_state
            names = await asyncio.to_thread(
                collection_names, app.library_index, result.options.scope.collections
            )
            active = list(paused.active_items)
            roles = await asyncio.to_thread(app.roles, result.options.model)
            turn = self._context(queue, result, roles, run_state.allowed_keys, names, active)
            turn.usage = UsageBook(result.usage.model_copy(deep=True))
            turn.timings.update(result.timings)
            turn.steps = StepTimer(list(result.steps))
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
            messages = record_answer(list(paused.coordinator_messages), outcome.text)
            await asyncio.to_thread(
                store.append_messages, session_id, messages, turn_id=result.turn_id
            )
            await self._answer(turn, result, outcome, outcome.text, seconds, roles)
        except asyncio.CancelledError:
            message = CANCELLED + ("" if resolved else " The checkpoint still waits.")
            await off_loop(end_claim, message)
            queue.put_nowait(ErrorEvent(session_id=session_id, turn_id=snapshot.turn_id,
                                        message=message, retryable=True))  # fmt: skip
        except Exception as e:
            message = describe_error(e, roles, doing="The turn")
            await off_loop(end_claim, message)
            retry_id = await off_loop(self._failed_resume, snapshot, turn, message, resolved)
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
