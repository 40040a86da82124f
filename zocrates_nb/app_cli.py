"""The conversational subcommands of `zocrates-nb`: ask, resume, chat, sessions, doctor.

Thin consumers of `App`'s event stream, like the widget and the HTTP server. `--json` prints
one object per turn:
`{session_id, turn_id, status, answer, cited_sources, other_sources, evidence, checkpoint,
usage, seconds}`; batch mode (`ask --questions FILE.jsonl --json`) prints one such line per
question (plus its `id`), each in a fresh session, with the models loaded once.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # imported lazily: building the CLI parser must stay cheap
    from zocrates_nb.app import App
    from zocrates_nb.events import CheckpointEvent, ErrorEvent, Event, Final


class CommandError(Exception):
    """A user-facing error (printed on one line, exit status 2)."""


def _source_json(s: Any) -> dict[str, Any]:
    return {
        "n": s.n,
        "item_key": s.item_key,
        "title": s.title,
        "authors": s.authors,
        "year": s.year,
    }


def _evidence_json(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    keep = (
        "chunk_id",
        "item_key",
        "title",
        "section",
        "page",
        "text",
        "cited",
        "n",
        "support",
        "ranked",
    )
    return [{k: r.get(k) for k in keep} for r in rows]


class TurnPrinter:
    """Collects one turn's events into the JSON object; prints progress for humans."""

    def __init__(
        self,
        app: App,
        *,
        json_mode: bool,
        verbose: bool,
        out: TextIO = sys.stdout,
        err: TextIO = sys.stderr,
    ) -> None:
        self.app = app
        self.json_mode = json_mode
        self.verbose = verbose
        self.out, self.err = out, err
        self.session_id = ""
        self.turn_id = ""
        self.final: Final | None = None
        self.checkpoint: CheckpointEvent | None = None
        self.error: ErrorEvent | None = None
        self.streamed = False
        self.t0 = time.monotonic()

    def feed(self, ev: Event) -> None:
        from zocrates_nb.events import CheckpointEvent, ErrorEvent, Final, Step, Thinking

        self.session_id = ev.session_id or self.session_id
        self.turn_id = ev.turn_id or self.turn_id
        if isinstance(ev, Step):
            if self.verbose or not self.json_mode:
                print(f"  · {ev.label}", file=self.err, flush=True)
        elif isinstance(ev, Thinking):
            if self.verbose:
                print(f"  ~ {ev.role}: {ev.text}", file=self.err, end="", flush=True)
        elif ev.type == "text_delta":
            # The draft streams; what is printed is the verified answer (citations pruned and
            # renumbered), so the terminal only notes that writing has started.
            if not self.streamed and not self.json_mode:
                print("  · writing…", file=self.err, flush=True)
            self.streamed = True
        elif isinstance(ev, Final):
            self.final = ev
        elif isinstance(ev, CheckpointEvent):
            self.checkpoint = ev
        elif isinstance(ev, ErrorEvent):
            self.error = ev

    @property
    def status(self) -> str:
        if self.final is not None:
            return "answered"
        if self.checkpoint is not None:
            return "checkpoint"
        return "error"

    def result(self) -> dict[str, Any]:
        from zocrates_nb.sessions import SessionNotFound

        evidence: list[dict[str, Any]] = []
        if self.turn_id and self.final is not None:
            try:
                evidence = _evidence_json(self.app.turn(self.turn_id).get("evidence") or [])
            except SessionNotFound:
                evidence = []
        f = self.final
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "turn_id": self.turn_id,
            "status": self.status,
            "answer": f.answer if f else "",
            "cited_sources": [_source_json(s) for s in f.cited_sources] if f else [],
            "other_sources": [_source_json(s) for s in f.other_sources] if f else [],
            "evidence": evidence,
            "checkpoint": self.checkpoint.model_dump(mode="json") if self.checkpoint else None,
            "usage": f.usage if f else {},
            "seconds": f.seconds if f else round(time.monotonic() - self.t0, 3),
        }
        if f is not None:
            out["model"] = f.model
        if self.error is not None:
            out["error"] = self.error.message
        return out

    def print_human(self) -> None:
        from zocrates_nb.retrieval.evidence import format_authors

        o = self.out
        if self.final is not None:
            f = self.final
            print("─" * 72, file=o)
            print(f.answer, file=o)
            if f.cited_sources:
                print("\nSources", file=o)
                for s in f.cited_sources:
                    who = format_authors(s.authors)
                    marks = ", ".join(map(str, s.numbers)) if s.numbers else str(s.n)
                    print(
                        f"  [{marks}] {s.title} ({who}{', ' if who else ''}{s.year or 'n.d.'})",
                        file=o,
                    )
            if f.other_sources:
                print("\nOther considered", file=o)
                for s in f.other_sources:
                    print(f"  - {s.title} ({s.year or 'n.d.'})", file=o)
            print(f"\n[{f.seconds:.1f} s · {f.model} · session {self.session_id}]", file=o)
        elif self.checkpoint is not None:
            c = self.checkpoint
            print("\n" + "─" * 72, file=o)
            print(
                f"Deep research checkpoint (extension {c.extension} of {c.max_extensions})", file=o
            )
            print(
                f"  used {c.calls_used}/{c.budget} retrieval calls, "
                f"{c.words_used:,}/{c.word_ceiling:,} words",
                file=o,
            )
            if c.covered_summary:
                print(f"  covered: {c.covered_summary}", file=o)
            for m in c.missing_aspects:
                print(f"  missing: {m}", file=o)
            print(
                f"\nContinue with:\n  zocrates-nb resume --session {self.session_id} "
                "--action extend_budget [--guidance TEXT]\n"
                f"  zocrates-nb resume --session {self.session_id} --action synthesize",
                file=o,
            )
        elif self.error is not None:
            print(f"\nzocrates-nb: error: {self.error.message}", file=self.err)


    def finish(self) -> int:
        """Print the turn (one JSON object, or text for a human); the exit status."""
        if self.json_mode:
            print(json.dumps(self.result(), ensure_ascii=False, indent=1), file=self.out)
        else:
            self.print_human()
        return 0 if self.status != "error" else 1

    def batch_line(self, line_id: Any) -> bool:
        """Print this turn as one line of a batch run; True when it failed."""
        result = {"id": line_id, **self.result()}
        print(json.dumps(result, ensure_ascii=False), file=self.out, flush=True)
        return bool(result["status"] == "error")


