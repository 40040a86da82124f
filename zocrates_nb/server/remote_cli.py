"""`zocrates-nb ask|resume|chat|sessions --server URL [--token T]`: the same commands, driving a
running Jupyter server's HTTP API instead of the local library.

Output is produced by the local commands' own `TurnPrinter`, so `--json` prints exactly the
local shape; only the evidence rows come from the server (`GET …/turns/{turn_id}`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from zocrates_nb.app_cli import (
    CHAT_HELP,
    ChatScope,
    CommandError,
    TurnPrinter,
    ask_options,
    checkpoint_choice,
    print_sessions,
    question_lines,
    read_line,
)

if TYPE_CHECKING:
    from zocrates_nb.app import App
    from zocrates_nb.events import Event
    from zocrates_nb.server.client import RemoteClient

REMOTE_COMMANDS = ("ask", "resume", "chat", "sessions")


def add_server_options(sub: Any) -> None:
    """Add `--server URL` and `--token T` to the remote-capable subcommands."""
    for name in REMOTE_COMMANDS:
        p = sub.choices[name]
        p.add_argument("--server", metavar="URL",
                       help="drive a running Jupyter server (its URL, with any base URL)")
        p.add_argument("--token", help="the Jupyter server's token (default: $JUPYTER_TOKEN)")


class _RemoteTurns:
    """Stands in for the App where `TurnPrinter` looks up a turn's stored evidence."""

    def __init__(self, client: RemoteClient) -> None:
        self.client = client

    def turn(self, turn_id: str) -> dict[str, Any]:
        from zocrates_nb.server.client import ServerError
        from zocrates_nb.sessions import SessionNotFound

        try:
            return self.client.turn(self.client.last_session_id or "", turn_id)
        except ServerError as e:
            raise SessionNotFound(e.message) from None


def _client(args: argparse.Namespace) -> RemoteClient:
    from zocrates_nb.server.client import RemoteClient

    token = args.token if args.token is not None else os.environ.get("JUPYTER_TOKEN")
    return RemoteClient(args.server, token)


def _printer(client: RemoteClient, args: argparse.Namespace, json_mode: bool) -> TurnPrinter:
    return TurnPrinter(cast("App", _RemoteTurns(client)), json_mode=json_mode,
                       verbose=getattr(args, "verbose", False))


def _run(printer: TurnPrinter, events: Iterator[Event], server: str) -> None:
    from zocrates_nb.server.client import ServerError

    try:
        for event in events:
            printer.feed(event)
    except ServerError as e:
        if e.status == 409 and "pending checkpoint" in e.message:
            raise CommandError(
                f"{e.message} (zocrates-nb resume --session ID --action extend_budget|synthesize "
                f"--server {server})"
            ) from None
        raise CommandError(f"{server}: {e.message}" if e.status else e.message) from None


def ask_command(args: argparse.Namespace) -> int:
    if args.questions:
        if not args.json:
            raise CommandError("--questions needs --json (one output line per question)")
        return _batch(args)
    if not args.question:
        raise CommandError("give a QUESTION (or --questions FILE.jsonl --json)")
    with _client(args) as client:
        printer = _printer(client, args, args.json)
        events = client.ask(" ".join(args.question), **ask_options(args))
        _run(printer, events, args.server)
        return printer.finish()


def _batch(args: argparse.Namespace) -> int:
    lines = question_lines(Path(args.questions))
    failures = 0
    with _client(args) as client:
        for line_id, question, scope in lines:
            options = ask_options(args, scope, fresh=True)
            printer = _printer(client, args, True)
            client.last_session_id = None
            try:
                _run(printer, client.ask(question, **options), args.server)
            except CommandError as e:
                from zocrates_nb.events import ErrorEvent

                printer.error = ErrorEvent(message=str(e))
            failures += printer.batch_line(line_id)
    return 0 if not failures else 1


def resume_command(args: argparse.Namespace) -> int:
    with _client(args) as client:
        printer = _printer(client, args, args.json)
        client.last_session_id = args.session

        def events() -> Iterator[Event]:
            yield from client.resume(args.session, args.action, guidance=args.guidance or "",
                                     interrupt_id=args.interrupt)

        _run(printer, events(), args.server)
        return printer.finish()


def sessions_command(args: argparse.Namespace) -> int:
    from zocrates_nb.server.client import ServerError

    with _client(args) as client:
        try:
            rows = client.sessions()[: args.limit]
        except ServerError as e:
            raise CommandError(e.message) from None
    return print_sessions(rows, args.json)


# ---------------------------------------------------------------------------- chat
def chat_command(args: argparse.Namespace) -> int:
    with _client(args) as client:
        session: str | None = args.session
        scope = ChatScope(args.items, args.collection)
        print(f"zocrates-nb chat · {args.server} · session {session or '(new)'} · {CHAT_HELP}",
              flush=True)
        while True:
            pending = _pending(client, session, args.server)
            if pending is not None and session is not None:
                if not _checkpoint_prompt(client, session, pending, args):
                    return 0
                continue
            line = read_line("\nyou> ")
            if line is None:
                return 0
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                action = scope.command(line)
                if action == "quit":
                    return 0
                if action == "new":
                    session = None
                    print("new session (created with the next question)")
                elif action == "sessions":
                    for r in client.sessions()[:20]:
                        print(f"  {r['session_id']}  {r['title']}")
                continue
            printer = _printer(client, args, False)
            events = client.ask(line, session_id=session, items=scope.items,
                                collections=scope.collections, hitl=not args.no_hitl,
                                model=args.model)
            try:
                _run(printer, events, args.server)
            except CommandError as e:
                print(f"zocrates-nb: error: {e}", file=sys.stderr)
                continue
            session = printer.session_id or session
            printer.print_human()


def _pending(client: RemoteClient, session: str | None, server: str) -> str | None:
    from zocrates_nb.server.client import ServerError

    if session is None:
        return None
    try:
        pending = client.session(session).get("pending_checkpoint")
    except ServerError as e:
        raise CommandError(f"{server}: {e.message}") from None
    return str(pending["interrupt_id"]) if pending else None


def _checkpoint_prompt(
    client: RemoteClient, session: str, interrupt_id: str, args: argparse.Namespace
) -> bool:
    """Ask the researcher at a pending checkpoint; False when input ended."""
    choice = checkpoint_choice()
    if choice is None:
        return False
    action, guidance = choice
    if not action:
        return True
    printer = _printer(client, args, False)
    events = client.resume(session, action, guidance=guidance, interrupt_id=interrupt_id)
    _run(printer, events, args.server)
    printer.print_human()
    return True
