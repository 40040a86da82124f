"""The panel's staging messages (widgets/PROTOCOL.md, "Staging"), spoken through the widget's comm:
the real App over the indexed sample library, real `sessions.db`, the recorded scholarly-API
responses on a loopback server (`online_fixtures`), and a loopback fake of Zotero's connector."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import corpus_path
from online_fixtures import FixtureServer
from test_widget_protocol import panel, run
from zotero_fakes import FakeConnector

from zocrates_nb.app import App
from zocrates_nb.events import Final
from zocrates_nb.widget import SAVE_UNCONFIRMED, ChatWidget
from zocrates_nb.widget.recording import RecordingComm, send_from_front_end


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer(corpus_path("online-fixtures")) as srv:
        yield srv


@pytest.fixture(scope="module")
def zotero() -> Iterator[FakeConnector]:
    with FakeConnector() as fake:
        yield fake


@pytest.fixture(scope="module")
def online_app(sample_home: Path, server: FixtureServer, zotero: FakeConnector) -> Iterator[App]:
    """The sample library's App with discovery on (the fixture server) and the fake connector;
    overrides only: the shared home's config file is not written."""
    with App.open(sample_home, online=server.online_config(),
                  zotero={"connector_url": zotero.url}) as app:  # fmt: skip
        yield app


def discovered(app: App, widget: ChatWidget, n: int = 3) -> list[str]:
    """A discover run in the panel's session (what a discovery turn does); `n` fresh ids."""
    widget.session_id = app.new_session("discovery")
    found = app.discover("ecology", limit=10, session_id=widget.session_id)
    fresh = [c.id for c in found.candidates if not c.in_library]
    assert len(fresh) >= n
    return fresh[:n]


def staged_panel(app: App, n: int) -> tuple[ChatWidget, RecordingComm, list[str]]:
    """A panel whose session discovered papers and staged `n` of them from the cards."""
    widget, comm = panel(app)
    ids = discovered(app, widget, n)
    send_from_front_end(widget, {"kind": "stage", "ids": ids})
    return widget, comm, ids


def save_results(comm: RecordingComm) -> list[dict[str, Any]]:
    return comm.messages("save_result")


def test_stage_and_unstage_keep_the_sessions_list_in_sessions_db_and_the_trait(
    online_app: App, sample_home: Path
) -> None:
    widget, comm = panel(online_app)
    ids = discovered(online_app, widget)
    assert widget.staged == []
    send_from_front_end(widget, {"kind": "stage", "ids": [ids[1], ids[0]]})
    assert [c["id"] for c in widget.staged] == [ids[1], ids[0]]
    assert [c["id"] for c in comm.updates("staged")[-1]] == [ids[1], ids[0]]
    assert "abstract" not in widget.staged[0] and widget.staged[0]["title"]
    with App.open(sample_home) as other:  # another process's view of the same sessions.db
        assert [c.id for c in other.staged(session_id=widget.session_id)] == [ids[1], ids[0]]
        assert other.staged() == [] or ids[0] not in {c.id for c in other.staged()}
    send_from_front_end(widget, {"kind": "unstage", "ids": [ids[1]]})
    assert [c["id"] for c in widget.staged] == [ids[0]]
    # An unknown id stages nothing and says so in the banner; the list is as it was.
    send_from_front_end(widget, {"kind": "stage", "ids": ["cnotthere0", ids[2]]})
    assert "no candidate cnotthere0" in widget.error
    assert [c.id for c in online_app.staged(session_id=widget.session_id)] == [ids[0]]
    # The trait follows the open session: another session has its own (empty) list.
    first = widget.session_id
    send_from_front_end(widget, {"kind": "new_session"})
    assert widget.staged == []
    send_from_front_end(widget, {"kind": "open_session", "session_id": first})
    assert [c["id"] for c in widget.staged] == [ids[0]]


def test_save_without_confirmation_writes_nothing(online_app: App, zotero: FakeConnector) -> None:
    widget, comm, ids = staged_panel(online_app, 2)
    before = len(zotero.requests)
    for confirmed in ({}, {"confirmed": False}, {"confirmed": "yes"}):
        send_from_front_end(widget, {"kind": "save_staged", "to": "connector", "ids": ids,
                                     **confirmed})  # fmt: skip
    assert [m["message"] for m in save_results(comm)] == [SAVE_UNCONFIRMED] * 3
    assert not any(m["ok"] for m in save_results(comm))
    assert len(zotero.requests) == before  # not even a ping
    assert [c["id"] for c in widget.staged] == ids


