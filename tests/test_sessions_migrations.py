"""sessions.db migrations on a real first-release file.

`tests/fixtures/sessions-v1.db` was written by the first release's own code
(`tests/fixtures/make_v1_sessions.py` runs commit d1f638a over the sample library): three
sessions with answered turns, a greeting, an error turn, a turn answered after a checkpoint, and
a checkpoint still pending. Today's code must open it with every session, turn and the pending
checkpoint intact, show its turns in every surface, and continue the checkpoint to an answer.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import run, terminal

from zocrates_nb.sessions import SCHEMA_VERSION, NewerSessionStore, SessionStore, migrations
from zocrates_nb.turn import Citation, Source

FIXTURE = Path(__file__).parent / "fixtures" / "sessions-v1.db"


@pytest.fixture
def v1_home(tmp_path: Path) -> Path:
    """A data home holding a copy of the first-release file (never the fixture itself)."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.copyfile(FIXTURE, home / "sessions.db")
    return home


def first_release_rows(db: Path) -> dict[str, Any]:
    """What the first release stored, read with plain SQL before any migration."""
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    try:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 1
        turns = c.execute("SELECT * FROM turns").fetchall()
        states = c.execute("SELECT * FROM state").fetchall()
        return {
            "sessions": {r["id"]: dict(r) for r in c.execute("SELECT * FROM sessions")},
            "turns": {t["turn_id"]: {**dict(t), "payload": json.loads(t["payload"])}
                      for t in turns},
            "state": {r["session_id"]: json.loads(r["data"]) for r in states},
            "messages": c.execute("SELECT count(*) FROM messages").fetchone()[0],
        }
    finally:
        c.close()


def test_the_fixture_is_a_first_release_file() -> None:
    old = first_release_rows(FIXTURE)
    statuses = sorted(t["status"] for t in old["turns"].values())
    assert len(old["sessions"]) == 3
    assert statuses == ["answered", "answered", "answered", "checkpoint", "error"]
    assert sum(1 for s in old["state"].values() if s.get("checkpoint")) == 1
    answered = [t for t in old["turns"].values() if t["payload"].get("evidence")]
    assert answered and all(t["payload"]["citations"] for t in answered)


@pytest.fixture
def migrated(v1_home: Path) -> Iterator[tuple[SessionStore, dict[str, Any]]]:
    old = first_release_rows(v1_home / "sessions.db")
    store = SessionStore.open(v1_home)
    yield store, old
    store.close()


def test_every_session_and_turn_survives_with_what_surfaces_showed(
    migrated: tuple[SessionStore, dict[str, Any]],
) -> None:
    store, old = migrated
    assert store.schema_version == SCHEMA_VERSION == 5
    assert store._conn().execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    sessions = {s.id: s for s in store.list_sessions()}
    assert set(sessions) == set(old["sessions"])
    for sid, row in old["sessions"].items():
        assert sessions[sid].title == row["title"]
    # The coordinator's history: the paused session has none yet (it is written at the answer).
    assert sum(len(store.load_messages(sid)) > 0 for sid in sessions) == 2
    assert store._conn().execute("SELECT count(*) FROM messages").fetchone()[0] == old["messages"]

    turns = {t.turn_id: t for sid in sessions for t in store.turns(sid)}
    assert set(turns) == set(old["turns"])
    for turn_id, row in old["turns"].items():
        t, p = turns[turn_id], row["payload"]
        assert (t.session_id, t.index, t.prompt, t.status, t.answer) == (
            row["session_id"], row["idx"], row["prompt"], row["status"], row["answer"])
        assert t.created is not None and t.created.timestamp() == pytest.approx(row["created"])
        scope = json.loads(row["scope"])
        assert t.scope.items == scope.get("items", []) and t.scope.collections == scope.get(
            "collections", [])
        assert t.cited_sources == [Source.model_validate(s) for s in p.get("cited_sources", [])]
        assert t.other_sources == [Source.model_validate(s) for s in p.get("other_sources", [])]
        assert t.citations == [Citation.model_validate(c) for c in p.get("citations", [])]
        assert t.error == p.get("error")
        if "evidence" in p:  # answered turns: the rows in order, with text, support and ranks
            assert [e.chunk_id for e in t.evidence] == [e["chunk_id"] for e in p["evidence"]]
            for e, raw in zip(t.evidence, p["evidence"], strict=True):
                assert (e.text, e.cited, e.n, e.support, e.ranked) == (
                    raw["text"], raw["cited"], raw["n"], raw["support"], raw["ranked"])
            assert t.search_goal == p["search_goal"] and t.model == p["model"]
            assert t.seconds == p["seconds"] and t.timings == p["timings"]
        if p.get("usage"):  # the totals are derived from the roles and add up as before
            new = {"unmetered": True, "roles": {"__all__": {"unmetered"}}}  # a later field
            assert t.usage.model_dump(mode="json", exclude=new) == p["usage"]
            assert t.usage.unmetered == 0
    cited = [e for t in turns.values() for e in t.evidence if e.cited]
    assert cited and all(e.authors and e.year for e in cited)  # filled in from the sources


