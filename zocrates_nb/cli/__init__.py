"""The `zocrates-nb` command line: one parser, every command a call of `App` (or, for the
conversational commands with `--server URL`, of a running server's API through the same
`Client` protocol). A user-facing error prints one line and exits with status 2."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from zocrates_nb import __version__
from zocrates_nb.cli import discovery
from zocrates_nb.cli import library as lib
from zocrates_nb.cli.options import (
    JSON_HELP,
    Parser,
    Values,
    add_ask_options,
    add_output_options,
    add_server_options,
    positive_int,
    trailing_text,
)
from zocrates_nb.cli.terminal import safe_streams
from zocrates_nb.config import default_home
from zocrates_nb.errors import UsageError, ZocratesError
from zocrates_nb.turn import CHUNK_TYPES


def _conversation(name: str) -> Callable[[argparse.Namespace], int]:
    """A command of cli/conversation.py, imported when it runs: it needs the agents, and
    importing them takes seconds (every process that imports this package would pay it, the
    indexer's converter workers included: spawn re-imports the `zocrates-nb` script)."""

    def run(args: argparse.Namespace) -> int:
        from zocrates_nb.cli import conversation

        command: Callable[[argparse.Namespace], int] = getattr(conversation, name)
        return command(args)

    return run


def mcp_command(args: argparse.Namespace) -> int:
    from zocrates_nb.mcp_server import serve

    serve(args.home, http=args.http, port=args.port)
    return 0


def bench_command(args: argparse.Namespace) -> int:
    try:
        from zocrates_nb import bench
    except ImportError:  # the wheel leaves the benchmarks out
        raise UsageError("the benchmarks run from a source checkout of zocrates-nb") from None

    result = bench.run(args)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=1))
    else:
        for key, value in result.items():
            print(f"{key:>22}: {value}")
    return 0


def _library_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ix = sub.add_parser("index", help="index a library (incremental)")
    src = ix.add_argument_group("library source (default: auto-detect ~/Zotero)")
    src.add_argument("--zotero-dir", type=Path,
                     help="Zotero data directory (zotero.sqlite + storage/)")
    src.add_argument("--zotero-local", action="store_true",
                     help="Zotero's local API (Zotero running)")
    src.add_argument("--zotero-web", metavar="LIBRARY_ID",
                     help="Zotero Web API library id ($ZOTERO_API_KEY)")
    src.add_argument("--group", action="store_true", help="--zotero-web names a group library")
    src.add_argument("--folder", type=Path, help="a plain folder of PDF/HTML/Markdown files")
    src.add_argument("--sample", action="store_true", help="the built-in sample library")
    add_output_options(ix, verbose=False)
    ix.set_defaults(func=lib.index_command)

    st = sub.add_parser("status", help="what is indexed")
    add_output_options(st, verbose=False)
    st.set_defaults(func=lib.status_command)

    se = sub.add_parser("search", help="hybrid search over the index")
    se.add_argument("query", nargs="?")
    se.add_argument("--items", nargs="+", metavar="KEY", action=Values,
                    help="item or attachment keys")
    se.add_argument("--collection", nargs="+", metavar="NAME", action=Values,
                    help="collection names or keys")
    se.add_argument("--type", choices=CHUNK_TYPES, help="only passages of this kind")
    se.add_argument("--limit", type=positive_int, default=10, help="at most this many (10)")
    se.add_argument("--queries", type=Path,
                    help="batch mode: JSONL of {id, query, items?, collections?}")
    add_output_options(se, verbose=False)
    se.set_defaults(func=lib.search_command)

    cv = sub.add_parser("convert", help="convert one file and print its table of contents")
    cv.add_argument("file")
    add_output_options(cv, verbose=False)
    cv.set_defaults(func=lib.convert_command)

    tc = sub.add_parser("toc", help="a document's compact outline (parent, attachment or note key)")
    tc.add_argument("key")
    add_output_options(tc, verbose=False)
    tc.set_defaults(func=lib.toc_command)

    rd = sub.add_parser("read", help="read sections/figures/tables of a document: read KEY s2,f1")
    rd.add_argument("key")
    rd.add_argument("asset_ids", nargs="+", help="s1…, f1…, t1…, abstract, full, p4 (any form)")
    add_output_options(rd, verbose=False)
    rd.set_defaults(func=lib.read_command)


