"""What the handlers ask of the App, kept apart from Tornado: request checks that map to HTTP
statuses, the event streams of a turn, and sessions shaped for display."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from pydantic import TypeAdapter
from tornado import web

from zocrates_nb.events import Event
from zocrates_nb.server.schema import (
    ChatRequest,
    ResumeRequest,
    SessionDetail,
    SessionList,
    TurnDetail,
)
from zocrates_nb.sessions import CheckpointPending, SessionNotFound
from zocrates_nb.sessions.records import HistoryTurn

if TYPE_CHECKING:
    from zocrates_nb.app import App

_HISTORY_TURN: TypeAdapter[HistoryTurn] = TypeAdapter(HistoryTurn)


def http_error(e: BaseException) -> web.HTTPError:
    """The status a refusal deserves: conflict, unknown session, bad request, or our fault."""
    from zocrates_nb.app import NoPendingCheckpoint

    if isinstance(e, web.HTTPError):
        return e
    if isinstance(e, CheckpointPending | NoPendingCheckpoint):
        return web.HTTPError(409, str(e), reason="Conflict")
    if isinstance(e, SessionNotFound):
        return web.HTTPError(404, str(e), reason="Not Found")
    if isinstance(e, ValueError):
        return web.HTTPError(400, str(e), reason="Bad Request")
    return web.HTTPError(500, describe(e))


def describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _require_session(app: App, session_id: str) -> None:
    if not app.store.has_session(session_id):
        raise web.HTTPError(404, f"no session {session_id!r}", reason="Not Found")


def check_chat(app: App, req: ChatRequest) -> None:
    """Refuse before streaming: unknown session (404), pending checkpoint (409)."""
    if req.session_id is None:
        return
    _require_session(app, req.session_id)
    pending = app.store.pending_checkpoint(req.session_id)
    if pending is not None:
        raise http_error(CheckpointPending(req.session_id, pending))


def check_resume(app: App, req: ResumeRequest) -> None:
    """Unknown session (404), nothing to resume (409), not this checkpoint's id (400)."""
    _require_session(app, req.session_id)
    pending = app.store.pending_checkpoint(req.session_id)
    if pending is None:
        raise web.HTTPError(
            409, f"session {req.session_id} has no pending checkpoint", reason="Conflict"
        )
    if pending.interrupt_id != req.interrupt_id:
        raise web.HTTPError(
            400,
            f"interrupt_id {req.interrupt_id!r} is not the pending checkpoint's "
            f"({pending.interrupt_id!r})",
            reason="Bad Request",
        )


def ask(app: App, req: ChatRequest) -> AsyncIterator[Event]:
    """The turn's events; a new session when none is named (its id is on every event)."""
    return app.ask(
        req.prompt,
        session_id=req.session_id,
        items=req.items,
        collections=req.collections,
        hitl=req.hitl,
        budget=req.budget,
        word_ceiling=req.word_ceiling,
        model=req.model,
    )


def resume(app: App, req: ResumeRequest) -> AsyncIterator[Event]:
    return app.resume(req.session_id, req.interrupt_id, req.action, req.guidance)


def session_list(app: App) -> SessionList:
    return SessionList.model_validate({"sessions": app.sessions()})


def session_detail(app: App, session_id: str) -> SessionDetail:
    try:
        record = app.store.get_session(session_id)
        turns = [_HISTORY_TURN.validate_python(t) for t in app.history(session_id)]
    except SessionNotFound as e:
        raise http_error(e) from None
    pending = next((t.checkpoint for t in turns if t.checkpoint is not None), None)
    return SessionDetail(
        session_id=record.id,
        title=record.title,
        created=record.created,
        updated=record.updated,
        turns=turns,
        messages=[m for t in turns for m in t.as_messages()],
        pending_checkpoint=pending,
    )


def turn_detail(app: App, session_id: str, turn_id: str) -> TurnDetail:
    try:
        turn = app.turn(turn_id)
    except SessionNotFound as e:
        raise http_error(e) from None
    if turn["session_id"] != session_id:
        raise web.HTTPError(404, f"no turn {turn_id!r} in session {session_id!r}")
    return TurnDetail.model_validate(turn)
