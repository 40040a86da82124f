"""Connector sessions as the browser connector makes them (CONNECTOR.md §3, §4, §6): the
collection asked for and the tags through `updateSession` (or a plain refusal before anything
is saved), the item type each source record calls for, and a session whose answer was lost
sent again under its own sessionID (Zotero: 409 while it lives) — never a second copy."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from zotero_fakes import FakeConnector

from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import WriteError, save_to_connector
from zocrates_nb.writeback.items import zotero_item

RAFT = Candidate(title="In Search of an Understandable Consensus Algorithm", year=2014,
                 authors=["Diego Ongaro", "John Ousterhout"], venue="USENIX ATC",
                 doi="10.5555/2643634.2643666", item_type="conferencePaper")  # fmt: skip
CHAPTER = Candidate(title="Consensus in the Presence of Partial Synchrony", year=2010,
                    authors=["Cynthia Dwork"], venue="Replication: Theory and Practice",
                    doi="10.1007/978-3-642-11294-2_1", isbn="978-3-642-11293-5",
                    publisher="Springer", item_type="bookSection")  # fmt: skip
THESIS = Candidate(title="Consensus: Bridging Theory and Practice", year=2014,
                   authors=["Diego Ongaro"], venue="Stanford University", item_type="thesis")
REPORT = Candidate(title="The Part-Time Parliament, revisited", year=1990,
                   authors=["Leslie Lamport"], venue="DEC SRC", item_type="report")
PREPRINT = Candidate(title="Paxos vs Raft: Have we reached consensus on distributed consensus?",
                     authors=["Heidi Howard", "Richard Mortier"], year=2020,
                     arxiv_id="2004.05074", sources=["arXiv"])  # fmt: skip
ARTICLE = Candidate(title="Paxos Made Live", year=2007, authors=["Tushar Chandra"],
                    venue="PODC", doi="10.1145/1281100.1281103")  # fmt: skip


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[WriteLedger]:
    store = SessionStore.open(tmp_path)
    yield WriteLedger(store)
    store.close()


def test_each_source_record_keeps_its_item_type_and_its_venue_field() -> None:
    items = {c.title: zotero_item(c) for c in (RAFT, CHAPTER, THESIS, REPORT, PREPRINT, ARTICLE)}
    assert [i["itemType"] for i in items.values()] == [
        "conferencePaper", "bookSection", "thesis", "report", "preprint", "journalArticle"]
    assert items[RAFT.title]["proceedingsTitle"] == "USENIX ATC"
    chapter = items[CHAPTER.title]
    assert (chapter["bookTitle"], chapter["publisher"], chapter["ISBN"]) == (
        "Replication: Theory and Practice", "Springer", "9783642112935")
    assert items[THESIS.title]["university"] == "Stanford University"
    assert items[REPORT.title]["institution"] == "DEC SRC"
    assert items[PREPRINT.title]["repository"] == "arXiv"
    assert items[PREPRINT.title]["archiveID"] == "arXiv:2004.05074"
    assert items[ARTICLE.title]["publicationTitle"] == "PODC"
    assert not any("publicationTitle" in i for t, i in items.items() if t != ARTICLE.title)


def test_the_collection_and_tags_asked_for_go_through_update_session(
    ledger: WriteLedger,
) -> None:
    with FakeConnector() as zotero:
        result = save_to_connector([RAFT, CHAPTER, THESIS, REPORT], zotero.url, ledger=ledger,
                                   collection="Reading/To read", tags=["consensus", "to-read"])
        update = [r["body"] for r in zotero.requests if r["path"] == "/connector/updateSession"]
    sid = next(iter(zotero.sessions))
    assert update == [{"sessionID": sid, "target": "C14", "tags": ["consensus", "to-read"]}]
    assert {zotero.placed[c.id] for c in (RAFT, CHAPTER, THESIS, REPORT)} == {"C14"}
    assert zotero.tags[RAFT.id] == ["consensus", "to-read"]
    assert [i["itemType"] for i in zotero.saved] == [
        "conferencePaper", "bookSection", "thesis", "report"]
    assert result.where == "the collection 'Reading/To read' in My Library"
    assert not result.message


def test_a_collection_zotero_does_not_have_or_cannot_tell_apart_saves_nothing(
    ledger: WriteLedger,
) -> None:
    with FakeConnector() as zotero:
        with pytest.raises(WriteError, match=r"Zotero has no collection 'ABCD1234' \(its "
                           r"collections: Distributed systems, Reading, Reading/To read, "
                           r"Reading/Later, To read, Archive, Archive/Later\), so nothing "
                           r"was saved"):
            save_to_connector([RAFT], zotero.url, ledger=ledger, collection="ABCD1234")
        with pytest.raises(WriteError, match=r"several collections are called 'Later' "
                           r"\(Reading/Later; Archive/Later\), so nothing was saved: name one "
                           r"by its path"):
            save_to_connector([RAFT], zotero.url, ledger=ledger, collection="Later")
        assert zotero.saved == [] and not any(r["path"] == "/connector/saveItems"
                                              for r in zotero.requests)  # fmt: skip
        result = save_to_connector([RAFT, ARTICLE], zotero.url, ledger=ledger,
                                   collection="archive/later")  # fmt: skip
        other = save_to_connector([THESIS], zotero.url, ledger=ledger, collection="to read")
    assert zotero.placed[RAFT.id] == "C17" and result.saved == [RAFT.id, ARTICLE.id]
    assert zotero.placed[THESIS.id] == "C15" and other.where.startswith("the collection 'To read'")


def test_a_lost_answer_is_sent_again_under_its_session_and_saved_once(
    ledger: WriteLedger,
) -> None:
    with FakeConnector() as zotero:
        zotero.lose.append(0)  # Zotero saves the session; its 201 never arrives
        result = save_to_connector([RAFT, ARTICLE], zotero.url, ledger=ledger)
        saves = [r["body"]["sessionID"] for r in zotero.requests
                 if r["path"] == "/connector/saveItems"]  # fmt: skip
    assert len(saves) == 2 and saves[0] == saves[1]  # the same session: 409 SESSION_EXISTS
    assert [i["id"] for i in zotero.saved] == [RAFT.id, ARTICLE.id]
    assert result.saved == [RAFT.id, ARTICLE.id] and not result.pending


def test_an_expired_unanswered_session_is_asked_of_zotero_never_guessed(
    ledger: WriteLedger,
) -> None:
    later = [0.0]  # how far the clock is moved on

    def now() -> float:
        return time.time() + later[0]

    with FakeConnector() as zotero:
        zotero.lose.extend([0, 0, 0])  # saved, and no answer ever arrives
        first = save_to_connector([RAFT], zotero.url, ledger=ledger, clock=now)
        assert first.saved == [] and first.pending == [RAFT.id]
        assert "Zotero's answer to the save was lost" in first.message
        later[0] = 3600  # an hour later the session is long gone
        second = save_to_connector([RAFT], zotero.url, ledger=ledger, clock=now)
        assert second.saved == [] and second.pending == [RAFT.id]
        assert "Look for them in Zotero, then save again with --lost saved" in second.message
        assert len(zotero.saved) == 1  # nothing was sent again
        third = save_to_connector([RAFT], zotero.url, ledger=ledger, lost="saved", clock=now)
    assert third.saved == [RAFT.id] and len(zotero.saved) == 1
    assert {s.candidate_id for s in ledger.saved().values()} == {RAFT.id}


def test_zotero_s_local_api_settles_an_expired_session(ledger: WriteLedger) -> None:
    with FakeConnector() as zotero:
        zotero.lose.extend([0, 0, 0])
        save_to_connector([RAFT], zotero.url, ledger=ledger)
        zotero.local_api = True

        def is_saved(item: object) -> bool | None:
            from zocrates_nb.writeback.holdings import LocalLibrary

            ids = set(item.identities)  # type: ignore[attr-defined]
            return bool(LocalLibrary(zotero.url).find(ids, item.title))  # type: ignore[attr-defined]

        result = save_to_connector([RAFT], zotero.url, ledger=ledger, is_saved=is_saved,
                                   clock=lambda: time.time() + 3600)  # fmt: skip
    assert result.saved == [RAFT.id] and len(zotero.saved) == 1


JS = {"X-Zotero-Version": "7.0.32", "Content-Type": "application/json"}


def staged_home(tmp_path: Path, url: str, papers: list[Candidate]) -> Path:
    """A data home whose staging list holds `papers`, set up to save through `url`."""
    from zocrates_nb.sessions.staging import Staging

    home = tmp_path / "home"
    store = SessionStore.open(home)
    Staging(store).remember(papers)
    Staging(store).stage([c.id for c in papers])
    store.close()
    (home / "zocrates_config.json").write_text(json.dumps({"zotero": {"connector_url": url}}))
    return home


def cli(home: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    from zocrates_nb.cli import main

    code = main(["--home", str(home), *argv])
    out, err = capsys.readouterr()
    return code, out + err


@pytest.mark.parametrize("answer, why", [
    ((409, JS, b'{"error":"SESSION_EXISTS"}'), "Zotero refused the save: the library is locked"),
    ((409, JS, b""), "Zotero refused the save: the library is locked"),
    ((500, JS, b'{"libraryEditable":false}'), "the selected library is read-only"),
    ((503, JS, b""), "Zotero failed while saving them (HTTP 503)"),
])  # fmt: skip
def test_only_zotero_s_saved_is_saved_any_other_answer_leaves_the_papers_staged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], answer: tuple[int, dict[str, str], bytes],
    why: str,
) -> None:  # fmt: skip
    """A 409 on a first send (not a session this home sent before), a read-only library, a
    5xx: nothing is reported saved, the papers stay staged and unwritten in the ledger, the
    exit status says so, and each paper is named by its title."""
    with FakeConnector() as zotero:
        home = staged_home(tmp_path, zotero.url, [RAFT, THESIS])
        zotero.inject_paths = ("/connector/saveItems",)
        zotero.injected.append(answer)
        code, out = cli(home, capsys, "stage", "save", "--to", "connector", "--yes")
        assert code == 1
        assert out.startswith("saved 0 ") and "not saved 2:" in out and why in out
        assert f"'{RAFT.title}' ({RAFT.id})" in out and f"'{THESIS.title}' ({THESIS.id})" in out
        code, listed = cli(home, capsys, "stage", "list", "--json")
        assert [c["id"] for c in json.loads(listed)["staged"]] == [RAFT.id, THESIS.id]
        store = SessionStore.open(home)
        assert WriteLedger(store).saved() == {}
        store.close()
        # The next save sends them (a new session) and Zotero saves them.
        code, out = cli(home, capsys, "stage", "save", "--to", "connector", "--yes")
        assert code == 0, out
        assert out.startswith("saved 2 ") and len(zotero.saved) == 2


def test_a_collection_or_tags_not_applied_is_a_partial_failure_that_names_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    with FakeConnector() as zotero:
        home = staged_home(tmp_path, zotero.url, [RAFT])
        zotero.inject_paths = ("/connector/updateSession",)
        zotero.injected.append((400, JS, b'{"error":"SESSION_NOT_FOUND"}'))
        code, out = cli(home, capsys, "stage", "save", "--to", "connector", "--yes",
                        "--collection", "Reading/To read", "--tag", "consensus")
    assert code == 1
    assert out.startswith("saved 1 to the collection 'Reading/To read' in My Library")
    assert "not applied: the collection 'Reading/To read'; the tags 'consensus'" in out
    assert "SESSION_NOT_FOUND" in out and len(zotero.saved) == 1


def test_a_409_to_a_session_this_home_sent_before_is_saved_once(
    ledger: WriteLedger,
) -> None:  # fmt: skip
    with FakeConnector() as zotero:
        zotero.lose.append(0.0)  # saved, but the answer is lost; the re-send gets 409
        result = save_to_connector([RAFT], zotero.url, ledger=ledger)
    assert result.saved == [RAFT.id] and result.complete and len(zotero.saved) == 1
