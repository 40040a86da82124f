"""An answer saved as a Zotero note, through the connector and the Web API (loopback fakes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import corpus_path
from zotero_fakes import FakeConnector, FakeWebAPI

from zocrates_nb.cli import main
from zocrates_nb.sessions import SessionStore
from zocrates_nb.turn import Source, TurnResult

ANSWER = ("Raft elects a leader with randomized election timeouts [1]. "
          "<script>alert(1)</script> A candidate needs a majority of votes [1].")  # fmt: skip
RAFT = Source(n=1, numbers=[1], item_key="RAFTKEY2", tier="cited", year=2014,
              title="In Search of an Understandable Consensus Algorithm",
              authors=["Diego Ongaro", "John Ousterhout"])  # fmt: skip
PAXOS = Source(n=2, numbers=[2], item_key="PAXSKEY2", tier="cited", title="Paxos Made Simple",
               authors=["Leslie Lamport"], year=2001)  # fmt: skip


def answered(home: Path, sources: list[Source]) -> TurnResult:
    store = SessionStore.open(home)
    sid = store.create_session("raft").id
    turn = store.begin_turn(sid, "How does Raft elect a leader?")
    done = store.save_turn(turn.model_copy(update={
        "status": "answered", "answer": ANSWER, "cited_sources": sources}))  # fmt: skip
    store.close()
    return done


def run(capsys: pytest.CaptureFixture[str], home: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--home", str(home), *argv])
    out, err = capsys.readouterr()
    return code, out, err


def configure(home: Path, **zotero: object) -> None:
    (home / "zocrates_config.json").write_text(json.dumps({"zotero": zotero}), "utf-8")


def test_one_cited_paper_makes_a_child_note_through_the_web_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    turn = answered(tmp_path, [RAFT])
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI() as api:
        api.held["RAFTKEY2"] = {"itemType": "conferencePaper", "title": RAFT.title}
        configure(tmp_path, web={"library_id": "475425", "base_url": api.url})
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "web", "--yes")  # fmt: skip
        assert code == 0, err
        assert out.strip() == (f"saved the answer as a child note of '{RAFT.title}' (RAFTKEY2) "
                               "in your user library")
        # Once per library: a repeat says so and writes nothing.
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "web", "--yes")  # fmt: skip
        assert code == 0, err
        assert "already saved as note" in out and "not saved again" in out
    (note,) = api.created
    assert note["itemType"] == "note" and note["parentItem"] == "RAFTKEY2"
    assert note["tags"] == [{"tag": "zocrates:answer"}] and "collections" not in note
    body = note["note"]
    assert body.startswith("<h1>How does Raft elect a leader?</h1>\n<p>Raft elects a leader")
    assert "<script>" not in body and "&lt;script&gt;" in body  # model text stays text
    assert (
        '<li>[1] Diego Ongaro, John Ousterhout (2014). <a href="zotero://select/library/'
        'items/RAFTKEY2">In Search of an Understandable Consensus Algorithm</a></li>'
    ) in body


def test_several_cited_papers_make_a_standalone_note_in_the_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    turn = answered(tmp_path, [RAFT, PAXOS])
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI() as api:
        configure(tmp_path, web={"library_id": "475425", "base_url": api.url})
        code, _, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                           "--turn", turn.turn_id, "--to", "web", "--collection", "COLL2345",
                             "--yes")  # fmt: skip
    assert code == 0, err
    (note,) = api.created
    assert "parentItem" not in note and note["collections"] == ["COLL2345"]
    assert note["note"].count("<li>") == 2


def test_through_the_connector_it_is_a_standalone_note_after_a_yes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    turn = answered(tmp_path, [RAFT])
    with FakeConnector() as zotero:
        configure(tmp_path, connector_url=zotero.url)
        monkeypatch.setattr("sys.stdin.isatty", lambda: False)
        code, _, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                           "--to", "connector")  # fmt: skip
        assert code == 2 and "add --yes" in err and zotero.connector_requests == []
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "connector", "--yes")  # fmt: skip
        assert code == 0, err
        zotero.lose.append(0)  # a second save whose answer is lost: still one note
        again = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                    "--to", "connector", "--yes")  # fmt: skip
    assert "standalone note in the collection 'Distributed systems'" in out
    (item,) = zotero.saved
    assert item["itemType"] == "note" and item["id"] == f"note-{turn.turn_id}"
    assert "In Search of an Understandable Consensus Algorithm" in item["note"]
    assert again[0] == 0 and "already saved as a note through the Zotero app" in again[1]


def test_a_note_links_each_citation_to_its_paper_and_page_and_is_made_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-text `[n]` link to the cited paper; the sources list the pages of the sentences
    each `[n]` supports (its passage's page where none is known), each opening the PDF there;
    saving the same answer again makes no second note."""
    from zocrates_nb.turn import Citation, CitedPlace

    store = SessionStore.open(tmp_path)
    sid = store.create_session("raft").id
    turn = store.begin_turn(sid, "How does Raft elect a leader?")
    store.save_turn(turn.model_copy(update={
        "status": "answered", "answer": "Timeouts are randomized [1]; votes need a majority "
        "[1, 2]. `code [1]` stays code.", "cited_sources": [RAFT, PAXOS],
        "citations": [Citation(n=1, chunk_id="RAFTPDF2:0004", item_key="RAFTKEY2", title="R",
                               page=5, occurrences=[CitedPlace(page=5), CitedPlace(page=6)]),
                      Citation(n=2, chunk_id="PAXSPDF2:0001", item_key="PAXSKEY2", title="P",
                               page=None)]}))  # fmt: skip
    store.close()
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI() as api:
        configure(tmp_path, web={"library_id": "475425", "base_url": api.url})
        for _ in range(2):
            code, out, err = run(capsys, tmp_path, "note", "save", "--session", sid, "--to",
                                 "web", "--yes")  # fmt: skip
            assert code == 0, err
    (note,) = api.created
    body = note["note"]
    raft = '<a href="zotero://select/library/items/RAFTKEY2">1</a>'
    assert f"Timeouts are randomized [{raft}]" in body
    assert f'[{raft}, <a href="zotero://select/library/items/PAXSKEY2">2</a>]' in body
    assert "<code>code [1]</code>" in body  # not inside code
    # One passage cited for sentences on two pages: each sentence's page, each opening there.
    assert (', pp. <a href="zotero://open-pdf/library/items/RAFTPDF2?page=5">5</a>, '
            '<a href="zotero://open-pdf/library/items/RAFTPDF2?page=6">6</a></li>') in body
    assert "already saved as note" in out