def question_lines(path: Path) -> Iterator[tuple[Any, str, dict[str, Any]]]:
    """(id, question, scope) per line of a batch file; a bad line stops the run naming it.

    The scope merges a line's `scope` object with its own `items` / `collections` keys.
    """
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            q = json.loads(line)
            question = str(q["question"])
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise CommandError(f"{path}:{n}: bad question line ({e})") from None
        scope = {**(q.get("scope") or {}),
                 **{k: v for k, v in q.items() if k in ("items", "collections", "collection")}}
        collections = scope.get("collections") or scope.get("collection")
        yield q.get("id", n), question, {
            "items": scope.get("items") or None,
            "collections": [collections] if isinstance(collections, str) else collections,
        }


def print_sessions(rows: list[dict[str, Any]], as_json: bool) -> int:
    if as_json:
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if not rows:
        print("no sessions yet")
    for r in rows:
        pending = f"  [checkpoint {r['pending_checkpoint']}]" if r["pending_checkpoint"] else ""
        print(f"{r['session_id']}  {r['updated'][:19]}  {r['turns']:>3} turns  "
              f"{r['title']}{pending}")
    return 0


def _app(args: argparse.Namespace) -> App:
    from zocrates_nb.app import App

    return App.open(args.home)


async def _ask_one(app: App, printer: TurnPrinter, question: str, **kw: Any) -> None:
    from zocrates_nb.sessions import CheckpointPending, SessionNotFound

    try:
        async for ev in app.ask(question, **kw):
            printer.feed(ev)
    except CheckpointPending as e:
        raise CommandError(
            f"{e} (zocrates-nb resume --session {e.session_id} --action extend_budget|synthesize)"
        ) from None
    except SessionNotFound as e:
        raise CommandError(str(e)) from None


def ask_options(
    args: argparse.Namespace, scope: dict[str, Any] | None = None, *, fresh: bool = False
) -> dict[str, Any]:
    """ask() keywords from the flags (local and remote alike), a batch line's scope
    overriding them; `fresh` starts a new session."""
    scope = scope or {}
    return {
        "session_id": None if fresh else args.session,
        "items": scope.get("items") or args.items,
        "collections": scope.get("collections") or args.collection,
        "hitl": not args.no_hitl,
        "budget": args.budget,
        "word_ceiling": args.word_ceiling,
        "model": args.model,
    }


def ask_command(args: argparse.Namespace) -> int:
    if args.questions:
        if not args.json:
            raise CommandError("--questions needs --json (one output line per question)")
        return asyncio.run(_batch(args))
    if not args.question:
        raise CommandError("give a QUESTION (or --questions FILE.jsonl --json)")
    question = " ".join(args.question)

    async def run() -> int:
        app = _app(args)
        try:
            printer = TurnPrinter(app, json_mode=args.json, verbose=args.verbose)
            await _ask_one(app, printer, question, **ask_options(args))
            return printer.finish()
        finally:
            app.close()

    return asyncio.run(run())


