"""The chat panel: an anywidget whose front end is `widgets/dist/chat.js` (widgets/PROTOCOL.md).

Python holds no presentation logic and no agent logic: it turns front-end messages (typed in
`protocol`) into calls of the public API (`App.ask`, `App.resume`, `App.history`, …) and
forwards the typed events. A turn runs as a background task on the kernel's event loop, so the
notebook stays usable while it streams and the panel's Stop and checkpoint buttons are answered.
The staging list of papers found beyond the library is the `staged` trait; a save runs in a
worker thread and writes only when the front end says the researcher confirmed it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anywidget
import traitlets as t

from zocrates_nb.app import CheckpointPending, describe_error
from zocrates_nb.errors import UsageError
from zocrates_nb.events import CheckpointEvent, ErrorEvent, Event, Final
from zocrates_nb.turn import AskOptions, ScopeChips
from zocrates_nb.widget import protocol as p
from zocrates_nb.widget.assets import asset_path
from zocrates_nb.widget.records import (
    candidate_record,
    fill_examples,
    fill_retractions,
    history_turn,
    library_summary,
    panel_json,
    save_message,
    turn_view,
)
from zocrates_nb.widget.running import LiveTurn, background_loop, running_loop, start_warm_up
from zocrates_nb.widget.scope import apply_scope
from zocrates_nb.widget.writes import PanelWrites

if TYPE_CHECKING:
    from zocrates_nb.app import App

OFFLINE_LABEL = "Embedded offline engine (no language model)"
TERMINAL = ("final", "checkpoint", "error")
STOP_GRACE_SECONDS = 0.5  # a cooperative stop may finish its turn (and save it) this long
SAVE_UNCONFIRMED = (
    "Nothing was saved: saving writes to Zotero or a file, so confirm it in the panel first."
)
MAX_PROMPT_CHARS = 4000  # the front end counts down near it; Python refuses longer ones too
PAUSED_HINT = (
    "A question in this session is paused at a checkpoint: choose “Grant deep "
    "research extension” or “Synthesize with current evidence” on its card first, "
    "or start a new session with the + button."
)
# `chat(home, …)` keywords for the panel: the session, and the options the chips do not set.
WIDGET_OPTIONS = (
    "session_id",
    "warm_up",
    *(f for f in AskOptions.model_fields if f not in ("items", "collections")),
)


class ChatWidget(PanelWrites, anywidget.AnyWidget):
    """The chat panel. Display it in a cell (`zocrates_nb.chat()` or `ChatWidget(app)`)."""

    _esm = asset_path("chat.js")
    _css = asset_path("chat.css")

    session_id = t.Unicode("").tag(sync=True)
    sessions = t.List(t.Dict()).tag(sync=True)
    scope = t.Dict(default_value=ScopeChips().model_dump()).tag(sync=True)  # ScopeChips
    busy = t.Bool(False).tag(sync=True)
    model_label = t.Unicode("").tag(sync=True)
    error = t.Unicode("").tag(sync=True)
    library = t.Dict().tag(sync=True)  # {items, collections, examples}: the empty screen
    widget_id = t.Unicode("").tag(sync=True)  # this model's id: where "Insert" puts the cell
    max_prompt = t.Int(MAX_PROMPT_CHARS).tag(sync=True)
    staged = t.List(t.Dict()).tag(sync=True)  # the open session's staging list (candidates)

    def __init__(
        self,
        app: App,
        *,
        session_id: str | None = None,
        hitl: bool = True,
        budget: int | None = None,
        word_ceiling: int | None = None,
        model: str | None = None,
        warm_up: bool = True,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.app = app
        # What every question from this panel asks for; the chips add the scope.
        self.options = AskOptions(hitl=hitl, budget=budget, word_ceiling=word_ceiling, model=model)
        self._task: asyncio.Task[None] | None = None
        self._cancel: asyncio.Event | None = None
        self._live: LiveTurn | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._save: asyncio.Task[None] | None = None
        self.model_label = _model_label(app, model)
        self.widget_id = str(getattr(self, "model_id", "") or "")
        indexed = self._check_index()
        if indexed and app.notices:  # what opening the home repaired or cannot do, said once
            self._set_error(" ".join(f"{n[:1].upper()}{n[1:].rstrip('.')}." for n in app.notices))
        self.refresh_sessions()
        if session_id:
            self.session_id = session_id
        self.refresh_staged()
        # Load the models while the researcher types the first question (PROTOCOL.md: a turn
        # that must still wait for them shows it as a "loading" step of its own).
        self._warmup = start_warm_up(app) if warm_up and indexed else None
        self.on_msg(self._on_msg)

    # --- public -------------------------------------------------------------------------
    def evidence(self) -> Any:
        """The panel session's evidence DataFrame (`frames.evidence_frame`)."""
        from zocrates_nb.frames import evidence_frame

        return evidence_frame(self.app, self._require_session())

    def audit(self) -> Any:
        """The panel session's audit DataFrame, one row per turn (`frames.audit_frame`)."""
        from zocrates_nb.frames import audit_frame

        return audit_frame(self.app, self._require_session())

    def _require_session(self) -> str:
        if not self.session_id:
            raise UsageError("the panel has no session yet: ask a question in it first")
        return self.session_id

    @property
    def running(self) -> bool:
        """A turn is running (or stopping) in this kernel."""
        return self._task is not None and not self._task.done()

    async def wait(self) -> None:
        """Wait for the running turn and save (if any) to end; handy in scripts and tests."""
        for task in (self._task, self._save, self._writes):
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def handle(self, content: dict[str, Any]) -> None:
        """Handle one front-end message (what `model.send(obj)` delivers): validated with its
        model (`protocol`); an unknown kind is ignored, a malformed one said in the banner."""
        try:
            message = p.inbound(content)
        except p.BadMessage as e:
            if content.get("kind") == "set_scope":
                self.send_state("scope")  # the chips fall back to what Python holds
            self._set_error(str(e))
            return
        if message is None:
            return
        handler: Callable[[Any], None] = getattr(self, f"_on_{message.kind}")
        try:
            handler(message)
        except Exception as e:  # a panel-level problem: shown in the banner, panel stays usable
            self._set_error(describe_error(e))

    def send_message(self, message: p.Outbound) -> None:
        """Send one typed message to the front end (PROTOCOL.md)."""
        self.send(p.payload(message))

    def _check_index(self) -> bool:
        """Whether there is something to search: if not, the banner says so before a question."""
        try:
            if (status := self.app.status(check_retractions=False)).chunks:
                self.library = library_summary(self.app)  # the examples come from a worker
                self._spawn(lambda: fill_examples(self.app, self))
                self._spawn(lambda: fill_retractions(self.app, self))  # online, when due
        except Exception as e:
            self._set_error(describe_error(e))
            return False
        if not status.chunks:
            # Plain text (the banner shows no markdown): commands in quotes, not backticks.
            self._set_error(
                "The library is not indexed yet: run “zocrates-nb index” in a terminal (or "
                "“zocrates-nb index --sample” for the built-in sample library), then ask."
            )
            return False
        return True

    def refresh_sessions(self) -> None:
        try:
            records = self.app.sessions()
        except Exception as e:
            self._set_error(describe_error(e))
            return
        self.sessions = [{"id": r.session_id, "title": r.title, "updated": r.updated.isoformat(),
                          "turns": r.turns, "paused": r.pending_checkpoint is not None}
                         for r in records]  # fmt: skip

    @t.observe("session_id")
    def _session_changed(self, _change: Any) -> None:
        self.refresh_staged()

    def refresh_staged(self) -> None:
        """The `staged` trait: the open session's staging list, in staging order."""
        try:
            staged = self.app.staged(session_id=self.session_id) if self.session_id else []
        except Exception as e:
            self._set_error(describe_error(e))
            return
        self.staged = [candidate_record(c) for c in staged]

    def history_message(self, session_id: str) -> p.History:
        """The `history` message of a session, with this kernel's running turn overlaid."""
        stored = self.app.history(session_id)
        pending = self.app.pending_checkpoint(session_id)
        live = self._live if self.running else None
        turns: list[dict[str, Any]] = []
        for turn in stored:
            if live is not None and live.session_id == session_id and turn.turn_id == live.turn_id:
                turns.append(panel_json(live.view(turn_view(self.app, turn))))
                live = None
                continue
            entry = history_turn(turn, self.app)
            if pending is not None and pending.kind == "answer" and entry["status"] == "error" \
                    and pending.turn_id == turn.turn_id:  # fmt: skip
                entry["retry_id"] = pending.interrupt_id  # "Retry answer" on that turn
            turns.append(entry)
        if live is not None and live.session_id == session_id and live.turn_id:
            turns.append(panel_json(live.view()))
        return p.History(turns=turns)

    # --- message handlers -----------------------------------------------------------------
    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if isinstance(content, dict):
            self.handle(content)

    def _on_ask(self, msg: p.Ask) -> None:
        prompt = msg.prompt.strip()
        if not prompt:
            return
        refusal = ""
        if self.running:
            refusal = "A turn is still running: wait for it or stop it first."
        elif len(prompt) > MAX_PROMPT_CHARS:
            refusal = (
                f"The question is {len(prompt):,} characters long; the limit is "
                f"{MAX_PROMPT_CHARS:,}. Shorten it (put long text in a note instead)."
            )
        elif self.session_id:
            try:
                self.app.check_ask(self.session_id)  # the one rule `ask` refuses by
            except CheckpointPending:
                refusal = PAUSED_HINT
            except Exception as e:  # a turn running elsewhere, a session gone
                refusal = describe_error(e)
        if refusal:
            self._send_event(ErrorEvent(session_id=self.session_id, message=refusal))
            return
        # "Search the whole library" asks once over everything; the panel's scope stays set.
        chips = ScopeChips() if msg.whole_library else ScopeChips.model_validate(self.scope or {})
        options = AskOptions.of(self.options).with_scope(chips.scope)

        def start(session_id: str, cancel: asyncio.Event) -> AsyncIterator[Event]:
            return self.app.ask(prompt, options, session_id=session_id, cancel=cancel)

        self._start(prompt, start, resume=False)

    def _on_resume(self, msg: p.Resume) -> None:
        interrupt_id, action, guidance = msg.interrupt_id, msg.action, msg.guidance.strip()
        if self.running:
            raise RuntimeError("a turn is still running")
        prompt = self._prompt_of_interrupt(interrupt_id)

        def start(session_id: str, cancel: asyncio.Event) -> AsyncIterator[Event]:
            return self.app.resume(session_id, interrupt_id, action, guidance, cancel=cancel)

        self._start(prompt, start, resume=True)

    def _on_stop(self, _msg: p.Stop) -> None:
        task, cancel = self._task, self._cancel
        if task is None or task.done():
            if self.busy:
                self.busy = False
            return
        if cancel is not None:
            cancel.set()
        loop = self._loop_for_turns()
        loop.call_soon_threadsafe(lambda: loop.create_task(self._stop(task)))

    async def _stop(self, task: asyncio.Task[None]) -> None:
        """A cooperative stop first (the turn may save its partial answer), then a hard one."""
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(task), STOP_GRACE_SECONDS)
        if not task.done():
            task.cancel()

    def _on_search_titles(self, msg: p.SearchTitles) -> None:
        query = msg.query
        found = self.app.search_titles(query.strip()) if query.strip() else []
        in_scope = {i.key for i in ScopeChips.model_validate(self.scope or {}).items}
        items: list[p.TitleItem] = []
        collections: list[p.ScopeCollection] = []
        for match in found:
            if match.kind == "collection":
                collections.append(p.ScopeCollection(key=match.key, name=match.title))
            elif match.key not in in_scope:
                items.append(
                    p.TitleItem(
                        key=match.key,
                        title=match.title or match.key,
                        year=match.year,
                        authors=list(match.authors),
                    )
                )
        self.send_message(p.TitleResults(query=query, items=items[:10],
                                         collections=collections[:5]))  # fmt: skip

    def _on_set_scope(self, msg: p.SetScope) -> None:
        try:
            applied = apply_scope(msg.scope, self.app)
        except ValueError as e:
            self.send_state("scope")  # the chips fall back to what Python holds
            self._set_error(describe_error(e))
            return
        self.error = ""
        self.scope = applied.model_dump(mode="json")

    def _on_open_session(self, msg: p.OpenSession) -> None:
        session_id = msg.session_id
        if not session_id:
            return
        message = self.history_message(session_id)  # raises for an unknown session
        if session_id != self.session_id:
            self.session_id = session_id
        self.send_message(message)

    def _on_rename_session(self, msg: p.RenameSession) -> None:
        session_id = msg.session_id
        title = " ".join(msg.title.split())[:200]
        if session_id and title:
            self.app.rename_session(session_id, title)
            self.refresh_sessions()

    def _on_delete_session(self, msg: p.DeleteSession) -> None:
        session_id = msg.session_id
        if not session_id:
            return
        if self.running and self._live is not None and self._live.session_id == session_id:
            raise UsageError("a turn is running in this session: stop it before deleting it")
        self.app.delete_session(session_id)
        self.refresh_sessions()
        if session_id == self.session_id:
            self.session_id = ""
            self.send_message(p.History(turns=[]))

    def _on_new_session(self, _msg: p.NewSession) -> None:
        self.session_id = self.app.new_session()
        self.refresh_sessions()
        self.send_message(p.History(turns=[]))

    # --- the staging list ----------------------------------------------------------------
    def _on_stage(self, msg: p.Stage) -> None:
        self._restage(self.app.stage, msg.ids)

    def _on_unstage(self, msg: p.Unstage) -> None:
        self._restage(self.app.unstage, msg.ids)

    def _restage(self, change: Callable[..., object], ids: list[str]) -> None:
        if ids:
            try:
                change(ids, session_id=self._require_session())
            finally:  # a refusal changes nothing: the cards fall back to the list as it is
                self.refresh_staged()

    def _on_staged_list(self, _msg: p.StagedList) -> None:
        self.refresh_staged()

    def _on_save_staged(self, msg: p.SaveStaged) -> None:
        """Save the staging list (or its `ids`) where the researcher chose, only once they
        confirmed: the App call runs in a worker thread (a connector or Web API save may take
        seconds), then one `save_result` message says what happened."""
        to = msg.to
        refusal = ("Nothing is staged in this session." if not self.session_id
                   else SAVE_UNCONFIRMED if not msg.confirmed else "")  # fmt: skip
        if refusal:
            self.send_message(p.SaveResult(ok=False, to=to, message=refusal))
            return
        if self._save is not None and not self._save.done():
            raise UsageError("a save is still running: wait for its result")
        session_id, ids = self.session_id, msg.ids or None
        titles = {str(c.get("id")): str(c.get("title", "")) for c in self.staged}

        async def save() -> None:
            try:
                result, text = await asyncio.to_thread(
                    self.app.save_staged, to, confirmed=True, session_id=session_id, ids=ids
                )
                reply = save_message(result, text, titles)
            except Exception as e:  # nothing (or not everything) written: say so plainly
                reply = p.SaveResult(ok=False, to=to, message=describe_error(e, doing="Saving"))
            self.send_message(reply)
            if session_id == self.session_id:
                self.refresh_staged()  # what reached Zotero leaves the list

        self._save = self._spawn(save)

    # --- running a turn -------------------------------------------------------------------
    def _spawn(self, job: Callable[[], Any]) -> asyncio.Task[None]:
        """Start the coroutine `job()` as a task on the loop that runs turns (the kernel's, or
        a private loop thread outside one) and return it."""
        loop = self._loop_for_turns()
        if running_loop() is loop:
            return loop.create_task(job())
        made: list[asyncio.Task[None]] = []
        ready = threading.Event()

        def create() -> None:
            made.append(loop.create_task(job()))
            ready.set()

        loop.call_soon_threadsafe(create)
        if not ready.wait(30):
            raise RuntimeError("the panel's background loop did not start the request")
        return made[0]

    def _start(
        self,
        prompt: str,
        stream: Callable[[str, asyncio.Event], AsyncIterator[Event]],
        *,
        resume: bool,
    ) -> None:
        if not self.session_id:
            self.session_id = self.app.new_session()
        session_id = self.session_id
        cancel = self._cancel = asyncio.Event()
        self._task = self._spawn(lambda: self._run(prompt, session_id, stream, cancel, resume))

    async def _run(
        self,
        prompt: str,
        session_id: str,
        stream: Callable[[str, asyncio.Event], AsyncIterator[Event]],
        cancel: asyncio.Event,
        resume: bool,
    ) -> None:
        live = LiveTurn(prompt=prompt, session_id=session_id)
        self._live = live
        events: AsyncIterator[Event] | None = None
        try:
            events = stream(session_id, cancel)
            async for event in events:
                if cancel.is_set() and isinstance(event, ErrorEvent):
                    break  # the turn's own "cancelled" report: a user stop shows no error
                if not live.turn_id:
                    if isinstance(event, ErrorEvent) and not event.turn_id:
                        self._send_event(event)  # refused before a turn began
                        return
                    live.turn_id = event.turn_id
                    self.send_message(p.TurnStarted(turn_id=event.turn_id, prompt=prompt))
                    self.busy = True
                live.apply(event)
                self._send_event(event)
                if event.type in TERMINAL:
                    break
        except asyncio.CancelledError:
            pass  # a user stop: the front end shows "Stopped"; no error event
        except Exception as e:  # refused (CheckpointPending, unknown session…) or failed
            message = PAUSED_HINT if isinstance(e, CheckpointPending) else describe_error(e)
            self._send_event(
                ErrorEvent(session_id=session_id, turn_id=live.turn_id, message=message)
            )
        finally:
            if events is not None:
                with contextlib.suppress(BaseException):
                    await events.aclose()  # type: ignore[attr-defined]
            self._live = None
            self._cancel = None
            if self.busy:
                self.busy = False
            with contextlib.suppress(Exception):
                self.refresh_sessions()
                self.model_label = _model_label(self.app, self.options.model)
                if resume and cancel.is_set() and session_id == self.session_id:
                    # A stopped resume leaves the checkpoint waiting: show its card live again.
                    self.send_message(self.history_message(session_id))

    def _send_event(self, event: Event) -> None:
        """An event as the front end reads it: a `final` is the answered turn's `TurnView`
        (sources linked to Zotero where they come from it); a checkpoint names the papers
        covered so far."""
        if isinstance(event, Final):
            payload = {"type": "final", **panel_json(turn_view(self.app, event.result()))}
        else:
            payload = event.model_dump(mode="json")
        if isinstance(event, CheckpointEvent):
            payload["papers"] = []
            with contextlib.suppress(Exception):
                card = self.app.view(self.app.turn(event.turn_id)).checkpoint
                payload["papers"] = card.papers if card else []
        self.send_message(p.EventMessage(event=payload))

    def _set_error(self, message: str) -> None:
        if self.error == message:
            self.error = ""  # the front end re-shows a banner only on change
        self.error = message

    def _loop_for_turns(self) -> asyncio.AbstractEventLoop:
        loop = running_loop()
        if loop is not None:
            self._loop = loop
            return loop
        if self._loop is None or self._loop.is_closed():
            self._loop = background_loop()
        return self._loop

    def _prompt_of_interrupt(self, interrupt_id: str) -> str:
        """The question of the turn the waiting checkpoint (or kept search) belongs to: its
        snapshot names the turn, so no id is taken apart."""
        if not self.session_id:
            return ""
        with contextlib.suppress(Exception):
            snap = self.app.pending_checkpoint(self.session_id)
            if snap is not None and snap.interrupt_id == interrupt_id:
                return self.app.turn(snap.turn_id).prompt
        return ""