def test_a_session_without_an_answer_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sid = SessionStore.open(tmp_path).create_session("empty").id
    code, _, err = run(capsys, tmp_path, "note", "save", "--session", sid, "--to", "web",
                       "--yes")  # fmt: skip
    assert code == 2 and "has no answer to save yet" in err


def test_cited_items_are_tagged_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorded Web API item X42A7DEE (cited) gets `zocrates:cited` by a versioned PATCH;
    an item the library lacks is reported, the rest goes on."""
    recorded = corpus_path("online-fixtures", "zotero")
    real = RAFT.model_copy(update={"item_key": "X42A7DEE"})
    missing = PAXOS.model_copy(update={"item_key": "MISSING2"})
    turn = answered(tmp_path, [real, missing])
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI(recorded=recorded) as api:
        configure(tmp_path, web={"library_id": "475425", "base_url": api.url})
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "web", "--tag-cited", "--yes")  # fmt: skip
    assert code == 1, err  # one item could not be tagged
    assert "tagged zocrates:cited: X42A7DEE" in out and "MISSING2: not tagged: not in this" in out
    assert len(api.created) == 1  # the note
    tags = api.patched["X42A7DEE"]["tags"]
    assert tags[-1] == {"tag": "zocrates:cited"} and len(tags) >= 1
    patch = next(r for r in api.requests if r["method"] == "PATCH")
    assert {k.lower(): v for k, v in patch["headers"].items()}["if-unmodified-since-version"] == "1"


def test_tagging_through_the_connector_is_refused_plainly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    turn = answered(tmp_path, [RAFT])
    code, _, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id, "--to",
                       "connector", "--tag-cited", "--yes")  # fmt: skip
    assert code == 2 and "needs the Web API" in err


def test_a_note_for_a_group_library_without_its_paper_offers_a_way_on_and_links_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cited paper is not in the group library: nothing is written and the message
    offers a standalone note or adding the paper; the standalone note links into the group
    library; a Markdown table arrives as a table."""
    store = SessionStore.open(tmp_path)
    sid = store.create_session("raft").id
    turn = store.save_turn(store.begin_turn(sid, "Compare them").model_copy(update={
        "status": "answered", "cited_sources": [RAFT],
        "answer": "| system | leader |\n|---|---|\n| Raft | yes [1] |\n| EPaxos | no |"}))
    store.close()
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI(library="/groups/5120") as api:
        configure(tmp_path, web={"library_id": "5120", "library_type": "group",
                                 "base_url": api.url})  # fmt: skip
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "web", "--yes")  # fmt: skip
        assert code != 0 and api.created == []
        assert f"'{RAFT.title}' (RAFTKEY2), is not in the group library 'Lab'" in err
        assert "--standalone" in err and "add the paper" in err
        code, out, err = run(capsys, tmp_path, "note", "save", "--session", turn.session_id,
                             "--to", "web", "--yes", "--standalone")  # fmt: skip
    assert code == 0, err
    assert out.strip() == "saved the answer as a standalone note in the group library 'Lab'"
    (note,) = api.created
    assert "parentItem" not in note
    body = note["note"]
    assert "<table>" in body and "<th>system</th>" in body and "<td>EPaxos</td>" in body
    assert "zotero://select/groups/5120/items/RAFTKEY2" in body
    assert "zotero://select/library/" not in body


