"""`%%zocrates` and `%zocrates`: ask from a notebook cell, for researchers who prefer cells to a
panel (as jupyter-ai's `%%ai` users do). `%load_ext zocrates_nb` registers them.

    %%zocrates --items ABCD1234 --model ollama:qwen3
    How do the two papers bound the time a lock stays unavailable?

    %zocrates --collection "Distributed systems" Why do lock services use lock delays?

The options are the CLI's `ask` flags, declared once (`--items KEY…`, `--collection NAME…`,
`--model`, `--no-hitl`, `--budget`, `--word-ceiling`), plus `--home DIR` and `--session ID`
(continue a session). The cell shows the chat panel on that session, asking the question: the
same answer view (steps, the answer with its checked citations, sources, checkpoint cards) and
the same App, so the turn is kept in the data home like any other. A mistake is one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from zocrates_nb.cli.options import Parser, add_ask_options, ask_options, trailing_text
from zocrates_nb.errors import UsageError, ZocratesError

if TYPE_CHECKING:
    from zocrates_nb.widget import ChatWidget


class _Help(Exception):
    """`--help` was asked for (printed already): nothing to run."""


class _MagicParser(Parser):
    """The magic's options: a mistake is a `UsageError` (shown as one line), never an exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `%zocrates --help`)")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if message:
            print(message, file=sys.stderr, end="")
        raise _Help


def parser() -> argparse.ArgumentParser:
    p = _MagicParser(prog="%zocrates", description="Ask your library from a cell; the cell "
                     "(or the rest of the line) is the question.")  # fmt: skip
    p.add_argument("question", nargs="*", help="the question (%%zocrates: the cell's text)")
    p.add_argument("--home", type=Path,
                   help="data home (default: $ZOCRATES_HOME or ~/.zocrates-nb)")
    p.add_argument("--session", help="continue this session (default: a new one)")
    add_ask_options(p)
    return p


def zocrates(line: str, cell: str | None = None) -> ChatWidget | None:
    """The magic: the panel asking the question, or None after printing a mistake."""
    import shlex

    try:
        args = parser().parse_args(shlex.split(line))
        trailing_text(args)
        question = (cell if cell is not None else " ".join(args.question)).strip()
        if cell is not None and args.question:
            raise UsageError("%%zocrates takes its question from the cell, not the first line")
        if not question:
            raise UsageError("give a question (%zocrates QUESTION, or the cell of %%zocrates)")
        return ask(question, args)
    except _Help:
        return None
    except ZocratesError as e:
        print(f"zocrates: {e}", file=sys.stderr)
        return None


def ask(question: str, args: argparse.Namespace) -> ChatWidget:
    """Open the panel on the session and start the question in it (checked first, so a bad
    scope or model is said in the cell at once)."""
    from zocrates_nb.turn import ScopeChips
    from zocrates_nb.widget import chat

    options = ask_options(args)
    panel = chat(args.home, session_id=args.session, hitl=options.hitl, budget=options.budget,
                 word_ceiling=options.word_ceiling, model=options.model)  # fmt: skip
    panel.app.check_scope(options.scope)
    panel.app.check_models(options.model)
    if args.session:
        panel.app.session(args.session)  # an unknown session: said now
    panel.scope = ScopeChips.of(options.scope).model_dump()
    panel.handle({"kind": "ask", "prompt": question})
    return panel


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext zocrates_nb`: register `%zocrates` and `%%zocrates`."""
    ipython.register_magic_function(zocrates, magic_kind="line_cell", magic_name="zocrates")


__all__ = ["load_ipython_extension", "zocrates"]
