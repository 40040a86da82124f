"""Flags declared once: a question's options (one per `AskOptions` field), the remote server,
and the output switches; every command that takes them adds them from here, in both modes."""

from __future__ import annotations

import argparse
from typing import Any

from pydantic import ValidationError

from zocrates_nb.errors import UsageError
from zocrates_nb.turn import AskOptions

# Each AskOptions field's flag; a field without one fails `add_ask_options` (and a test).
ASK_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "items": ("--items", {"nargs": "+", "metavar": "KEY"}),
    "collections": ("--collection", {"nargs": "+", "metavar": "NAME"}),
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
    p.add_argument("--json", action="store_true")
