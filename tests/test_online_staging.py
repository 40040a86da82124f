"""Discovery's candidates and staging list in sessions.db (migration 3)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.migrations import SCHEMA_VERSION
from zocrates_nb.sessions.staging import (
    HOME_LIST,
    AlreadyInLibrary,
    Staging,
    UnknownCandidate,
)
from zocrates_nb.sessions.writes import WriteLedger

RAFT = Candidate(title="In Search of an Understandable Consensus Algorithm", year=2014,
                 authors=["Diego Ongaro", "John Ousterhout"], sources=["Crossref"])  # fmt: skip
PAXOS = Candidate(title="Paxos Made Simple", doi="10.1145/568425.568433", sources=["OpenAlex"])
ZAB = Candidate(title="Zab: High-performance broadcast", arxiv_id="1234.5678v2", sources=["arXiv"])


def test_a_fresh_store_has_the_staging_table_and_the_write_ledger(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    assert store.schema_version == SCHEMA_VERSION == 5
    cols = {r[1] for r in store._conn().execute("PRAGMA table_info(candidates)")}
    assert {"list_id", "id", "data", "query", "found", "staged"} <= cols
    cols = {r[1] for r in store._conn().execute("PRAGMA table_info(zotero_writes)")}
    assert {"batch", "target", "token", "candidate_id", "item", "state", "item_key"} <= cols
    cols = {r[1] for r in store._conn().execute("PRAGMA table_info(zotero_leases)")}
    assert {"target", "holder", "pid", "host", "expires"} <= cols
    store.close()


def test_a_version_3_file_gains_the_ledger_and_keeps_its_staging_list(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    Staging(store).remember([RAFT])
    Staging(store).stage([RAFT.id])
    store._conn().execute("DROP TABLE zotero_writes")
    store._conn().execute("DROP TABLE zotero_leases")
    store._conn().execute("PRAGMA user_version = 3")
    store.close()
    again = SessionStore.open(tmp_path)
    assert again.schema_version == 5 and Staging(again).staged() == [RAFT]
    assert WriteLedger(again).saved() == {}
    again.close()


def test_a_version_2_file_gains_the_table_and_keeps_its_sessions(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session("kept").id
    store._conn().execute("DROP TRIGGER candidates_of_deleted_session")
    store._conn().execute("DROP TABLE candidates")
    store._conn().execute("DROP TABLE zotero_writes")
    store._conn().execute("DROP TABLE zotero_leases")
    store._conn().execute("PRAGMA user_version = 2")
    store.close()
    again = SessionStore.open(tmp_path)
    assert again.schema_version == 5 and again.get_session(sid).title == "kept"
    Staging(again).remember([RAFT])
    assert Staging(again).found() == [RAFT]
    again.close()


def test_stage_list_remove_across_processes(tmp_path: Path) -> None:
    """Remembered by one store (a `discover` process), staged and listed by another."""
    first = SessionStore.open(tmp_path)
    Staging(first).remember([RAFT, PAXOS, ZAB], query="consensus")
    first.close()
    other = Staging(SessionStore.open(tmp_path))
    assert other.stage([ZAB.id, RAFT.id]) == [ZAB, RAFT]
    assert other.stage([ZAB.id]) == [ZAB]  # staging twice keeps the first position
    assert [c.id for c in other.staged()] == [ZAB.id, RAFT.id]
    assert other.unstage([ZAB.id, "cnotthere1"]) == 1
    assert other.staged() == [RAFT]
    assert {c.id for c in other.found()} == {RAFT.id, PAXOS.id, ZAB.id}  # still remembered


def test_an_unknown_id_stages_nothing_and_names_itself(tmp_path: Path) -> None:
    staging = Staging(SessionStore.open(tmp_path))
    staging.remember([RAFT])
    with pytest.raises(UnknownCandidate, match="no candidate cdeadbeef0 in this list"):
        staging.stage([RAFT.id, "cdeadbeef0"])
    assert staging.staged() == []


def test_lists_are_per_session_and_go_with_their_session(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session("s").id
    staging = Staging(store)
    staging.remember([RAFT], list_id=sid)
    staging.remember([PAXOS], list_id=HOME_LIST)
    staging.stage([RAFT.id], list_id=sid)
    with pytest.raises(UnknownCandidate):
        staging.stage([RAFT.id])  # not in the home's list
    assert staging.staged(list_id=sid) == [RAFT]
    store.delete_session(sid)
    assert staging.found(list_id=sid) == [] and staging.found() == [PAXOS]


def test_a_newer_discover_run_refreshes_data_and_keeps_staging(tmp_path: Path) -> None:
    staging = Staging(SessionStore.open(tmp_path))
    staging.remember([RAFT])
    staging.stage([RAFT.id])
    fresher = RAFT.model_copy(update={"in_library": True, "library_key": "ABCD1234"})
    staging.remember([fresher], query="raft")
    assert staging.staged() == [fresher]


def test_the_staging_file_is_plain_sqlite(tmp_path: Path) -> None:
    staging = Staging(SessionStore.open(tmp_path))
    staging.remember([PAXOS], query="paxos")
    with sqlite3.connect(tmp_path / "sessions.db") as db:
        (query,) = db.execute("SELECT query FROM candidates").fetchone()
    assert query == "paxos"


def test_a_paper_the_library_holds_is_not_staged(tmp_path: Path) -> None:
    staging = Staging(SessionStore.open(tmp_path))
    held = PAXOS.model_copy(update={"in_library": True, "library_key": "PAXOSKY2"})
    staging.remember([RAFT, held])
    with pytest.raises(AlreadyInLibrary, match=rf"\({held.id}\) in your library, item "
                       r"PAXOSKY2\. Nothing was staged"):
        staging.stage([RAFT.id, held.id])
    with pytest.raises(AlreadyInLibrary, match=rf"\({RAFT.id}\) in your Zotero web library, "
                       r"item RAFTKEY1"):  # what App.stage found by asking Zotero
        staging.stage([RAFT.id], held={RAFT.id: "in your Zotero web library, item RAFTKEY1"})
    assert staging.staged() == []