def _conversation_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ask = sub.add_parser("ask", help="ask a question over the library (offline by default)")
    ask.add_argument("question", nargs="*", help="the question")
    ask.add_argument("--session", help="continue this session (default: a new one)")
    add_ask_options(ask)
    ask.add_argument("--questions", type=Path,
                     help="batch: JSONL of {id, question, items?, collections?} (with --json)")
    ask.set_defaults(func=_conversation("ask_command"))

    res = sub.add_parser("resume", help="continue a paused search (deep-research checkpoint)")
    res.add_argument("--session", required=True)
    res.add_argument("--action", required=True, choices=["extend_budget", "synthesize"])
    res.add_argument("--guidance", help="steer the extended search")
    res.add_argument("--interrupt", help="the checkpoint id (default: the pending one)")
    res.set_defaults(func=_conversation("resume_command"))

    ch = sub.add_parser("chat", help="interactive multi-turn chat")
    ch.add_argument("--session", help="continue this session")
    add_ask_options(ch)
    ch.set_defaults(func=_conversation("chat_command"), json=False)

    se = sub.add_parser("sessions", help="list chat sessions")
    se.add_argument("--limit", type=positive_int, default=50, help="at most this many (50)")
    se.set_defaults(func=_conversation("sessions_command"))

    for p in (ask, res, ch, se):
        add_server_options(p)
    for p in (ask, res):
        add_output_options(p)
    ch.add_argument("--verbose", action="store_true", help="show steps and thinking")
    se.add_argument("--json", action="store_true", help=JSON_HELP)

    do = sub.add_parser("doctor", help="models, embedding/rerank models, library, index health")
    add_output_options(do, verbose=False)
    do.set_defaults(func=_conversation("doctor_command"))


