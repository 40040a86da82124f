"""Tornado handlers of the HTTP API. Every one is authenticated and authorised by Jupyter
(`@web.authenticated` + `@authorized` on `APIHandler`: token or cookie, XSRF for cookies), and
answers errors as Jupyter's JSON `{message, reason}`."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from pydantic import BaseModel
from tornado import web
from tornado.iostream import StreamClosedError

from zocrates_nb.app import SaveResult, describe_error
from zocrates_nb.config import turn_slots
from zocrates_nb.events import ErrorEvent, Final
from zocrates_nb.redaction import scrub_uri
from zocrates_nb.server import service
from zocrates_nb.server.body import parse_body
from zocrates_nb.server.relay import Begun, Opener, ServerBusy, TurnRun
from zocrates_nb.server.runtime import Runtime
from zocrates_nb.server.schema import (
    CancelReply,
    ChatRequest,
    DiscoverRequest,
    Discovery,
    NoteRequest,
    ResumeRequest,
    SaveReply,
    SaveRequest,
    SessionDetail,
    SessionList,
    StageRequest,
    StagingList,
    TurnResult,
)
from zocrates_nb.server.sse import KEEPALIVE, format_event

SESSION_HEADER = "X-Zocrates-Session"
KEEPALIVE_SECONDS = 15.0
OPENAPI_FILE = Path(__file__).with_name("openapi.json")

B = TypeVar("B", bound=BaseModel)


class ZocratesHandler(APIHandler):
    auth_resource = "zocrates"

    @property
    def runtime(self) -> Runtime:
        runtime: Runtime = self.settings["zocrates_runtime"]
        return runtime

    def body_as(self, model: type[B]) -> B:
        """The JSON body as `model`, bounded and validated (see body.py)."""
        return parse_body(self.request.body or b"", model, self.runtime.limits())

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Every error as Jupyter's JSON `{message, reason}` in plain words: an exception no
        handler mapped becomes `service.http_error`'s reply (never a class name or traceback)."""
        exc_info = kwargs.get("exc_info")
        if exc_info and not isinstance(exc_info[1], web.HTTPError):
            mapped = service.http_error(exc_info[1])
            self.set_status(mapped.status_code, mapped.reason)
            kwargs["exc_info"] = (type(mapped), mapped, None)
        if exc_info and isinstance(exc_info[1], ServerBusy):
            self.set_header("Retry-After", str(exc_info[1].retry_after))
        super().write_error(self.get_status(), **kwargs)

    def log_exception(self, typ: Any, value: BaseException | None, tb: Any) -> None:
        """One plain warning line per failed request; an unexpected exception's details only at
        debug level (`describe_error`). Messages may hold '%' (a session id from the URL)."""
        if isinstance(value, web.HTTPError):
            self.log.warning("%d %s: %s", value.status_code, scrub_uri(self._request_summary()),
                             scrub_uri(value.log_message or value.reason or ""))  # fmt: skip
        elif value is not None:
            describe_error(value, doing="The request")  # logs it

    def reply(self, model: BaseModel) -> None:
        self.finish(model.model_dump_json())


class SessionsHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        app = await self.runtime.app()
        self.reply(await self.runtime.light(service.session_list, app))


class SessionHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        app = await self.runtime.app()
        self.reply(await self.runtime.light(service.session_detail, app, session_id))


class TurnHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str, turn_id: str) -> None:
        app = await self.runtime.app()
        self.reply(await self.runtime.light(service.turn_detail, app, session_id, turn_id))


class DiscoverHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(DiscoverRequest)
        app = await self.runtime.app()
        self.reply(await asyncio.to_thread(
            app.discover, req.query, limit=req.limit, session_id=req.session_id))  # fmt: skip


class StagingHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        session_id = self.get_query_argument("session_id", None)
        app = await self.runtime.app()
        staged = await asyncio.to_thread(app.staged, session_id=session_id)
        self.reply(StagingList(staged=staged))

    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(StageRequest)
        app = await self.runtime.app()

        def stage() -> StagingList:
            app.stage(req.ids, session_id=req.session_id)
            return StagingList(staged=app.staged(session_id=req.session_id))

        self.reply(await asyncio.to_thread(stage))


class UnstageHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(StageRequest)
        app = await self.runtime.app()

        def unstage() -> StagingList:
            app.unstage(req.ids, session_id=req.session_id)
            return StagingList(staged=app.staged(session_id=req.session_id))

        self.reply(await asyncio.to_thread(unstage))


class SaveStagedHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(SaveRequest)
        app = await self.runtime.app()
        result, text = await asyncio.to_thread(
            app.save_staged, req.to, confirmed=req.confirmed, session_id=req.session_id,
            collection=req.collection)  # fmt: skip
        self.reply(SaveReply(result=result, text=text))


class NoteHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(NoteRequest)
        app = await self.runtime.app()
        result = await asyncio.to_thread(
            app.save_note, req.session_id, to=req.to, turn_id=req.turn_id,
            confirmed=req.confirmed, collection=req.collection, tag_cited=req.tag_cited,
        )  # fmt: skip
        self.reply(result)


class OpenApiHandler(ZocratesHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish(OPENAPI_FILE.read_bytes())


class _StreamHandler(ZocratesHandler):
    """Forwards a running turn's events as SSE while the client listens."""

    _gone: asyncio.Event | None = None

    def on_connection_close(self) -> None:
        if self._gone is not None:
            self._gone.set()
        super().on_connection_close()

    async def start(self, check: Callable[[], None], open_stream: Opener) -> None:
        """Take a turn slot (429 when the server is full), check the request (404/409) and
        stream the turn; the slot is given back when the turn never starts."""
        turns = self.runtime.turns
        turns.reserve(turn_slots(self.runtime.limits()))
        try:
            await asyncio.to_thread(check)
            await self.runtime.warm()
        except Exception as e:
            turns.release()
            raise service.http_error(e) from e  # a refusal: its status, one plain log line
        except BaseException:
            turns.release()
            raise
        await self.stream(turns.start(open_stream))

    async def stream(self, run: TurnRun) -> None:
        """A refusal before the turn holds its session is an HTTP status (409, 404, 400…);
        once it does (`Begun`), the 200 and the headers go out and the events follow."""
        self._gone = asyncio.Event()
        first = await run.next()
        if isinstance(first, BaseException) or first is None:
            # A turn refused before it holds its session gives its slot back before the refusal
            # goes out: a client's next request must not meet a 429 for it (its task ends now).
            await asyncio.wait([run.task])
        if isinstance(first, BaseException):
            raise service.http_error(first) from first
        if first is None:
            raise web.HTTPError(500, "the turn produced no events")
        session_id = first.session_id
        self.set_status(200)
        self.set_header("Content-Type", "text/event-stream; charset=utf-8")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")  # nginx: do not buffer the stream
        if session_id:
            self.set_header(SESSION_HEADER, session_id)
        seq, item = 0, first
        try:
            while True:
                if isinstance(item, BaseException):  # describe_error logs it (details: debug)
                    item = ErrorEvent(
                        session_id=session_id, message=describe_error(item, doing="The turn")
                    )
                if isinstance(item, Begun):
                    await self.flush()  # the headers: the turn runs
                elif item is not None:
                    seq += 1
                    view = None
                    if isinstance(item, Final):  # the App's one view of the answered turn
                        app = await self.runtime.app()
                        view = await asyncio.to_thread(app.view, item.result())
                    self.write(format_event(item, seq, view))
                    await self.flush()
                if item is None or (not isinstance(item, Begun)
                                    and item.type in ("final", "checkpoint", "error")):  # fmt: skip
                    break
                item = await self._next_or_keepalive(run)
        except StreamClosedError:
            self.log.info(
                "zocrates: client left; session %s completes in the background", session_id
            )
            return
        self.finish(set_content_type="text/event-stream; charset=utf-8")

    async def _next_or_keepalive(self, run: TurnRun) -> Any:
        while True:
            if self._gone is not None and self._gone.is_set():
                raise StreamClosedError()
            try:
                return await run.next(KEEPALIVE_SECONDS)
            except TimeoutError:
                self.write(KEEPALIVE)
                await self.flush()


class ChatHandler(_StreamHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(ChatRequest)
        app = await self.runtime.app()
        await self.start(lambda: service.check_chat(app, req),
                         lambda cancel, begun: service.ask(app, req, cancel, begun))  # fmt: skip


class ResumeHandler(_StreamHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        req = self.body_as(ResumeRequest)
        app = await self.runtime.app()
        await self.start(lambda: service.check_resume(app, req),
                         lambda cancel, begun: service.resume(app, req, cancel, begun))  # fmt: skip


class CancelHandler(ZocratesHandler):
    """Stop the turn running in a session on this server: it ends as cancelled, saved (a
    resumed search keeps its checkpoint); its stream ends with that error event."""

    @web.authenticated
    @authorized
    async def post(self, session_id: str) -> None:
        app = await self.runtime.app()
        await self.runtime.light(app.session, session_id)  # an unknown session: 404
        run = self.runtime.turns.cancel(session_id)
        if run is None:
            raise web.HTTPError(
                409, f"no question is running in session {session_id} on this server",
                reason="Conflict")  # fmt: skip
        self.reply(CancelReply(session_id=session_id, turn_id=run.turn_id, cancelled=True))


@dataclass(frozen=True)
class Op:
    """One method of a route: its handler method is `handler.<method>`; the rest is what the
    OpenAPI document says of it (openapi.py). `errors` are the statuses beyond 403 (every
    route's missing token); a `stream` answers with SSE (and 429 when the server is full)."""

    method: Literal["get", "post"]
    id: str
    summary: str
    ok: str  # what the 200 reply is
    reply: type[BaseModel] | None = None  # its JSON model (None: the stream, or any object)
    request: type[BaseModel] | None = None
    errors: dict[int, str] = field(default_factory=dict)
    stream: bool = False
    description: str = ""
    query: tuple[str, ...] = ()  # optional query parameters


@dataclass(frozen=True)
class Route:
    path: str  # as OpenAPI writes it: `{name}` is one path segment
    handler: type[ZocratesHandler]
    ops: tuple[Op, ...]

    def pattern(self) -> str:
        return re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path)


_UNKNOWN = {404: "Unknown session."}
_REFUSED = "Zotero not running or refusing, a malformed body."
API: tuple[Route, ...] = (
    Route("/zocrates/chat", ChatHandler, (Op(
        "post", "chat", "Ask a question; stream the turn", "", request=ChatRequest, stream=True,
        errors={400: "Malformed body (bad JSON, missing prompt, wrong types, unknown keys).",
                **_UNKNOWN, 409: "The session has a pending checkpoint: resume it first."}),)),
    Route("/zocrates/chat/resume", ResumeHandler, (Op(
        "post", "resume", "Answer a checkpoint; stream the continued turn", "",
        request=ResumeRequest, stream=True,
        errors={400: "Malformed body, unknown action, or an interrupt id that is not the pending "
                     "checkpoint's.",
                **_UNKNOWN, 409: "The session has no pending checkpoint."}),)),
    Route("/zocrates/sessions", SessionsHandler, (Op(
        "get", "listSessions", "Sessions, most recently updated first", "The sessions.",
        SessionList),)),
    Route("/zocrates/sessions/{session_id}", SessionHandler, (Op(
        "get", "getSession", "A session's history, with its pending checkpoint if any",
        "The session.", SessionDetail, errors=_UNKNOWN),)),
    Route("/zocrates/sessions/{session_id}/turns/{turn_id}", TurnHandler, (Op(
        "get", "getTurn", "One turn as stored, with its evidence (text, cited, support)",
        "The turn.", TurnResult, errors={404: "Unknown session or turn."}),)),
    Route("/zocrates/sessions/{session_id}/cancel", CancelHandler, (Op(
        "post", "cancelTurn", "Stop the question running in a session on this server",
        "The stop was accepted.", CancelReply,
        errors={**_UNKNOWN, 409: "No question is running in the session on this server."},
        description="The turn ends as cancelled and is saved (a resumed search keeps its "
                    "checkpoint); its stream ends with that error event."),)),
    Route("/zocrates/discover", DiscoverHandler, (Op(
        "post", "discover", "Find papers beyond the library (online.enabled)",
        "Candidates (deduplicated, ranked, in-library marked) and per-source errors.",
        Discovery, DiscoverRequest, {400: "Discovery is off (the message says how to turn it "
        "on; nothing was sent), or a malformed body.", **_UNKNOWN}),)),
    Route("/zocrates/staging", StagingHandler, (
        Op("get", "listStaged", "The staging list (the data home's, or a session's)",
           "The staged candidates, in order.", StagingList, errors=_UNKNOWN,
           query=("session_id",)),
        Op("post", "stage", "Stage discovered candidates (all or none)", "The staging list.",
           StagingList, StageRequest, {400: "An id no discover run of this list produced, or a "
           "malformed body.", **_UNKNOWN}))),
    Route("/zocrates/staging/remove", UnstageHandler, (Op(
        "post", "unstage", "Take candidates off the staging list", "The staging list.",
        StagingList, StageRequest, {400: "A malformed body.", **_UNKNOWN}),)),
    Route("/zocrates/staging/save", SaveStagedHandler, (Op(
        "post", "saveStaged", "Save the staging list to Zotero, or export it as RIS/BibTeX",
        "What was saved, where, and what failed.", SaveReply, SaveRequest,
        {400: f"Not confirmed, nothing staged, {_REFUSED}", **_UNKNOWN}),)),
    Route("/zocrates/notes", NoteHandler, (Op(
        "post", "saveNote", "Save an answer and its cited sources as a Zotero note",
        "Where the note went; items tagged; failures.", SaveResult, NoteRequest,
        {400: f"Not confirmed, no answer in the session, {_REFUSED}", **_UNKNOWN}),)),
    Route("/zocrates/openapi.json", OpenApiHandler, (Op(
        "get", "openapi", "This document", "The OpenAPI document."),)),
)  # fmt: skip
ROUTES: list[tuple[str, type[APIHandler]]] = [(r.pattern(), r.handler) for r in API]

__all__ = ["API", "ROUTES", "SESSION_HEADER", "Op", "Route"]