async def _batch(args: argparse.Namespace) -> int:
    lines = question_lines(Path(args.questions))
    app = _app(args)
    failures = 0
    try:
        for line_id, question, scope in lines:
            printer = TurnPrinter(app, json_mode=True, verbose=args.verbose)
            try:
                await _ask_one(app, printer, question, **ask_options(args, scope, fresh=True))
            except CommandError as e:
                from zocrates_nb.events import ErrorEvent

                printer.error = ErrorEvent(message=str(e))
            failures += printer.batch_line(line_id)
    finally:
        app.close()
    return 0 if not failures else 1


def resume_command(args: argparse.Namespace) -> int:
    from zocrates_nb.app import NoPendingCheckpoint
    from zocrates_nb.sessions import SessionNotFound

    async def run() -> int:
        app = _app(args)
        try:
            printer = TurnPrinter(app, json_mode=args.json, verbose=args.verbose)
            try:
                stream = app.resume(args.session, args.interrupt, args.action, args.guidance or "")
                async for ev in stream:
                    printer.feed(ev)
            except (NoPendingCheckpoint, SessionNotFound, ValueError) as e:
                raise CommandError(str(e)) from None
            return printer.finish()
        finally:
            app.close()

    return asyncio.run(run())


def sessions_command(args: argparse.Namespace) -> int:
    app = _app(args)
    try:
        rows = app.sessions(args.limit)
    finally:
        app.close()
    return print_sessions(rows, args.json)


def doctor_command(args: argparse.Namespace) -> int:
    app = _app(args)
    try:
        info = app.doctor()
    finally:
        app.close()
    if args.json:
        print(json.dumps(info, ensure_ascii=False, indent=1, default=str))
        return 0
    models = info.get("models", {})
    print(f"data home        {info['home']}")
    print("models")
    for role, r in (models.get("roles") or {}).items():
        where = f" @ {r['endpoint']}" if r.get("endpoint") else ""
        cloud = "cloud" if r.get("cloud") else "local"
        print(
            f"  {role:<12} {r['model']}{where}  ({cloud}, thinking {r['thinking']}, "
            f"key {r['api_key']})"
        )
    if models.get("error"):
        print(f"  configuration error: {models['error']}")
    print(f"cloud endpoint   {models.get('summary', '')}")
    print(f"embedding model  {info.get('embedding_model')}")
    rerank = info.get("rerank") or {}
    print(f"rerank           {rerank.get('rerank_method')}")
    lib = info.get("library") or {}
    print(
        f"library          {lib.get('items')} items, {lib.get('chunks')} chunks, "
        f"documents {lib.get('documents')}, last indexed {lib.get('last_indexed')}"
    )
    health = info.get("index_health") or {}
    print(
        f"index health     {'ok' if health.get('ok') else 'PROBLEM'} "
        f"{health.get('note') or health.get('error') or ''}".rstrip()
    )
    for p in health.get("problems") or []:
        print(f"  {p['status']}: {p['doc_key']} ({p['item_key']}): {p['error']}")
    print(f"telemetry        {info.get('telemetry')}")
    print(f"sessions         {info.get('sessions')}")
    return 0


# ---------------------------------------------------------------------------- chat
CHAT_HELP = """commands: /new (new session)  /items KEY…  /collection NAME…  /library (clear scope)
          /sessions  /quit"""


class ChatScope:
    """What the next chat question searches; `/items`, `/collection`, `/library` change it."""

    def __init__(self, items: list[str] | None, collections: list[str] | None) -> None:
        self.items = list(items or [])
        self.collections = list(collections or [])

    def command(self, line: str) -> str:
        """Carry out a slash command; 'quit', 'new' or 'sessions' is left to the caller."""
        cmd, *rest = line.split()
        if cmd in ("/quit", "/exit", "/q"):
            return "quit"
        if cmd in ("/new", "/sessions"):
            return cmd[1:]
        if cmd == "/items":
            self.items, self.collections = rest, []
            print(f"scope: items {' '.join(rest) or '(none)'}")
        elif cmd == "/collection":
            self.collections, self.items = ([" ".join(rest)] if rest else []), []
            print(f"scope: collection {self.collections[0] if rest else '(none)'}")
        elif cmd == "/library":
            self.items, self.collections = [], []
            print("scope: the whole library")
        else:
            print(CHAT_HELP)
        return ""


def chat_command(args: argparse.Namespace) -> int:
    return asyncio.run(_chat(args))


def read_line(prompt: str) -> str | None:
    """One line from the terminal; None at end of input."""
    print(prompt, end="", flush=True)
    line = sys.stdin.readline()
    return None if line == "" else line.rstrip("\n")


async def _read_line(prompt: str) -> str | None:
    return await asyncio.to_thread(read_line, prompt)


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


