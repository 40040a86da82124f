"""What a turn leaves in sessions.db at each of its ends: the record answered, paused, kept for a
retry, failed or cancelled, the session's scope, and the compaction that follows an answer."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from zocrates_nb.agents.coordinator import SEARCH_TOOL
from zocrates_nb.agents.model_errors import can_retry
from zocrates_nb.agents.model_guard import GuardedModel
from zocrates_nb.agents.pipeline import AnswerFailed, Outcome, PausedRun, answer_retry_id
from zocrates_nb.agents.prompts import ActiveItemView
from zocrates_nb.agents.runtime import Roles, TurnContext
from zocrates_nb.app.retractions import mark
from zocrates_nb.app.stream import EventQueue
from zocrates_nb.events import ErrorEvent, Final
from zocrates_nb.sessions import CheckpointSnapshot, maybe_compact, offline_summarize
from zocrates_nb.sessions.state import ActiveItem, SessionState
from zocrates_nb.turn import AskOptions, CheckpointInfo, TurnResult

if TYPE_CHECKING:
    from zocrates_nb.app.core import AppCore

_T = TypeVar("_T")
log = logging.getLogger("zocrates_nb.app")

CANCELLED = "The turn was cancelled."


class TurnRecorder:
    """The writing half of a turn runner: one App's store, written at a turn's ends."""

    def __init__(self, app: AppCore) -> None:
        self.app = app
        self.store = app.store

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
        roles: Roles | None = None,
        **fields: Any,
    ) -> None:
        """Record the answer; with `roles`, compact the session (its requests booked on the
        turn) before the final event, so that event's usage holds the compactor's too."""
        record = self._record(turn, result, outcome, seconds, status="answered", answer=text,
                              checkpoint=None, error=None, **fields)  # fmt: skip
        record = await asyncio.to_thread(mark, self.app, record)  # retracted papers it cites
        stored = await asyncio.to_thread(self.store.save_turn, record)
        if roles is not None:
            before = turn.usage.record.requests
            await self._compact(stored.session_id, roles, turn, stored)
            if turn.usage.record.requests != before:
                stored = stored.model_copy(update={"usage": turn.usage.record.model_copy()})
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
                                      payload=paused.payload())  # fmt: skip
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
        retry_id = answer_retry_id(result.turn_id)
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
            "coordinator_messages": coordinator,
            "active_items": turn.active_items,
        })  # fmt: skip
        snapshot = CheckpointSnapshot(
            interrupt_id=retry_id,
            turn_id=result.turn_id,
            kind="answer",
            payload=paused.payload(),
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
        """Record a turn that ended without an answer (failed or cancelled), with the time it
        really took (a turn that fails at its first step took some too)."""
        extra: dict[str, Any] = {}
        if turn is not None:
            extra = {"steps": turn.trail(), "usage": turn.usage.record,
                     "timings": dict(turn.timings), "model": turn.roles.display,
                     "warnings": _warnings(result, turn),
                     "seconds": round(result.seconds + time.monotonic() - turn.started,
                                      3)}  # fmt: skip
        elif result.created is not None:
            now = datetime.now(result.created.tzinfo or UTC)
            extra = {"seconds": round(result.seconds + (now - result.created).total_seconds(), 3)}
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
            await off_loop(self._end, result, turn, "error", message)
        queue.put_nowait(
            ErrorEvent(
                session_id=result.session_id if result else session_id,
                turn_id=turn_id_of(result),
                message=message,
                retryable=retryable and can_retry(message),  # only where a retry can succeed
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
                    await off_loop(self._book_compaction, result.turn_id, turn)

    def _book_compaction(self, turn_id: str, turn: TurnContext) -> None:
        self.store.update_turn(turn_id, usage=turn.usage.record)


async def off_loop(fn: Callable[..., _T], *args: Any) -> _T:
    """A store write from a turn's last moments, in a worker thread: a locked sessions.db must
    not stall the event loop (the Jupyter server's, the kernel's). Shielded, so a second
    cancellation cannot abandon the write halfway through awaiting it."""
    return await asyncio.shield(asyncio.to_thread(fn, *args))


def _warnings(result: TurnResult, turn: TurnContext) -> list[str]:
    """The record's warnings so far (a resumed turn's earlier ones too) and this run's."""
    return list(dict.fromkeys([*result.warnings, *turn.warnings()]))


def turn_id_of(result: TurnResult | None) -> str:
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
