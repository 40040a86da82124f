"""What the conversational commands talk to: the local `App`, or a running Jupyter server's
HTTP API through `RemoteClient`. Both satisfy `Client`, so `ask`, `resume`, `chat` and
`sessions` have one implementation and one set of flags for both."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Protocol

from zocrates_nb.events import Event
from zocrates_nb.turn import AskOptions, SessionSummary, TurnResult, TurnView

if TYPE_CHECKING:
    from zocrates_nb.app import App
    from zocrates_nb.server.client import RemoteClient


class Client(Protocol):
    """The turns and sessions of one data home. Turns stream their events asynchronously; the
    look-ups are plain calls (the App's must stay plain for notebooks and scripts)."""

    def ask(
        self, prompt: str, options: AskOptions | None = None, *, session_id: str | None = None
    ) -> AsyncIterator[Event]: ...

    def resume(
        self, session_id: str, interrupt_id: str | None, action: str, guidance: str = ""
    ) -> AsyncIterator[Event]: ...

    def sessions(self, limit: int = 50) -> list[SessionSummary]: ...

    def session(self, session_id: str) -> SessionSummary: ...

    def turn(self, turn_id: str, *, session_id: str | None = None) -> TurnResult: ...

    def view(self, turn: TurnResult, **changes: Any) -> TurnView: ...

    def close(self) -> None: ...


def open_client(args: argparse.Namespace) -> Client:
    """`--server URL [--token T]`: the server's API; otherwise the App on `--home`."""
    if getattr(args, "server", None):
        from zocrates_nb.server.client import RemoteClient

        token = args.token if args.token is not None else os.environ.get("JUPYTER_TOKEN")
        return RemoteClient(args.server, token)
    return open_local(args)


def open_local(args: argparse.Namespace) -> App:
    """The App on `--home`; what opening it repaired (a damaged sessions.db moved aside) is
    said on stderr, once, before the command's own output."""
    from zocrates_nb.app import App

    app = App.open(args.home)
    for notice in app.notices:
        print(f"zocrates-nb: {notice}", file=sys.stderr)
    return app


if TYPE_CHECKING:  # mypy checks that both satisfy the protocol

    def _both(app: App, remote: RemoteClient) -> tuple[Client, Client]:
        return app, remote