def build_parser() -> argparse.ArgumentParser:
    p = Parser(
        prog="zocrates-nb",
        description="Research assistant over your Zotero library (offline by default).",
    )
    p.add_argument("--home", type=Path, default=None,
                   help="data home (default: $ZOCRATES_HOME or ~/.zocrates-nb)")
    p.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    p.add_argument("--debug", action="store_true",
                   help="print the cause of a failure (its traceback) and zocrates-nb's debug "
                        "log on stderr (also: ZOCRATES_DEBUG=1)")  # fmt: skip
    sub = cast("argparse._SubParsersAction[argparse.ArgumentParser]",
               p.add_subparsers(dest="command", required=True))  # of `Parser`s
    _library_parsers(sub)
    _conversation_parsers(sub)
    discovery.add_parsers(sub)

    mc = sub.add_parser("mcp", help="serve the library to agents over the Model Context Protocol "
                                    "(search, outline, read, ask)")
    mc.add_argument("--http", action="store_true",
                    help="streamable HTTP on 127.0.0.1 (default: stdio, for a client to start)")
    mc.add_argument("--port", type=positive_int, default=8765, help="--http: the port (8765)")
    mc.set_defaults(func=mcp_command)

    be = sub.add_parser("bench", help="benchmarks")
    be.add_argument("what", choices=["index", "search", "beir", "tokens", "ui", "scale",
                                     "server", "offline"])  # fmt: skip
    be.add_argument("dir", nargs="?", type=Path,
                    help="beir: a BEIR dataset directory; offline: a JSONL of questions "
                         "({\"question\", \"kind\": single|compound}; default: built in)")
    be.add_argument("--split", default="test", help="beir: qrels split (default test)")
    be.add_argument("--queries-limit", type=int, help="beir: only the first N queries")
    be.add_argument("--no-rerank", action="store_true",
                    help="beir: skip hybrid+rerank (the fallback reranker takes seconds a query "
                         "on a CPU)")
    be.add_argument("--zotero-dir", type=Path, help="library to benchmark (default: the sample)")
    be.add_argument("--folder", type=Path)
    be.add_argument("--repeat", type=int, default=3, help="runs per measurement (median)")
    be.add_argument("--cold", action="store_true",
                    help="ui, offline: also time the first question of fresh processes (ui: "
                         "with and without the panel's background warm-up)")
    be.add_argument("--indexed", action="store_true",
                    help="ui, server: use --home as it is (already indexed; sessions are added "
                         "to it)")
    be.add_argument("--json", action="store_true", help=JSON_HELP)
    be.add_argument("--papers", default="500",
                    help="scale: synthetic library size(s), e.g. 500 or 500,2000")
    be.add_argument("--work", type=Path,
                    help="scale: where the library and its homes go (default: a temp dir)")
    be.add_argument("--corpus", type=Path,
                    help="scale: a BEIR corpus for the papers' text (default: ../shared SciFact)")
    be.add_argument("--chroma-server", action="store_true",
                    help="scale: also measure a `chroma run` server against embedded Chroma")
    be.add_argument("--vectors", choices=("model", "hashed"), default="model",
                    help="scale: hashed = a loopback stand-in embedding server (no model): "
                         "every figure but the embedding compute, for sizes that would take "
                         "hours to embed here")
    be.add_argument("--agent", action="store_true",
                    help="tokens: what a full-budget search pass sends a (scripted) model")
    be.add_argument("--compare", action="store_true",
                    help="tokens --agent: also measure the pass with its whole history resent")
    be.set_defaults(func=bench_command)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    # Text that cannot be encoded (a lone surrogate from undecodable argv or input bytes)
    # prints as a replacement character instead of crashing the command.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="replace")
    reconfigure = getattr(sys.stdin, "reconfigure", None)
    if callable(reconfigure):  # undecodable chat input reaches the App, which makes it safe
        reconfigure(errors="surrogateescape")
    args = build_parser().parse_args(argv)
    trailing_text(args)
    args.home_flag = args.home is not None  # hints then name the same --home
    _logging(args.debug or os.environ.get("ZOCRATES_DEBUG", "").strip() not in ("", "0"))
    args.home = (args.home or default_home()).expanduser().resolve()
    func: Callable[[argparse.Namespace], int] = args.func
    if argv is None and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        # `kill`, a service manager, a closing terminal: ended like Ctrl-C (a running turn is
        # saved as cancelled, one plain line), not cut off mid-write by the signal.
        signal.signal(signal.SIGTERM, _terminated)
    # Library, paper and model text never drives the terminal (the MCP server's stdout is a
    # protocol, not a terminal).
    shown = contextlib.nullcontext() if func is mcp_command else safe_streams()
    with shown:
        return _run(func, args, argv)


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace,
         argv: Sequence[str] | None) -> int:  # fmt: skip
    try:
        return func(args)
    except BrokenPipeError:  # `zocrates-nb search … | head`: the reader has what it wanted
        _discard_stdout()
        return 0
    except ZocratesError as e:
        print(f"zocrates-nb: error: {lib.as_typed(str(e), args)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        ended = isinstance(e, Terminated)
        print(f"zocrates-nb: {'terminated' if ended else 'interrupted'}", file=sys.stderr)
        # A second Ctrl-C while the workers and stores close would end the process by the
        # signal instead (status -2, a traceback): the one line above has said it all. Only
        # the command's own process, which ends now: a caller in-process (a notebook, a test)
        # keeps its Ctrl-C, and the processes it starts would inherit an ignored one.
        if argv is None:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        return 143 if ended else 130
    except Exception as e:  # not ours to explain: one plain line, details at debug level
        from zocrates_nb.app import describe_error, disk_full

        message = disk_full(e, args.home) or describe_error(e, doing="The command")
        message = message.replace("debug logging shows the details", "run again with --debug "
                                  "to see its cause")  # fmt: skip
        print(f"zocrates-nb: error: {message}", file=sys.stderr)
        return 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is, so that it ends the way Ctrl-C ends it."""


def _terminated(signum: int, frame: object) -> None:
    raise Terminated


def _logging(debug: bool) -> None:
    """`--debug`: zocrates-nb's log, causes and tracebacks included, on stderr. Otherwise a
    failure is the one `zocrates-nb: error:` line (no second line from the log)."""
    logger = logging.getLogger("zocrates_nb")
    for old in [h for h in logger.handlers if h.get_name() == "zocrates-nb-cli"]:
        logger.removeHandler(old)  # a second run in one process (tests) starts afresh
    handler: logging.Handler = logging.NullHandler()
    if debug:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("zocrates-nb [%(levelname)s] %(name)s: %(message)s"))
    handler.set_name("zocrates-nb-cli")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.NOTSET)


def _discard_stdout() -> None:
    """Send what is still buffered for a closed pipe nowhere, so the exit is quiet (no
    "Exception ignored … BrokenPipeError" when Python flushes stdout on the way out)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


__all__ = ["build_parser", "main"]