def test_a_confirmed_save_to_the_connector_sends_exactly_the_staged_items(
    online_app: App, zotero: FakeConnector
) -> None:
    widget, comm, ids = staged_panel(online_app, 3)
    staged = {c["id"]: c for c in widget.staged}
    saved_before = len(zotero.saved)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "save_staged", "to": "connector", "ids": ids,
                                     "confirmed": True})  # fmt: skip
        await comm.wait_for(save_results, 60)
        await widget.wait()

    run(scenario())
    (result,) = save_results(comm)
    assert result["ok"] and result["saved"] == ids and result["failed"] == []
    assert result["where"] == "the collection 'Distributed systems' in My Library"
    assert [(i["id"], i["title"]) for i in zotero.saved[saved_before:]] == [
        (i, staged[i]["title"]) for i in ids]  # fmt: skip
    assert widget.staged == []  # what reached Zotero left the list
    assert online_app.staged(session_id=widget.session_id) == []


def test_zotero_not_running_is_a_plain_reason_and_the_list_stays(
    sample_home: Path, server: FixtureServer
) -> None:
    with App.open(sample_home, online=server.online_config(),
                  zotero={"connector_url": "http://127.0.0.1:9"}) as app:  # fmt: skip
        widget, comm = panel(app)
        ids = discovered(app, widget, 1)
        send_from_front_end(widget, {"kind": "stage", "ids": ids})

        async def scenario() -> None:
            send_from_front_end(widget, {"kind": "save_staged", "to": "connector",
                                         "confirmed": True})  # fmt: skip
            await comm.wait_for(save_results, 60)
            await widget.wait()

        run(scenario())
        (result,) = save_results(comm)
        assert not result["ok"]
        assert "start Zotero desktop, or choose another destination" in result["message"]
        assert "Error" not in result["message"] and "Traceback" not in result["message"]
        assert [c["id"] for c in widget.staged] == ids


def test_ris_and_bibtex_come_back_as_file_text_for_a_download(
    online_app: App, sample_home: Path
) -> None:
    widget, comm, ids = staged_panel(online_app, 2)
    titles = [c["title"] for c in widget.staged]
    files_before = sorted(p.name for p in sample_home.iterdir())

    async def scenario() -> None:
        for n, to in enumerate(("ris", "bibtex"), 1):
            send_from_front_end(widget, {"kind": "save_staged", "to": to, "confirmed": True})
            await comm.wait_for(lambda c, n=n: len(save_results(c)) == n, 60)
            await widget.wait()

    run(scenario())
    ris, bib = save_results(comm)
    assert ris["ok"] and ris["file"]["name"] == "zocrates-staged.ris"
    text = ris["file"]["text"]
    assert text.count("TY  - ") == 2 and all(t in text for t in titles)
    assert bib["file"]["name"] == "zocrates-staged.bib" and bib["file"]["text"].count("@") == 2
    assert ris["where"] == "zocrates-staged.ris, downloaded by your browser"
    assert [c["id"] for c in widget.staged] == ids  # an export keeps the list
    assert sorted(p.name for p in sample_home.iterdir()) == files_before  # no file written


def test_a_discovery_turn_carries_its_candidates_in_final_and_history(online_app: App) -> None:
    widget, comm = panel(online_app)
    widget.session_id = online_app.new_session("discovery")
    found = online_app.discover("ecology", limit=4, session_id=widget.session_id)
    store = online_app.store
    turn = store.begin_turn(widget.session_id, "find papers on ecology")
    turn = store.save_turn(turn.model_copy(update={
        "status": "answered", "answer": "Four papers beyond your library.", "discovery": found}))
    widget._send_event(Final.of(turn))
    (final,) = comm.events("final")
    assert [c["id"] for c in final["discovery"]["candidates"]] == [c.id for c in found.candidates]
    assert "abstract" not in final["discovery"]["candidates"][0]
    send_from_front_end(widget, {"kind": "open_session", "session_id": widget.session_id})
    (entry,) = comm.messages("history")[-1]["turns"]
    assert entry["discovery"] == final["discovery"]
    assert entry["discovery"]["query"] == "ecology"


def test_messages_without_a_session_or_ids_change_nothing(online_app: App) -> None:
    widget, comm = panel(online_app)
    send_from_front_end(widget, {"kind": "stage", "ids": "c123"})  # not a list
    send_from_front_end(widget, {"kind": "staged_list"})
    assert widget.staged == [] and widget.error == ""
    send_from_front_end(widget, {"kind": "stage", "ids": ["c1234567890"]})
    assert "no session yet" in widget.error
    send_from_front_end(widget, {"kind": "save_staged", "to": "ris", "confirmed": True})
    assert save_results(comm)[-1] == {"kind": "save_result", "ok": False, "to": "ris",
                                      "message": "Nothing is staged in this session."}


