"""DataFrames of a session's evidence and audit, and of the library: built from real turns of the
offline engine over the indexed sample library, with fixed columns and dtypes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from zocrates_nb.app import App
from zocrates_nb.events import Event
from zocrates_nb.frames import (
    AUDIT_COLUMNS,
    EVIDENCE_COLUMNS,
    LIBRARY_COLUMNS,
    audit_frame,
    evidence_frame,
    library_frame,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

QUESTION = "What is a fencing token?"


def ask(app: App, prompt: str, session_id: str, **options: Any) -> list[Event]:
    async def collect() -> list[Event]:
        return [e async for e in app.ask(prompt, session_id=session_id, **options)]

    return asyncio.run(collect())


def assert_dtypes(frame: pd.DataFrame, columns: dict[str, str]) -> None:
    assert list(frame.columns) == list(columns)
    assert [str(t) for t in frame.dtypes] == list(columns.values())


@pytest.fixture(scope="module")
def answered(app: App) -> tuple[str, Any]:
    """A session with a searched, cited answer followed by a greeting."""
    sid = app.new_session()
    final = ask(app, QUESTION, sid)[-1]
    assert final.type == "final"
    assert ask(app, "Hello! Who are you?", sid)[-1].type == "final"
    return sid, final


def test_an_empty_session_gives_empty_frames_with_the_same_columns(app: App) -> None:
    sid = app.new_session()
    for frame, columns in ((evidence_frame(app, sid), EVIDENCE_COLUMNS),
                           (audit_frame(app, sid), AUDIT_COLUMNS)):
        assert frame.empty
        assert_dtypes(frame, columns)
    # A data home path (a Path or its text) works as well as the App.
    assert_dtypes(evidence_frame(str(app.home), sid), EVIDENCE_COLUMNS)
    assert_dtypes(audit_frame(app.home, sid), AUDIT_COLUMNS)


def test_evidence_frame_has_one_row_per_chunk_with_citations_and_support(
    app: App, answered: tuple[str, Any]
) -> None:
    sid, final = answered
    ev = evidence_frame(app, sid)
    assert_dtypes(ev, EVIDENCE_COLUMNS)
    assert len(ev) >= len(final.citations) > 0
    assert set(ev["turn"]) == {1}  # the greeting searched nothing
    cited = ev[ev["cited"]]
    assert set(cited["chunk_id"]) == {c.chunk_id for c in final.citations}
    assert cited["ranked"].all()  # only what the synthesizer saw can be cited
    by_chunk = {c.chunk_id: c for c in final.citations}
    for row in cited.to_dict("records"):
        c = by_chunk[row["chunk_id"]]
        assert row["support"] == pytest.approx(c.support)
        assert (row["title"], row["authors"], row["year"]) == (c.title, c.authors, c.year)
    assert ev.loc[~ev["cited"], "support"].isna().all()
    # The reranked evidence comes first, in order; then what the search found besides.
    ranked = ev[ev["ranked"]]
    assert list(ev["ranked"]) == [True] * len(ranked) + [False] * (len(ev) - len(ranked))
    assert list(ranked["rerank_rank"]) == list(range(1, len(ranked) + 1))
    assert ranked["rerank_score"].is_monotonic_decreasing
    assert ev.loc[~ev["ranked"], "rerank_rank"].isna().all()
    assert (ev["words"] > 0).all() and ranked["text"].str.len().gt(0).all()
    assert ev["authors"].map(len).gt(0).all() and ev["year"].notna().all()
    assert ev["chunk_type"].notna().all() and ev["tool"].isin(["search_corpus",
                                                               "read_document"]).all()
    found = ev[ev["tool"] == "search_corpus"]
    assert not found.empty and found["retrieval_rank"].ge(1).all()
    leases = ev[ev["title"] == "Leases and Lock Delays in Coordination Services"]
    assert not leases.empty and (leases["authors"].map(tuple) == ("Ines Okafor",)).all()

    # One turn, by number (negative from the end) or by id; unknown turns are errors.
    assert len(evidence_frame(app, sid, turn=1)) == len(ev)
    assert evidence_frame(app, sid, turn=2).empty
    assert evidence_frame(app, sid, turn=final.turn_id)["turn_id"].eq(final.turn_id).all()
    assert evidence_frame(app, sid, turn=-1).empty
    with pytest.raises(KeyError):
        evidence_frame(app, sid, turn=3)


def test_audit_frame_has_one_row_per_turn(app: App, answered: tuple[str, Any]) -> None:
    sid, final = answered
    audit = audit_frame(app, sid)
    assert_dtypes(audit, AUDIT_COLUMNS)
    assert list(audit["turn"]) == [1, 2]
    first, greeting = audit.iloc[0], audit.iloc[1]
    assert first["query"] == QUESTION and first["status"] == "answered"
    assert first["search_goal"] and first["scope"] == "library"
    assert first["calls"] >= 1 and first["extensions"] == 0
    # The words gathered are the evidence's own (what the search's ceiling counts).
    assert first["words"] == evidence_frame(app, sid, turn=1)["words"].sum() > 0
    assert first["evidence"] >= evidence_frame(app, sid, turn=1)["ranked"].sum() > 0
    assert first["cited"] == len({c.chunk_id for c in final.citations})
    assert first["seconds"] == pytest.approx(final.seconds)
    assert {"search", "rerank", "synthesize"} <= set(first["timings"])
    assert first["output_tokens"] > 0 and pd.isna(first["cost_usd"])  # offline: no price
    assert first["model"].startswith("embedded offline engine")
    assert greeting["evidence"] == 0 and greeting["cited"] == 0 and greeting["search_goal"] == ""
    assert greeting["words"] == 0 and greeting["calls"] == 0
    assert audit["created"].is_monotonic_increasing


def test_a_turn_paused_at_a_checkpoint_is_audited_with_its_usage(app: App) -> None:
    sid = app.new_session()
    events = ask(app, "How does reciprocal rank fusion combine rankings, and why do lock "
                      "services use lock delays?", sid, budget=1)
    checkpoint = events[-1]
    assert checkpoint.type == "checkpoint"
    audit = audit_frame(app, sid)
    (row,) = audit.itertuples()
    assert row.status == "checkpoint"
    assert row.calls == checkpoint.calls_used and row.words == checkpoint.words_used
    assert row.extensions == 0
    # What the search gathered before pausing; nothing is ranked or cited yet.
    gathered = evidence_frame(app, sid)
    assert len(gathered) == row.evidence > 0
    assert not gathered["ranked"].any() and not gathered["cited"].any()
    assert gathered["rerank_rank"].isna().all()


def test_library_frame_lists_items_with_their_index_status(
    app: App, tmp_path: Path
) -> None:
    lib = library_frame(app)
    assert_dtypes(lib, LIBRARY_COLUMNS)
    assert len(lib) == 4 and (lib["status"] == "indexed").all()
    assert lib["chunks"].sum() == app.status().chunks
    by_title = lib.set_index("title")
    primer = by_title.loc["Hybrid Retrieval for Research Libraries: A Practical Primer"]
    assert primer["authors"] == ["Ada Marlow", "Tomás Reyes"] and primer["year"] == 2024

    # A folder library: sub-folders are collections, a broken PDF is reported, not hidden.
    folder = tmp_path / "papers"
    (folder / "systems").mkdir(parents=True)
    (folder / "systems" / "raft.md").write_text(
        "---\ntitle: Raft in brief\nauthors: [\"Diego Ongaro\"]\nyear: 2014\n---\n\n"
        "# Raft in brief\n\n## 1 Leader election\n\nA follower that hears no heartbeat becomes a "
        "candidate and asks the other servers for votes.\n", "utf-8")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a PDF")
    with App.open(tmp_path / "home") as folder_app:
        folder_app.index(folder=folder)
        frame = library_frame(folder_app).set_index("title")
    assert_dtypes(frame.reset_index()[list(LIBRARY_COLUMNS)], LIBRARY_COLUMNS)
    raft = frame.loc["Raft in brief"]
    assert raft["status"] == "indexed" and raft["collections"] == ["systems"]
    assert raft["chunks"] >= 1 and raft["indexed"] == raft["documents"] == 1
    broken = frame[frame["status"] != "indexed"]
    assert len(broken) == 1 and broken.iloc[0]["status"] in ("error", "skipped")
    assert broken.iloc[0]["problem"] and broken.iloc[0]["chunks"] == 0

    empty = library_frame(tmp_path / "empty-home")
    assert empty.empty
    assert_dtypes(empty, LIBRARY_COLUMNS)
