"""`App`: zocrates-nb on one data home, the one API every surface uses.

    from zocrates_nb import App

    app = App.open("~/research")          # or $ZOCRATES_HOME, or ~/.zocrates-nb
    app.index(zotero_dir="~/Zotero")       # or zotero_local=, zotero_web=, folder=, sample=
    app.search("how does raft elect a leader")[0].title
    async for event in app.ask("How does Raft elect a leader?"):
        ...                                # Step, TextDelta, Thinking, then Final/Checkpoint/Error
    # a turn paused at a CheckpointEvent `cp` (cp.interrupt_id == f"{cp.turn_id}-ext1"):
    async for event in app.resume(cp.session_id, cp.interrupt_id, "extend_budget"):
        ...
    app.history(session_id)                    # [TurnResult, …]

It mirrors the CLI: `zocrates-nb index|status|search|toc|read|convert|ask|resume|sessions|doctor`
are these methods. A turn ends with exactly one `Final` (its `TurnResult`), `CheckpointEvent` or
`ErrorEvent`; an error leaves the session usable. A new question while a checkpoint waits raises
`CheckpointPending` at once; a resume of a checkpoint another resume holds (in any process)
raises `CheckpointClaimed`.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from zocrates_nb.app.core import (
    MAX_QUERY_CHARS,
    MAX_QUESTION_CHARS,
    overrides_from_kwargs,
    user_text,
)
from zocrates_nb.app.papers import Papers
from zocrates_nb.app.records import LibraryRecords
from zocrates_nb.config import default_home
from zocrates_nb.errors import UsageError
from zocrates_nb.events import Event
from zocrates_nb.turn import AskOptions

if TYPE_CHECKING:
    from zocrates_nb.app.runner import OnBegin, TurnRunner
    from zocrates_nb.index import Index
    from zocrates_nb.sessions import SessionStore

Action = Literal["extend_budget", "synthesize"]
ACTIONS: tuple[Action, ...] = ("extend_budget", "synthesize")

__all__ = ["ACTIONS", "MAX_QUERY_CHARS", "MAX_QUESTION_CHARS", "Action", "App", "open_app"]


class App(LibraryRecords, Papers):
    """zocrates-nb on one data home: the index, the session store, the agents. Its methods come
    in concerns: the parts and sessions (core.py), the library (records.py), papers beyond it
    (papers.py), and turns (here)."""

    @functools.cached_property
    def _runner(self) -> TurnRunner:
        from zocrates_nb.app.runner import TurnRunner  # the agents: loaded by the first turn

        return TurnRunner(self)

    @classmethod
    def open(
        cls,
        home: Path | str | os.PathLike[str] | None = None,
        *,
        index: Index | None = None,
        store: SessionStore | None = None,
        role_models: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> App:
        """Open the app on a data home (default: $ZOCRATES_HOME or ~/.zocrates-nb).

        Keyword overrides beat the config file: `App.open(models={"base": "ollama:qwen3"})`,
        `App.open(retrieval__budget=5)`.
        """
        return cls(
            Path(home) if home else default_home(),
            overrides_from_kwargs(overrides),
            index=index,
            store=store,
            role_models=role_models,
        )

    def ask(
        self,
        prompt: str,
        options: AskOptions | None = None,
        *,
        session_id: str | None = None,
        cancel: asyncio.Event | None = None,
        on_begin: OnBegin | None = None,
        **option_kwargs: Any,
    ) -> AsyncIterator[Event]:
        """Ask a question; returns the turn's event stream.

        Options come as an `AskOptions` or as its keywords (`items=`, `collections=`, `hitl=`,
        `budget=`, `word_ceiling=`, `model=`). Raises at once (`check_ask`) `CheckpointPending`
        when the session has a checkpoint waiting, `SessionNotFound` for an unknown session id, and
        `UsageError` for an empty or over-long question, options out of bounds, or a scope
        too large or naming collections or item keys the index lacks (`limits.*`), and
        `SessionBusy` while another turn of the session runs (in any process). A question that
        loses the race for its session raises SessionBusy from the stream, before any event.
        `cancel` stops the turn (saved as cancelled); `on_begin(session_id, turn_id)` is
        called once the turn holds its session.
        """
        prompt = user_text(prompt or "", max_chars=MAX_QUESTION_CHARS, what="the question")
        if not prompt:
            raise UsageError("ask needs a question")
        try:
            opts = AskOptions.of(options, **option_kwargs)
        except ValidationError as e:
            raise UsageError.invalid(e) from None
        self.check_scope(opts.scope)
        if session_id is None:
            session_id = self.new_session()
        else:
            self.check_ask(session_id)
        return self._runner.ask(session_id, prompt, opts, cancel, on_begin)

    def resume(
        self,
        session_id: str,
        interrupt_id: str | None,
        action: Action | str,
        guidance: str = "",
        *,
        cancel: asyncio.Event | None = None,
        on_begin: OnBegin | None = None,
    ) -> AsyncIterator[Event]:
        """Continue a paused search: `extend_budget` (with optional guidance) or `synthesize`.

        Works in a new process: the run continues from the snapshot in the session store. Raises
        at once `NoPendingCheckpoint` when nothing (or another interrupt id) waits, and
        `CheckpointClaimed` while another resume — in this or another process — holds it (a
        resume that loses that race raises it from the stream, before any event).
        """
        if action not in ACTIONS:
            raise UsageError(f"action must be one of {', '.join(ACTIONS)}, not {action!r}")
        guidance = user_text(guidance or "", max_chars=MAX_QUESTION_CHARS, what="the guidance")
        snapshot = self.check_resume(session_id, interrupt_id)
        if snapshot.kind == "answer" and action != "synthesize":
            raise UsageError(
                "this turn's search is kept but its answer failed: only `synthesize` retries it"
            )
        return self._runner.resume(session_id, snapshot.interrupt_id, action, guidance, cancel,
                                   on_begin)  # fmt: skip


def open_app(home: Path | str | os.PathLike[str] | None = None, **overrides: Any) -> App:
    """`App.open` as a function (for notebooks)."""
    return App.open(home, **overrides)