def test_the_save_runs_off_the_event_loop(online_app: App, zotero: FakeConnector) -> None:
    """While Zotero takes its time, the loop that runs turns stays free."""
    widget, comm, _ids = staged_panel(online_app, 1)
    ticks = 0

    async def scenario() -> None:
        nonlocal ticks
        original = zotero.handle

        def slow(req: dict[str, Any]) -> Any:
            import time

            time.sleep(0.3)
            return original(req)

        zotero.handle = slow  # type: ignore[method-assign]
        try:
            send_from_front_end(widget, {"kind": "save_staged", "to": "connector",
                                         "confirmed": True})  # fmt: skip
            while not save_results(comm):
                ticks += 1
                await asyncio.sleep(0.01)
        finally:
            zotero.handle = original  # type: ignore[method-assign]
        await widget.wait()

    run(scenario())
    assert save_results(comm)[0]["ok"]
    assert ticks > 1  # a save on the loop would have held it until done: one tick only


def test_save_message_names_the_web_library_and_each_failure_by_title() -> None:
    from zocrates_nb.widget.protocol import payload
    from zocrates_nb.widget.records import save_message
    from zocrates_nb.writeback import SaveResult

    result = SaveResult(to="web", saved=["c1"], failed={"c2": "Title is required"},
                        where="user library 475425")  # fmt: skip
    msg = payload(save_message(result, None, {"c1": "First", "c2": "Second"}))
    assert msg["ok"] and msg["saved"] == ["c1"] and "file" not in msg
    assert msg["where"] == "your Zotero web library (user library 475425)"
    assert msg["failed"] == [{"id": "c2", "title": "Second", "reason": "Title is required"}]


def note_results(comm: RecordingComm) -> list[dict[str, Any]]:
    return comm.messages("note_result")


def test_save_as_note_writes_only_once_confirmed_and_answers_with_a_note_result(
    online_app: App, zotero: FakeConnector
) -> None:
    """"Save as note" on an answer (PROTOCOL.md): unconfirmed, nothing is written; confirmed,
    the answer goes to the Zotero app as a note whose in-text [n] links to its paper."""
    from zocrates_nb.turn import Citation, Source

    sid = online_app.new_session("note")
    turn = online_app.store.begin_turn(sid, "How does Raft elect a leader?")
    online_app.store.save_turn(turn.model_copy(update={
        "status": "answered", "answer": "Randomized timeouts [1].",
        "cited_sources": [Source(n=1, numbers=[1], item_key="RAFTKEY2", tier="cited",
                                 title="In Search of an Understandable Consensus Algorithm")],
        "citations": [Citation(n=1, chunk_id="RAFTPDF2:0003", item_key="RAFTKEY2",
                               title="Raft", page=6)]}))  # fmt: skip
    widget, comm = panel(online_app)
    widget.session_id = sid
    before = len(zotero.saved)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "save_note", "turn_id": turn.turn_id,
                                     "to": "connector", "confirmed": "yes"})  # fmt: skip
        send_from_front_end(widget, {"kind": "save_note", "turn_id": turn.turn_id,
                                     "to": "connector", "confirmed": True})  # fmt: skip
        await comm.wait_for(lambda c: len(note_results(c)) == 2, 60)
        await widget.wait()

    run(scenario())
    refused, done = note_results(comm)
    assert not refused["ok"] and "confirm it in the panel first" in refused["message"]
    assert done["ok"] and done["message"].startswith("Saved the answer as a standalone note")
    (note,) = zotero.saved[before:]
    assert note["itemType"] == "note"
    assert 'Randomized timeouts [<a href="zotero://select/library/items/RAFTKEY2">1</a>]' in (
        note["note"])  # fmt: skip
    assert ', p. <a href="zotero://open-pdf/library/items/RAFTPDF2?page=6">6</a>' in note["note"]


def test_add_a_paper_by_identifier_from_the_panel(online_app: App, zotero: FakeConnector) -> None:
    widget, comm = panel(online_app)
    widget.session_id = online_app.new_session("adding")
    before = len(zotero.saved)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "add_papers", "ids": ["arXiv:2104.12255v1"],
                                     "to": "connector", "confirmed": True})  # fmt: skip
        await comm.wait_for(save_results, 60)
        await widget.wait()

    run(scenario())
    (result,) = save_results(comm)
    assert result["ok"] and len(result["saved"]) == 1, result
    (item,) = zotero.saved[before:]
    assert item["itemType"] == "preprint" and item["archiveID"] == "arXiv:2104.12255"
