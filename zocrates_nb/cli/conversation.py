"""ask, resume, chat and sessions, one implementation over a `Client` (the local App, or a
Jupyter server with `--server URL`); and doctor (local).

`ask --questions FILE.jsonl --json` is a batch: one JSON line per question (with its `id`),
each in a fresh session (with `--session S`, each a turn of S, in order), the models loaded
once; a bad line gets an error line and the batch goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from zocrates_nb.app import describe_error
from zocrates_nb.cli.client import Client, open_client, open_local
from zocrates_nb.cli.library import as_typed
from zocrates_nb.cli.options import ask_options
from zocrates_nb.cli.printer import TurnPrinter
from zocrates_nb.errors import UsageError, ZocratesError
from zocrates_nb.events import ErrorEvent
from zocrates_nb.turn import Scope

CHAT_HELP = """commands: /new (new session)  /items KEY…  /collection NAME…  /library (clear scope)
          /sessions  /quit"""


def _printer(client: Client, args: argparse.Namespace, json_mode: bool) -> TurnPrinter:
    return TurnPrinter(client, json_mode=json_mode, verbose=getattr(args, "verbose", False))


def _run(coro: Any) -> int:
    result: int = asyncio.run(coro)
    return result


# ---------------------------------------------------------------------------- ask
def ask_command(args: argparse.Namespace) -> int:
    if args.questions:
        if not args.json:
            raise UsageError("--questions needs --json (one output line per question)")
        return _run(_batch(args))
    if not args.question:
        raise UsageError("give a QUESTION (or --questions FILE.jsonl --json)")
    options = ask_options(args)
    client = open_client(args)
    try:
        _check_ready(client, options.model)
        printer = _printer(client, args, args.json)
        question = " ".join(args.question)
        _run(printer.run(client.ask(question, options, session_id=args.session)))
        return printer.finish()
    finally:
        client.close()


async def _batch(args: argparse.Namespace) -> int:
    lines = question_lines(Path(args.questions))
    client = open_client(args)
    failures = 0
    try:
        for line_id, question, scope in lines:
            printer = _printer(client, args, True)
            try:
                if isinstance(question, BadLine):
                    raise UsageError(question.message)
                options = ask_options(args, **scope)
                # --session S: every question a turn of S, in order (else each its own).
                await printer.run(client.ask(question, options, session_id=args.session))
            except ZocratesError as e:
                printer.error = ErrorEvent(message=describe_error(e))
            failures += printer.batch_line(line_id)
    finally:
        client.close()
    return 0 if not failures else 1


class BadLine(NamedTuple):
    """A batch line that is not a question: reported on its own output line, the batch goes
    on."""

    message: str


def question_lines(path: Path) -> Iterator[tuple[Any, str | BadLine, dict[str, Any]]]:
    """(id, question, scope options) per line of a batch file; a bad line yields a `BadLine`
    in place of its question. A line's `scope` object and its own `items` / `collections` keys
    override the flags."""
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    for n, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
        except json.JSONDecodeError as e:
            yield n, BadLine(f"{path.name}:{n}: not valid JSON (column {e.colno})"), {}
            continue
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            line_id = q.get("id", n) if isinstance(q, dict) else n
            yield line_id, BadLine(f'{path.name}:{n}: the line has no "question" text'), {}
            continue
        question, given = q["question"], q.get("scope")
        given = {} if given is None else given
        if not isinstance(given, dict):
            yield q.get("id", n), BadLine(f'{path.name}:{n}: "scope" must be an object'), {}
            continue
        scope = {**given,
                 **{k: v for k, v in q.items() if k in ("items", "collections", "collection")}}
        collections = scope.get("collections")
        collections = scope.get("collection") if collections is None else collections
        if isinstance(collections, str) and collections.strip():
            collections = [collections]  # one name
        # null or [] leaves the flags' scope; anything else but a list of strings is refused
        # by `AskOptions` (never read as no scope, which would search the whole library)
        overrides = {"items": scope.get("items"), "collections": collections}
        yield q.get("id", n), question, {k: v for k, v in overrides.items() if v not in (None, [])}


# ---------------------------------------------------------------------------- resume
def resume_command(args: argparse.Namespace) -> int:
    client = open_client(args)
    try:
        printer = _printer(client, args, args.json)
        events = client.resume(args.session, args.interrupt, args.action, args.guidance or "")
        _run(printer.run(events))
        return printer.finish()
    finally:
        client.close()


# ---------------------------------------------------------------------------- sessions
def sessions_command(args: argparse.Namespace) -> int:
    client = open_client(args)
    try:
        rows = client.sessions(args.limit)
    finally:
        client.close()
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print("no sessions yet")
    for r in rows:
        pending = f"  [checkpoint {r.pending_checkpoint}]" if r.pending_checkpoint else ""
        print(f"{r.session_id}  {r.updated.isoformat()[:19]}  {r.turns:>3} turns  "
              f"{r.title}{pending}")
    return 0


# ---------------------------------------------------------------------------- chat
class ChatScope:
    """What the next chat question searches (a `Scope`); `/items`, `/collection`, `/library`
    change it."""

    def __init__(self, items: list[str] | None, collections: list[str] | None) -> None:
        self.scope = Scope(items=list(items or []), collections=list(collections or []))

    def command(self, line: str) -> str:
        """Carry out a slash command; 'quit', 'new' or 'sessions' is left to the caller."""
        cmd, *rest = line.split()
        if cmd in ("/quit", "/exit", "/q"):
            return "quit"
        if cmd in ("/new", "/sessions"):
            return cmd[1:]
        if cmd == "/items":
            self.scope = Scope(items=rest)
            print(f"scope: items {' '.join(rest) or '(none)'}")
        elif cmd == "/collection":
            self.scope = Scope(collections=[" ".join(rest)] if rest else [])
            print(f"scope: collection {' '.join(rest) or '(none)'}")
        elif cmd == "/library":
            self.scope = Scope()
            print("scope: the whole library")
        else:
            print(CHAT_HELP)
        return ""


def read_line(prompt: str) -> str | None:
    """One line from the terminal; None at end of input."""
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\n")


def checkpoint_choice() -> tuple[str, str] | None:
    """Ask at a pending checkpoint: (action, guidance), ("", "") to ask again, None at end of
    input."""
    print("\nThe search paused: [e]xtend the search, or [s]ynthesize the answer now?")
    choice = read_line("checkpoint (e/s)> ")
    if choice is None:
        return None
    choice = choice.strip().lower()
    if choice not in ("e", "s", "extend", "synthesize"):
        print("answer e or s")
        return "", ""
    if not choice.startswith("e"):
        return "synthesize", ""
    return "extend_budget", (read_line("guidance for the search (optional)> ") or "").strip()


def _check_ready(client: Client, model: str | None) -> None:
    """A model that cannot be set up (`--model nonsense`, a missing API key) or a home with
    nothing indexed is a usage error said before the turn starts (exit status 2, with what to
    run), not a failed turn. A server checks its own."""
    from zocrates_nb.app import App
    from zocrates_nb.cli.library import not_indexed

    if isinstance(client, App):
        client.check_models(model)
        if not client.status().chunks:
            raise not_indexed(client)


def chat_command(args: argparse.Namespace) -> int:
    options = ask_options(args)  # bad flags fail before the chat starts
    client = open_client(args)
    try:
        _check_ready(client, options.model)
        return _run(_chat(client, args))
    finally:
        client.close()


async def _chat(client: Client, args: argparse.Namespace) -> int:
    session: str | None = args.session
    scope = ChatScope(args.items, args.collections)
    where = f" · {args.server}" if args.server else ""
    print(f"zocrates-nb chat{where} · session {session or '(new)'} · {CHAT_HELP}", flush=True)
    while True:
        if session is not None and client.session(session).pending_checkpoint:
            if not await _checkpoint(client, session, args):
                return 0
            continue
        line = await asyncio.to_thread(read_line, "\nyou> ")
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
                for r in client.sessions(20):
                    print(f"  {r.session_id}  {r.title}")
            continue
        options = ask_options(args).with_scope(scope.scope)
        printer = _printer(client, args, False)
        try:
            await printer.run(client.ask(line, options, session_id=session))
        except ZocratesError as e:
            print(f"zocrates-nb: error: {e}", file=sys.stderr)
            continue
        session = printer.session_id or session
        printer.print_human()


async def _checkpoint(client: Client, session: str, args: argparse.Namespace) -> bool:
    """Ask the researcher at a pending checkpoint; False when input ended."""
    choice = await asyncio.to_thread(checkpoint_choice)
    if choice is None:
        return False
    action, guidance = choice
    if not action:
        return True
    printer = _printer(client, args, False)
    try:
        await printer.run(client.resume(session, None, action, guidance))
    except ZocratesError as e:  # answered meanwhile, or being resumed elsewhere
        print(f"zocrates-nb: {e}", file=sys.stderr)
        return True
    printer.print_human()
    return True


# ---------------------------------------------------------------------------- doctor
def doctor_command(args: argparse.Namespace) -> int:
    with open_local(args) as app:
        info = app.doctor()
    if args.json:
        print(json.dumps(info.model_dump(mode="json"), ensure_ascii=False, indent=1))
        return 0
    models = info.models
    print(f"data home        {info.home}")
    print("models")
    for role, r in models.roles.items():
        where = f" @ {r.endpoint}" if r.endpoint else ""
        cloud = "cloud" if r.cloud else "local"
        print(f"  {role:<12} {r.model}{where}  ({cloud}, thinking {r.thinking}, "
              f"key {r.api_key})")
    if models.error:
        print(f"  configuration error: {models.error}")
    print(f"cloud endpoint   {models.summary}")
    print(f"privacy          {info.privacy.summary}")
    for d in info.privacy.destinations:
        place = "another machine" if d.leaves else "this machine"
        when = f"; {d.when}" if d.when else ""
        print(f"  {d.what} at {d.where} ({place}{when}): {d.sends}")
    print(f"embedding model  {info.embedding_model}")
    print(f"rerank           {info.rerank.rerank_method if info.rerank else None}")
    if (lib := info.library) is not None:  # None: index health says why
        print(f"library          {lib.items} items, {lib.chunks} chunks, "
              f"documents {lib.documents}, last indexed {lib.last_indexed}")
    health = info.index_health
    print(f"index health     {'ok' if health.ok else 'PROBLEM'} "
          f"{as_typed(health.note or health.error or '', args)}".rstrip())
    for line in health.vectors:
        print(f"  vectors: {line}")
    for p in health.problems:
        print(f"  {p.status}: {p.doc_key} ({p.item_key}): {p.error}")
    if info.retractions is not None:
        print(f"retractions      {info.retractions.message}")
    print(f"telemetry        {info.telemetry}")
    print(f"sessions         {info.sessions}")
    return 0
