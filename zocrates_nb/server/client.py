"""A client of the HTTP API: what `zocrates-nb ask|chat|resume|sessions --server URL` drive.

It satisfies the CLI's `Client` protocol as `App` does: `ask`/`resume` stream the same typed
events (parsed from the server's SSE with `httpx.AsyncClient`), the look-ups return the same
records (`SessionSummary`, `TurnResult`), and refusals raise `ServerError`, a `ZocratesError`
with the server's plain message. It imports nothing of Jupyter.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote

import httpx
from httpx_sse import EventSource

from zocrates_nb.errors import ZocratesError
from zocrates_nb.events import Event, event_from_json
from zocrates_nb.server.schema import SessionDetail, SessionList
from zocrates_nb.turn import AskOptions, SessionSummary, TurnResult, TurnView

SESSION_HEADER = "X-Zocrates-Session"


class ServerError(ZocratesError):
    """The server refused a request; `status` is the HTTP status (0: unreachable)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(message)


class RemoteClient:
    """`RemoteClient("http://127.0.0.1:8888/", token)`; the URL is the Jupyter server's (with
    its base URL, if any). The token defaults to `$JUPYTER_TOKEN`."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        self.base = url.rstrip("/") + "/zocrates/"
        token = token if token is not None else os.environ.get("JUPYTER_TOKEN")
        self._headers = {"Authorization": f"token {token}"} if token else {}
        self._timeout = timeout
        self._http = httpx.Client(headers=self._headers, timeout=timeout, trust_env=False)
        self.last_session_id: str | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- turns ------------------------------------------------------------------------------
    async def ask(
        self,
        prompt: str,
        options: AskOptions | None = None,
        *,
        session_id: str | None = None,
        **option_kwargs: Any,
    ) -> AsyncIterator[Event]:
        """Stream one turn (in a new session unless `session_id` names one)."""
        opts = AskOptions.of(options, **option_kwargs)
        body = {"prompt": prompt, "session_id": session_id,
                **opts.model_dump(exclude_defaults=True)}  # fmt: skip
        async for event in self._stream("chat", {k: v for k, v in body.items() if v is not None}):
            yield event

    async def resume(
        self, session_id: str, interrupt_id: str | None, action: str, guidance: str = ""
    ) -> AsyncIterator[Event]:
        """Answer the session's pending checkpoint (looked up when `interrupt_id` is None)."""
        if interrupt_id is None:
            interrupt_id = self.session(session_id).pending_checkpoint
            if not interrupt_id:
                raise ServerError(409, f"session {session_id} has no pending checkpoint")
        self.last_session_id = session_id
        body = {"session_id": session_id, "interrupt_id": interrupt_id, "action": action,
                "guidance": guidance}  # fmt: skip
        async for event in self._stream("chat/resume", body):
            yield event

    async def _stream(self, path: str, body: dict[str, Any]) -> AsyncIterator[Event]:
        # No read timeout on streams: a search may think for minutes between events.
        timeout = httpx.Timeout(self._timeout, read=None)
        try:
            async with (
                httpx.AsyncClient(headers=self._headers, timeout=timeout, trust_env=False) as http,
                # ASCII JSON: a lone surrogate travels as a `\\ud800` escape (the server makes
                # it safe) instead of failing to encode here.
                http.stream(
                    "POST",
                    self.base + path,
                    content=json.dumps(body),
                    headers={"Content-Type": "application/json"},
                ) as response,
            ):
                if response.status_code != 200:
                    await response.aread()
                    raise _refusal(response)
                self.last_session_id = response.headers.get(SESSION_HEADER)
                async for message in EventSource(response).aiter_sse():
                    if not message.data:  # a keepalive comment
                        continue
                    event = event_from_json(json.loads(message.data))
                    self.last_session_id = event.session_id or self.last_session_id
                    yield event
        except httpx.HTTPError as e:
            raise ServerError(0, f"connection to {self.base} failed: {e}") from None

    # --- look-ups ---------------------------------------------------------------------------
    def sessions(self, limit: int = 50) -> list[SessionSummary]:
        return SessionList.model_validate(self._fetch("sessions")).sessions[:limit]

    def session(self, session_id: str) -> SessionSummary:
        return self.detail(session_id).summary()

    def detail(self, session_id: str) -> SessionDetail:
        """The session with its turns, as the server shows it."""
        return SessionDetail.model_validate(self._fetch(f"sessions/{quote(session_id, safe='')}"))

    def turn(self, turn_id: str, *, session_id: str | None = None) -> TurnView:
        """One turn as stored (in `session_id`, by default the last session streamed)."""
        sid = quote(session_id or self.last_session_id or "", safe="")
        return TurnView.model_validate(self._fetch(f"sessions/{sid}/turns/{quote(turn_id)}"))

    def view(self, turn: TurnResult, **changes: Any) -> TurnView:
        """The server's view of a turn (what its API serves), `changes` applied; a turn the
        server does not hold (a refusal before it began) is shown as it is."""
        view = turn if isinstance(turn, TurnView) else None
        if view is None and turn.turn_id:
            try:
                view = self.turn(turn.turn_id, session_id=turn.session_id or None)
            except ServerError:
                view = None
        return (view or TurnView.of(turn)).model_copy(update=changes)

    def _fetch(self, path: str) -> Any:
        try:
            response = self._http.get(self.base + path)
        except httpx.HTTPError as e:
            raise ServerError(0, f"cannot reach {self.base}: {e}") from None
        if response.status_code != 200:
            raise _refusal(response)
        return response.json()


def _refusal(response: httpx.Response) -> ServerError:
    try:
        message = str(response.json().get("message") or response.reason_phrase)
    except (ValueError, AttributeError):
        message = response.text[:500] or response.reason_phrase
    if response.status_code == 403:
        message = f"{message}: the server wants its Jupyter token (--token or $JUPYTER_TOKEN)"
    return ServerError(response.status_code, message)
