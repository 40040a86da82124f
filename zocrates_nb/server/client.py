"""A client of the HTTP API: what `zocrates-nb ask/chat/resume --server URL` drive.

It yields the same typed events as `App.ask`, parsed from the server's SSE stream, so a caller
handles a remote turn exactly like a local one. It imports nothing of Jupyter.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

import httpx

from zocrates_nb.events import Event, event_from_json
from zocrates_nb.server.sse import parse_sse

SESSION_HEADER = "X-Zocrates-Session"


class ServerError(RuntimeError):
    """The server refused a request; `status` is the HTTP status (409: checkpoint pending…)."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
        super().__init__(f"server answered {status}: {message}")


class RemoteClient:
    """`RemoteClient("http://127.0.0.1:8888/", token)`; the URL is the Jupyter server's (with
    its base URL, if any). The token defaults to `$JUPYTER_TOKEN`."""

    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        self.base = url.rstrip("/") + "/zocrates/"
        token = token if token is not None else os.environ.get("JUPYTER_TOKEN")
        headers = {"Authorization": f"token {token}"} if token else {}
        # No read timeout on streams: a search may think for minutes between events.
        self._http = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout, read=None), trust_env=False
        )
        self.last_session_id: str | None = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> RemoteClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- requests -------------------------------------------------------------------------
    def _check(self, response: httpx.Response) -> None:
        if response.status_code == 200:
            return
        response.read()
        try:
            message = str(response.json().get("message") or response.reason_phrase)
        except (ValueError, AttributeError):
            message = response.text[:500] or response.reason_phrase
        if response.status_code == 403:
            message = f"{message}: the server wants its Jupyter token (--token or $JUPYTER_TOKEN)"
        raise ServerError(response.status_code, message)

    def _get(self, path: str) -> Any:
        try:
            response = self._http.get(self.base + path)
        except httpx.HTTPError as e:
            raise ServerError(0, f"cannot reach {self.base}: {e}") from e
        self._check(response)
        return response.json()

    def _stream(self, path: str, body: dict[str, Any]) -> Iterator[Event]:
        try:
            with self._http.stream("POST", self.base + path, json=body) as response:
                self._check(response)
                self.last_session_id = response.headers.get(SESSION_HEADER)
                for message in parse_sse(response.iter_lines()):
                    event = event_from_json(json.loads(message.data))
                    self.last_session_id = event.session_id or self.last_session_id
                    yield event
        except httpx.HTTPError as e:
            raise ServerError(0, f"connection to {self.base} failed: {e}") from e

    # --- the API ----------------------------------------------------------------------------
    def ask(
        self,
        prompt: str,
        *,
        session_id: str | None = None,
        items: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        **options: Any,
    ) -> Iterator[Event]:
        """Stream one turn. `options`: `mode`, `hitl`, `budget`, `word_ceiling` (see the
        OpenAPI document)."""
        body: dict[str, Any] = {"prompt": prompt}
        if session_id:
            body["session_id"] = session_id
        if items:
            body["items"] = list(items)
        if collections:
            body["collections"] = list(collections)
        body.update({k: v for k, v in options.items() if v is not None})
        return self._stream("chat", body)

    def resume(
        self,
        session_id: str,
        action: str,
        *,
        guidance: str = "",
        interrupt_id: str | None = None,
    ) -> Iterator[Event]:
        """Answer the session's pending checkpoint (its interrupt id is looked up if not given)."""
        if interrupt_id is None:
            pending = self.session(session_id).get("pending_checkpoint")
            if not pending:
                raise ServerError(409, f"session {session_id} has no pending checkpoint")
            interrupt_id = str(pending["interrupt_id"])
        body = {"session_id": session_id, "interrupt_id": interrupt_id, "action": action,
                "guidance": guidance}
        return self._stream("chat/resume", body)

    def sessions(self) -> list[dict[str, Any]]:
        data: list[dict[str, Any]] = self._get("sessions")["sessions"]
        return data

    def session(self, session_id: str) -> dict[str, Any]:
        data: dict[str, Any] = self._get(f"sessions/{quote(session_id, safe='')}")
        return data

    def turn(self, session_id: str, turn_id: str) -> dict[str, Any]:
        """One turn as stored: answer, sources, evidence (text, cited, support), usage."""
        sid, tid = quote(session_id, safe=""), quote(turn_id, safe="")
        data: dict[str, Any] = self._get(f"sessions/{sid}/turns/{tid}")
        return data
