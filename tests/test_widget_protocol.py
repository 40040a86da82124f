"""The chat panel's Python side, spoken to through its comm exactly as the front end would
(widgets/PROTOCOL.md): real App, real index of the built-in sample library, real session store.

A recording comm stands in for the browser: it keeps every trait update and custom message the
widget sends, and `send_from_front_end` delivers messages the way the kernel does.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any

from zocrates_nb.app import App
from zocrates_nb.widget import ChatWidget
from zocrates_nb.widget_comm import RecordingComm, recording_comms, send_from_front_end

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FACTUAL = "How does reciprocal rank fusion combine rankings?"
BROAD = ("How does reciprocal rank fusion combine rankings, and why do lock services use lock "
         "delays?")
TIMEOUT = 240.0


def run(coro: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, TIMEOUT))


def panel(app: App, **options: Any) -> tuple[ChatWidget, RecordingComm]:
    """A panel on a recording comm; no background warm-up unless asked (its "Loading models…"
    step would come first: tests/test_widget_experience.py covers it)."""
    options.setdefault("warm_up", False)
    with recording_comms():
        widget = ChatWidget(app, **options)
    assert isinstance(widget.comm, RecordingComm)
    return widget, widget.comm


def kinds(comm: RecordingComm) -> list[str]:
    """The order of what the front end saw: custom message kinds and busy flips."""
    out = []
    for s in comm.sent:
        if s.method == "custom":
            kind = s.content["kind"]
            out.append(f"event:{s.content['event']['type']}" if kind == "event" else kind)
        elif s.method == "update" and "busy" in s.content:
            out.append(f"busy={s.content['busy']}")
    return out


def ended(comm: RecordingComm) -> bool:
    return any(e["type"] in ("final", "checkpoint", "error") for e in comm.events())


def test_panel_opens_with_assets_model_label_and_no_error(app: App) -> None:
    widget, _ = panel(app)
    assert "turn_started" in widget._esm and "msg:custom" in widget._esm
    assert ".zc-chat" in widget._css
    assert widget.model_label == "Embedded offline engine (no language model)"
    assert widget.error == ""
    assert widget.session_id == ""
    assert widget.scope == {"mode": "library", "items": [], "collections": []}


def test_a_question_streams_steps_and_a_cited_answer_then_history_reloads(app: App) -> None:
    widget, comm = panel(app)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": FACTUAL})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()

    run(scenario())
    order = kinds(comm)
    # PROTOCOL.md ordering: turn_started, busy, events, the terminal event, then busy false.
    assert order[0] == "turn_started" and order[1] == "busy=True"
    assert order[-2:] == ["event:final", "busy=False"]
    assert "event:step" in order and "event:text_delta" in order
    assert order.index("event:step") < order.index("event:text_delta")

    started = comm.messages("turn_started")[0]
    final = comm.events("final")[0]
    assert started["prompt"] == FACTUAL and started["turn_id"] == final["turn_id"]
    assert final["session_id"] == widget.session_id != ""
    assert all(e["turn_id"] == final["turn_id"] for e in comm.events())
    streamed = "".join(e["text"] for e in comm.events("text_delta"))
    assert "Reciprocal Rank Fusion" in streamed
    cited = {c["title"] for c in final["citations"]}
    assert "Hybrid Retrieval for Research Libraries: A Practical Primer" in cited
    assert all(0.0 <= c["support"] <= 1.0 for c in final["citations"] if c["support"] is not None)
    assert "[1]" in final["answer"]
    assert widget.sessions[0]["id"] == widget.session_id
    assert widget.sessions[0]["title"].startswith("How does reciprocal rank fusion")

    # A view that renders later asks for the history of the open session.
    shown = [e["label"] for e in comm.events("step") if e["phase"] != "done"]
    comm.clear()
    send_from_front_end(widget, {"kind": "open_session", "session_id": widget.session_id})
    (history,) = comm.messages("history")
    (turn,) = history["turns"]
    assert turn["turn_id"] == final["turn_id"] and turn["status"] == "done"
    assert turn["prompt"] == FACTUAL and turn["answer"] == final["answer"]
    assert [c["chunk_id"] for c in turn["citations"]] == [c["chunk_id"]
                                                          for c in final["citations"]]
    assert turn["cited_sources"] and turn["model"].startswith("embedded offline engine")
    assert turn["seconds"] > 0 and turn["checkpoint"] is None
    # The steps trail comes back too, each step timed.
    assert shown and [s["label"] for s in turn["steps"]] == shown
    assert all(s["seconds"] >= 0 for s in turn["steps"])


def test_checkpoint_buttons_resume_the_same_turn_also_after_a_kernel_restart(app: App) -> None:
    widget, comm = panel(app, budget=1)

    async def ask_until_checkpoint() -> dict[str, Any]:
        send_from_front_end(widget, {"kind": "ask", "prompt": BROAD})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()
        (checkpoint,) = comm.events("checkpoint")
        return checkpoint

    checkpoint = run(ask_until_checkpoint())
    assert kinds(comm)[-2:] == ["event:checkpoint", "busy=False"]
    assert checkpoint["extension"] == 1 and checkpoint["max_extensions"] == 2
    assert checkpoint["calls_used"] >= checkpoint["budget"] == 1
    assert checkpoint["missing_aspects"]
    turn_id = checkpoint["turn_id"]
    session_id = widget.session_id

    # A new question while the card waits is refused with one error event, turn_id "".
    comm.clear()

    async def ask_again() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": "And something else?"})
        await comm.wait_for(lambda c: c.events("error"), 30)
        await widget.wait()

    run(ask_again())
    (refusal,) = comm.events("error")
    assert refusal["turn_id"] == "" and "checkpoint" in refusal["message"]
    assert comm.updates("busy") == [] and kinds(comm) == ["event:error"]

    # The kernel restarts: a new App and a new panel on the same data home.
    with App.open(app.home) as app2:
        widget2, comm2 = panel(app2)
        send_from_front_end(widget2, {"kind": "open_session", "session_id": session_id})
        assert widget2.session_id == session_id
        (history,) = comm2.messages("history")
        (turn,) = history["turns"]
        assert turn["status"] == "checkpoint" and turn["turn_id"] == turn_id
        assert turn["checkpoint"]["interrupt_id"] == checkpoint["interrupt_id"]
        assert turn["checkpoint"]["missing_aspects"] == checkpoint["missing_aspects"]

        comm2.clear()

        async def synthesize() -> None:
            send_from_front_end(widget2, {"kind": "resume",
                                          "interrupt_id": checkpoint["interrupt_id"],
                                          "action": "synthesize", "guidance": ""})
            await comm2.wait_for(ended, TIMEOUT)
            await widget2.wait()

        run(synthesize())
        order = kinds(comm2)
        assert order[:2] == ["turn_started", "busy=True"]
        assert order[-2:] == ["event:final", "busy=False"]
        assert comm2.messages("turn_started")[0]["turn_id"] == turn_id
        assert comm2.messages("turn_started")[0]["prompt"] == BROAD
        final = comm2.events("final")[0]
        assert final["turn_id"] == turn_id and final["citations"]

        comm2.clear()
        send_from_front_end(widget2, {"kind": "open_session", "session_id": session_id})
        (turn,) = comm2.messages("history")[0]["turns"]
        assert turn["status"] == "done" and turn["checkpoint"] is None


def test_stop_cancels_the_running_turn_without_an_error_and_the_session_stays_usable(
    app: App,
) -> None:
    widget, comm = panel(app)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": FACTUAL})
        await comm.wait_for(lambda c: c.events("step"), TIMEOUT)
        # A second view opens mid-turn: it gets the running turn with its steps so far.
        send_from_front_end(widget, {"kind": "open_session", "session_id": widget.session_id})
        send_from_front_end(widget, {"kind": "stop"})
        await widget.wait()
        await comm.wait_for(lambda c: c.updates("busy")[-1:] == [False], 10)

    run(scenario())
    (running,) = comm.messages("history")[0]["turns"]
    assert running["status"] == "running" and running["steps"]
    assert running["turn_id"] == comm.messages("turn_started")[0]["turn_id"]
    assert not widget.running and widget.busy is False
    assert comm.events("error") == [] and comm.events("final") == []
    turn = app.turn(running["turn_id"])
    assert turn.status == "cancelled"

    comm.clear()

    async def greet() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": "Hello! Who are you?"})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()

    run(greet())
    final = comm.events("final")[0]
    assert final["session_id"] == widget.session_id and "zocrates" in final["answer"].lower()
    send_from_front_end(widget, {"kind": "open_session", "session_id": widget.session_id})
    statuses = [t["status"] for t in comm.messages("history")[-1]["turns"]]
    assert statuses == ["stopped", "done"]


def test_search_titles_and_scope_chips(app: App) -> None:
    widget, comm = panel(app)
    send_from_front_end(widget, {"kind": "search_titles", "query": "retrieval"})
    (results,) = comm.messages("title_results")
    assert results["query"] == "retrieval"
    titles = {i["title"]: i for i in results["items"]}
    primer = titles["Hybrid Retrieval for Research Libraries: A Practical Primer"]
    assert primer["authors"] == ["Ada Marlow", "Tomás Reyes"] and primer["year"] == 2024
    assert results["collections"] == []

    # A valid pick is applied; the trait carries the applied value.
    pick = {"mode": "items", "items": [{"key": primer["key"], "title": "", "year": None}],
            "collections": []}
    send_from_front_end(widget, {"kind": "set_scope", "scope": pick})
    assert widget.error == ""
    assert widget.scope == {"mode": "items", "collections": [], "items": [
        {"key": primer["key"], "title": primer["title"], "year": 2024}]}

    # Papers already in scope are not offered again.
    send_from_front_end(widget, {"kind": "search_titles", "query": "retrieval"})
    again = comm.messages("title_results")[-1]
    assert primer["key"] not in {i["key"] for i in again["items"]}

    refused = [
        {"mode": "items", "items": [], "collections": []},
        {"mode": "items", "collections": [],
         "items": [{"key": f"K{i}", "title": "x", "year": None} for i in range(6)]},
        {"mode": "items", "items": [{"key": "NOSUCHKY", "title": "x", "year": None}],
         "collections": []},
        {"mode": "collections", "items": [], "collections": [{"key": "NOPE", "name": "x"}]},
        {"mode": "everything", "items": [], "collections": []},
    ]
    for scope in refused:
        comm.clear()
        send_from_front_end(widget, {"kind": "set_scope", "scope": scope})
        assert widget.error, scope
        assert widget.scope["items"][0]["key"] == primer["key"]  # unchanged
        assert comm.updates("scope"), "the chips must fall back to the scope trait"
    assert "1 to 5 papers" in _error_for(widget, refused[1])
    assert "NOSUCHKY" in _error_for(widget, refused[2])

    send_from_front_end(widget, {"kind": "set_scope", "scope": {"mode": "library"}})
    assert widget.error == "" and widget.scope["mode"] == "library"


def _error_for(widget: ChatWidget, scope: dict[str, Any]) -> str:
    send_from_front_end(widget, {"kind": "set_scope", "scope": scope})
    return widget.error


def test_a_scoped_question_searches_only_the_picked_paper(app: App) -> None:
    widget, comm = panel(app)
    key = next(h.key for h in app.search_titles("Leases") if h.title.startswith("Leases"))
    send_from_front_end(widget, {"kind": "set_scope", "scope": {
        "mode": "items", "items": [{"key": key, "title": "", "year": None}], "collections": []}})

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": "What is a fencing token?"})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()

    run(scenario())
    final = comm.events("final")[0]
    assert final["citations"] and {c["item_key"] for c in final["citations"]} == {key}
    assert {s["item_key"] for s in final["other_sources"]} <= {key}
    assert app.turn(final["turn_id"]).scope.items == [key]

    async def whole_library() -> None:  # "Search the whole library": once, the chips kept
        send_from_front_end(widget, {"kind": "ask", "prompt": "What is a fencing token?",
                                     "whole_library": True})  # fmt: skip
        await comm.wait_for(lambda c: len(c.events("final")) == 2, TIMEOUT)
        await widget.wait()

    run(whole_library())
    again = comm.events("final")[1]
    assert app.turn(again["turn_id"]).scope.kind == "library"
    assert widget.scope["mode"] == "items" and widget.scope["items"][0]["key"] == key


def test_new_session_and_bad_session_ids(app: App) -> None:
    widget, comm = panel(app)
    send_from_front_end(widget, {"kind": "new_session"})
    first = widget.session_id
    assert first and comm.messages("history") == [{"kind": "history", "turns": []}]
    assert first in {s["id"] for s in widget.sessions}
    send_from_front_end(widget, {"kind": "new_session"})
    assert widget.session_id not in ("", first)

    send_from_front_end(widget, {"kind": "open_session", "session_id": "no-such-session"})
    assert "no-such-session" in widget.error
    assert widget.session_id not in ("", first, "no-such-session")
    send_from_front_end(widget, {"kind": "open_session", "session_id": first})
    assert widget.session_id == first
    send_from_front_end(widget, {"kind": "no-such-kind"})  # ignored