def test_holdings_are_per_library_and_say_which_library(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A paper saved to the group library 'Lab' is reported there when saved to it again,
    and does not keep it from the user's own library (nor from being staged for it)."""
    from zocrates_nb.online import Candidate
    from zocrates_nb.sessions.staging import Staging

    paper = Candidate(title="Chain Replication for Supporting High Throughput", year=2004,
                      authors=["Robbert van Renesse"], doi="10.5555/chain.2004")  # fmt: skip
    store = SessionStore.open(tmp_path)
    Staging(store).remember([paper])
    Staging(store).stage([paper.id])
    store.close()
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    with FakeWebAPI(library="/groups/5120") as lab, FakeWebAPI() as mine:
        configure(tmp_path, web={"library_id": "5120", "library_type": "group",
                                 "base_url": lab.url})  # fmt: skip
        code, out, err = run(capsys, tmp_path, "stage", "save", "--to", "web", "--yes")
        assert code == 0 and out.startswith("saved 1 to group library 5120"), out + err
        configure(tmp_path, web={"library_id": "475425", "base_url": mine.url})
        code, out, err = run(capsys, tmp_path, "stage", "add", paper.id)
        assert code == 0, err  # staged again, for the user's own library
        code, out, err = run(capsys, tmp_path, "stage", "save", "--to", "web", "--yes")
        assert code == 0 and out.startswith("saved 1 to user library 475425"), out + err
        assert len(lab.created) == 1 and len(mine.created) == 1
        configure(tmp_path, web={"library_id": "5120", "library_type": "group",
                                 "base_url": lab.url})  # fmt: skip
        code, out, err = run(capsys, tmp_path, "stage", "add", paper.id)
        assert code == 2 and "in the group library 'Lab'" in err  # staging for it: refused
        store = SessionStore.open(tmp_path)  # staged for it days ago, before it was saved
        Staging(store).stage([paper.id])
        store.close()
        code, out, err = run(capsys, tmp_path, "stage", "save", "--to", "web", "--yes")
    assert code == 0 and len(lab.created) == 1, out + err
    assert "already in Zotero 1:" in out
    assert f"'{paper.title}' ({paper.id}): already in the group library 'Lab'" in out