def test_the_pending_checkpoint_waits_with_its_card_and_snapshot(
    migrated: tuple[SessionStore, dict[str, Any]],
) -> None:
    store, old = migrated
    (sid, state), = [(s, st) for s, st in old["state"].items() if st.get("checkpoint")]
    snap = state["checkpoint"]
    pending = store.pending_checkpoint(sid)
    assert pending is not None and pending.claim is None
    assert (pending.interrupt_id, pending.turn_id) == (snap["interrupt_id"], snap["turn_id"])
    assert pending.payload == snap["payload"]  # the run state stays as it was written
    (turn,) = store.turns(sid)
    card = old["turns"][turn.turn_id]["payload"]["checkpoint"]
    assert turn.status == "checkpoint" and turn.checkpoint is not None
    # Fields added since (the pause's reason and headline) take their defaults.
    assert turn.checkpoint.model_dump(exclude={"reason", "headline"}) == {
        k: v for k, v in card.items() if k not in ("type", "session_id", "turn_id")}
    assert turn.tool_calls == card["calls_used"] and turn.usage.output_tokens > 0
    # What it had gathered lived in the session's audit record: now it is the turn's.
    audit = next(a for a in state["audit"] if a["turn_id"] == turn.turn_id)
    assert [e.chunk_id for e in turn.evidence] == [e["chunk_id"] for e in audit["evidence"]]
    assert turn.evidence_words == card["words_used"]


def test_old_turns_render_and_the_old_checkpoint_resumes_to_an_answer(
    v1_home: Path, sample_home: Path
) -> None:
    from zocrates_nb.app import App
    from zocrates_nb.frames import AUDIT_COLUMNS, EVIDENCE_COLUMNS, audit_frame, evidence_frame
    from zocrates_nb.index import Index
    from zocrates_nb.server.service import bubbles
    from zocrates_nb.widget import history_turn

    old = first_release_rows(v1_home / "sessions.db")
    with Index.open(sample_home) as index, App.open(v1_home, index=index) as app:
        summaries = {s.session_id: s for s in app.sessions()}
        (sid,) = [s for s in summaries if summaries[s].pending_checkpoint]
        answered = next(s for s in summaries if summaries[s].turns == 3)
        entries = [history_turn(t) for t in app.history(answered)]
        assert [e["status"] for e in entries] == ["answered", "answered", "error"]
        assert entries[0]["citations"] and entries[0]["cited_sources"] and entries[0]["seconds"]
        assert "unknown collection" in entries[2]["error"]
        assert [b["role"] for t in app.history(answered) for b in bubbles(t)] == [
            "user", "assistant"] * 3
        evidence = evidence_frame(app, answered)
        assert list(evidence.columns) == list(EVIDENCE_COLUMNS) and len(evidence) > 0
        indexed = evidence["chunk_id"].str.fullmatch(r"\w+:\d{4}")  # not a section read
        assert indexed.any() and evidence.loc[indexed, "chunk_type"].notna().all()  # from the index
        assert set(evidence.loc[evidence["cited"], "chunk_id"]) == {
            c["chunk_id"] for c in old["turns"][evidence["turn_id"][0]]["payload"]["citations"]}
        audit = audit_frame(app, answered)
        assert list(audit.columns) == list(AUDIT_COLUMNS)
        assert list(audit["status"]) == ["answered", "answered", "error"]
        assert audit["words"].iloc[0] > 0 and audit["output_tokens"].iloc[0] > 0

        (paused,) = app.history(sid)
        entry = history_turn(paused)
        assert entry["status"] == "checkpoint"
        assert entry["checkpoint"]["interrupt_id"] == summaries[sid].pending_checkpoint
        assert entry["session_id"] == sid  # the card is the turn view's, as the panel expects
        assert audit_frame(app, sid)["calls"].iloc[0] == paused.checkpoint.calls_used  # type: ignore[union-attr]

        final = terminal(run(app.resume(sid, summaries[sid].pending_checkpoint, "synthesize")))
        assert final.type == "final", final
        assert final.turn_id == paused.turn_id and final.cited_sources
        (done,) = app.history(sid)
        assert done.status == "answered" and done.checkpoint is None
        assert done.usage.output_tokens > paused.usage.output_tokens  # the first part counted
        assert app.pending_checkpoint(sid) is None


def test_a_newer_file_is_refused_not_downgraded(tmp_path: Path) -> None:
    SessionStore.open(tmp_path).close()
    db = tmp_path / "sessions.db"
    with sqlite3.connect(db) as c:
        c.execute("PRAGMA user_version = 99")
    with pytest.raises(NewerSessionStore, match="newer zocrates-nb") as refused:
        SessionStore.open(tmp_path)
    assert "upgrade zocrates-nb" in str(refused.value) and "Error" not in str(refused.value)
    with sqlite3.connect(db) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 99


def test_a_failing_migration_leaves_the_file_as_it_was(
    v1_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(c: sqlite3.Connection) -> None:
        migrations.typed_turns(c)  # all the work, then a failure before the commit
        raise RuntimeError("disk full")

    monkeypatch.setattr(migrations, "MIGRATIONS", (migrations.initial_schema, broken))
    with pytest.raises(RuntimeError, match="disk full"):
        SessionStore.open(v1_home)
    monkeypatch.undo()
    # Nothing of the half-done migration is left: still the first release's file, which the
    # real migration then converts.
    assert first_release_rows(v1_home / "sessions.db")["messages"] > 0
    store = SessionStore.open(v1_home)
    assert store.schema_version == 5 and len(store.list_sessions()) == 3
    store.close()
