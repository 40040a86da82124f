"""Flags declared once: a question's options (one per `AskOptions` field), the remote server,
and the output switches; every command that takes them adds them from here, in both modes."""

from __future__ import annotations

import argparse
import re
from typing import Any, NoReturn

from pydantic import ValidationError

from zocrates_nb.errors import UsageError
from zocrates_nb.turn import AskOptions


class Parser(argparse.ArgumentParser):
    """argparse, with a mistake said in one line (and where to read more), exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


JSON_HELP = "print machine-readable JSON instead of text"
KEY_SHAPE = re.compile(r"[A-Z0-9]{8}")  # a Zotero key (an item, attachment or note)


class Values(argparse._ExtendAction):
    """A repeated-value option (`--items A B`, `--tag a b`, or given again: `--tag a --tag b`).
    It remembers that it was the last such option, so that a question or query written after
    its values (`ask --items KEY "question"`) can be given back to the command."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:  # fmt: skip
        super().__call__(parser, namespace, values, option_string)
        namespace.values_last = self.dest


def positive_int(text: str) -> int:
    """A count of 1 or more (`--limit`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is too small: give 1 or more")
    return value


def trailing_text(args: argparse.Namespace) -> None:
    """`ask --items KEY "question"`, `search --collection NAME "query"`: the words after a
    repeated-value option's values that the command lacks as its question or query. An item
    key is never read as a question (a question is not eight capitals and digits); of names,
    the last one is the question when there are several and no question was given."""
    last = getattr(args, "values_last", None)
    if not last or getattr(args, "questions", None) or getattr(args, "queries", None):
        return
    values = getattr(args, last) or []
    for name in ("question", "query"):
        if not hasattr(args, name) or getattr(args, name) or len(values) < 2:
            continue
        if last == "items" and KEY_SHAPE.fullmatch(values[-1]):
            return
        text = values.pop()
        setattr(args, name, [text] if name == "question" else text)


# Each AskOptions field's flag; a field without one fails `add_ask_options` (and a test).
ASK_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "items": ("--items", {"nargs": "+", "metavar": "KEY", "action": Values}),
    "collections": ("--collection", {"nargs": "+", "metavar": "NAME", "action": Values}),
    "hitl": ("--no-hitl", {"action": "store_false", "default": True,
                           "help": "never pause at a deep-research checkpoint"}),
    "budget": ("--budget", {"type": int, "metavar": "N",
                            "help": "retrieval tool calls per search (default 10)"}),
    "word_ceiling": ("--word-ceiling", {"type": int, "metavar": "WORDS",
                                        "help": "evidence words per search (default 7,500)"}),
    "model": ("--model", {"metavar": "MODEL",
                          "help": "model for this turn, e.g. openai:gpt-5.2 or offline"}),
}  # fmt: skip


def add_ask_options(p: argparse.ArgumentParser) -> None:
    for name, field in AskOptions.model_fields.items():
        flag, kw = ASK_FLAGS[name]
        p.add_argument(flag, dest=name, **{"help": field.description, **kw})


def ask_options(args: argparse.Namespace, **overrides: Any) -> AskOptions:
    """The question's options from the flags (a batch line's scope overriding them)."""
    given = {name: getattr(args, name) for name in AskOptions.model_fields}
    try:
        return AskOptions.of(None, **{**given, **overrides})
    except ValidationError as e:
        raise UsageError.invalid(e) from None


def add_server_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", metavar="URL",
                   help="drive a running Jupyter server (its URL, with any base URL)")
    p.add_argument("--token", help="the Jupyter server's token (default: $JUPYTER_TOKEN)")


def add_output_options(p: argparse.ArgumentParser, *, verbose: bool = True) -> None:
    if verbose:
        p.add_argument("--verbose", action="store_true", help="show steps and thinking")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