def _model_label(app: App, model: str | None = None) -> str:
    """The header's model line: the offline engine, or the configured model(s)."""
    if model:
        return model
    info = app.models()
    roles = info.roles
    if info.offline or not roles:
        return OFFLINE_LABEL
    names = dict.fromkeys(
        roles[r].model for r in ("coordinator", "search", "synthesizer") if r in roles
    )
    return " · ".join(names)


_APPS: dict[tuple[str, str], App] = {}


def chat(home: App | str | os.PathLike[str] | None = None, **kwargs: Any) -> ChatWidget:
    """Open the chat panel on an App or a data home (default: $ZOCRATES_HOME or ~/.zocrates-nb).

    Widget options (`session_id`, `hitl`, `budget`, `word_ceiling`, `model`) go to the panel;
    any other keyword is a settings override for `App.open`. The App is opened once per home and
    overrides, so re-running the cell does not load the models again.
    """
    from zocrates_nb.app import App

    options = {k: kwargs.pop(k) for k in WIDGET_OPTIONS if k in kwargs}
    if isinstance(home, App):
        return ChatWidget(home, **options)
    key = (
        str(Path(home).expanduser().resolve()) if home is not None else "",
        repr(sorted(kwargs.items())),
    )
    app = _APPS.get(key)
    if app is None:
        app = _APPS[key] = App.open(os.fspath(home) if home is not None else None, **kwargs)
    return ChatWidget(app, **options)