async def _chat(args: argparse.Namespace) -> int:
    from zocrates_nb.sessions import CheckpointPending

    app = _app(args)
    session = args.session or app.new_session()
    scope = ChatScope(args.items, args.collection)
    print(f"zocrates-nb chat · session {session} · {CHAT_HELP}", flush=True)
    try:
        while True:
            pending = app.store.pending_checkpoint(session)
            if pending is not None:
                if not await _checkpoint_prompt(app, session, pending.interrupt_id, args):
                    return 0
                continue
            line = await _read_line("\nyou> ")
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
                    session = app.new_session()
                    print(f"new session {session}")
                elif action == "sessions":
                    for r in app.sessions(20):
                        print(f"  {r['session_id']}  {r['title']}")
                continue
            printer = TurnPrinter(app, json_mode=False, verbose=args.verbose)
            try:
                async for ev in app.ask(
                    line,
                    session_id=session,
                    items=scope.items,
                    collections=scope.collections,
                    hitl=not args.no_hitl,
                    model=args.model,
                    budget=args.budget,
                    word_ceiling=args.word_ceiling,
                ):
                    printer.feed(ev)
            except CheckpointPending:
                continue
            printer.print_human()
    finally:
        app.close()


async def _checkpoint_prompt(
    app: App, session: str, interrupt_id: str, args: argparse.Namespace
) -> bool:
    """Ask the researcher at a pending checkpoint; False when input ended."""
    from zocrates_nb.app import NoPendingCheckpoint

    choice = await asyncio.to_thread(checkpoint_choice)
    if choice is None:
        return False
    action, guidance = choice
    if not action:
        return True

    printer = TurnPrinter(app, json_mode=False, verbose=args.verbose)
    try:
        async for ev in app.resume(session, interrupt_id, action, guidance):
            printer.feed(ev)
    except NoPendingCheckpoint as e:  # answered meanwhile, or being resumed elsewhere
        print(f"zocrates-nb: {e}", file=sys.stderr)
        return True
    printer.print_human()
    return True


# ---------------------------------------------------------------------------- argparse
def add_parsers(sub: Any) -> None:
    """Register ask, resume, chat, sessions and doctor on the CLI's subparsers."""
    ask = sub.add_parser("ask", help="ask a question over the library (offline by default)")
    ask.add_argument("question", nargs="*", help="the question")
    ask.add_argument("--items", nargs="+", metavar="KEY", help="scope: these items")
    ask.add_argument("--collection", nargs="+", metavar="NAME", help="scope: these collections")
    ask.add_argument("--session", help="continue this session (default: a new one)")
    ask.add_argument("--model", help="model for this turn, e.g. openai:gpt-5.2 or offline")
    ask.add_argument("--budget", type=int, help="retrieval tool calls (default 10)")
    ask.add_argument("--word-ceiling", type=int, help="evidence words (default 7,500)")
    ask.add_argument("--no-hitl", action="store_true", help="never pause at a checkpoint")
    ask.add_argument(
        "--questions",
        type=Path,
        help="batch: JSONL of {id, question, items?, collections?} (with --json)",
    )
    ask.add_argument("--verbose", action="store_true", help="show steps and thinking")
    ask.add_argument("--json", action="store_true")
    ask.set_defaults(func=ask_command)

    res = sub.add_parser("resume", help="continue a paused search (deep-research checkpoint)")
    res.add_argument("--session", required=True)
    res.add_argument("--action", required=True, choices=["extend_budget", "synthesize"])
    res.add_argument("--guidance", help="steer the extended search")
    res.add_argument("--interrupt", help="the checkpoint id (default: the pending one)")
    res.add_argument("--verbose", action="store_true")
    res.add_argument("--json", action="store_true")
    res.set_defaults(func=resume_command)

    ch = sub.add_parser("chat", help="interactive multi-turn chat")
    ch.add_argument("--session", help="continue this session")
    ch.add_argument("--items", nargs="+", metavar="KEY")
    ch.add_argument("--collection", nargs="+", metavar="NAME")
    ch.add_argument("--model")
    ch.add_argument("--budget", type=int, help="retrieval tool calls per search")
    ch.add_argument("--word-ceiling", type=int, help="evidence words per search")
    ch.add_argument("--no-hitl", action="store_true")
    ch.add_argument("--verbose", action="store_true")
    ch.set_defaults(func=chat_command)

    se = sub.add_parser("sessions", help="list chat sessions")
    se.add_argument("--limit", type=int, default=50)
    se.add_argument("--json", action="store_true")
    se.set_defaults(func=sessions_command)

    do = sub.add_parser("doctor", help="models, embedding/rerank models, library, index health")
    do.add_argument("--json", action="store_true")
    do.set_defaults(func=doctor_command)
