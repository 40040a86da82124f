"""What the conversational commands talk to: the local `App`, or a running Jupyter server's
HTTP API through `RemoteClient`. Both satisfy `Client`, so `ask`, `resume`, `chat` and
`sessions` have one implementation and one set of flags for both."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zocrates_nb.errors import UsageError
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


# The commands that may make a data home (indexing, and what writes to Zotero or staging);
# every other command only reads one, and a home that is not there is said, never made.
MAKES_HOME = frozenset({"index", "stage", "add", "note", "discover", "chat", "bench"})


def open_local(args: argparse.Namespace) -> App:
    """The App on `--home`; what opening it repaired (a damaged sessions.db moved aside) is
    said on stderr, once, before the command's own output. A reading command (`status` on a
    mistyped path) never makes a home."""
    from zocrates_nb.app import App

    if getattr(args, "command", None) not in MAKES_HOME and not Path(args.home).exists():
        raise UsageError(f"no data home at {args.home}: check the path, or index a library "
                         f"into it first (zocrates-nb --home {args.home} index …)")  # fmt: skip
    app = App.open(args.home)
    for notice in app.notices:
        print(f"zocrates-nb: {notice}", file=sys.stderr)
    return app


if TYPE_CHECKING:  # mypy checks that both satisfy the protocol

    def _both(app: App, remote: RemoteClient) -> tuple[Client, Client]:
        return app, remote
