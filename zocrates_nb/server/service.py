"""What the handlers ask of the App, kept apart from Tornado: request checks that map to HTTP
statuses, the event streams of a turn, and sessions shaped for display."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from tornado import web

from zocrates_nb.app import (
    CheckpointPending,
    NoPendingCheckpoint,
    OnBegin,
    SessionBusy,
    SessionNotFound,
    WrongCheckpoint,
    describe_error,
)
from zocrates_nb.errors import ZocratesError
from zocrates_nb.events import CheckpointEvent, Event
from zocrates_nb.server.schema import (
    ChatRequest,
    ResumeRequest,
    SessionDetail,
    SessionList,
)
from zocrates_nb.turn import TurnResult, TurnView

if TYPE_CHECKING:
    from zocrates_nb.app import App


def http_error(e: BaseException) -> web.HTTPError:
    """The status a refusal deserves: conflict, unknown session, bad request, or our fault.
    The message is always plain text for a person (no exception names)."""
    if isinstance(e, web.HTTPError):
        return e
    if isinstance(e, WrongCheckpoint):
        return web.HTTPError(400, describe_error(e), reason="Bad Request")
    if isinstance(e, CheckpointPending | NoPendingCheckpoint | SessionBusy):
        return web.HTTPError(409, describe_error(e), reason="Conflict")
    if isinstance(e, SessionNotFound):
        return web.HTTPError(404, describe_error(e), reason="Not Found")
    if isinstance(e, ZocratesError | ValueError):
        return web.HTTPError(400, describe_error(e), reason="Bad Request")
    return web.HTTPError(500, describe_error(e, doing="The request"))


def check_chat(app: App, req: ChatRequest) -> None:
    """Refuse before streaming: a model string that names no usable model, a scope too large
    or naming what the index lacks (400), an unknown session (404), a pending checkpoint or a
    turn running in it (409)."""
    if req.model:
        app.check_models(req.model)
    app.check_scope(req.options().scope)
    if req.session_id is not None:
        app.check_ask(req.session_id)  # mapped by `http_error` (the handler's `write_error`)


def check_resume(app: App, req: ResumeRequest) -> None:
    """Unknown session (404), nothing to resume or held by another resume (409), not this
    checkpoint's id (400)."""
    app.check_resume(req.session_id, req.interrupt_id)


def ask(
    app: App, req: ChatRequest, cancel: asyncio.Event, on_begin: OnBegin
) -> AsyncIterator[Event]:
    """The turn's events; a new session when none is named (its id is on every event)."""
    return app.ask(req.prompt, req.options(), session_id=req.session_id, cancel=cancel,
                   on_begin=on_begin)  # fmt: skip


def resume(
    app: App, req: ResumeRequest, cancel: asyncio.Event, on_begin: OnBegin
) -> AsyncIterator[Event]:
    return app.resume(req.session_id, req.interrupt_id, req.action, req.guidance, cancel=cancel,
                      on_begin=on_begin)  # fmt: skip


def session_list(app: App) -> SessionList:
    return SessionList(sessions=app.sessions())


def session_detail(app: App, session_id: str) -> SessionDetail:
    try:
        summary = app.session(session_id)
        turns = [app.view(t) for t in app.history(session_id)]
    except SessionNotFound as e:
        raise http_error(e) from None
    pending = next((CheckpointEvent.of(t) for t in turns if t.checkpoint is not None), None)
    return SessionDetail(
        session_id=summary.session_id,
        title=summary.title,
        created=summary.created,
        updated=summary.updated,
        turns=turns,
        messages=[m for t in turns for m in bubbles(t)],
        pending_checkpoint=pending,
    )


def bubbles(turn: TurnResult) -> list[dict[str, Any]]:
    """A turn as chat bubbles: the user's message, then the assistant's (when there is one),
    which is the turn's `TurnView` (without its evidence rows, which `turns` carries)."""
    view = turn if isinstance(turn, TurnView) else TurnView.of(turn)
    out: list[dict[str, Any]] = [{"role": "user", "text": view.prompt, "turn_id": view.turn_id}]
    if view.answer or view.status != "running":
        shown = view.model_dump(mode="json", exclude={"evidence"})
        out.append({"role": "assistant", "text": view.answer, **shown})
    return out


def turn_detail(app: App, session_id: str, turn_id: str) -> TurnView:
    try:
        return app.view(app.turn(turn_id, session_id=session_id))
    except SessionNotFound as e:
        raise http_error(e) from None
