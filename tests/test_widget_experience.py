"""The chat panel's Python side for the notebook experience (issue 12), spoken to through its comm
as the front end would: the first turn loading the models as a step of its own, plain
refusals (a checkpoint waits, a question too long), paused sessions marked, rename and delete,
each turn's scope by name, the empty screen's library line, Zotero links on sources, and
`chat()` returning a panel that gives its session's evidence and audit frames.

Real App, real index (the built-in sample library; a Zotero item made of a real PDF for the
links), real session store.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import agents_helpers
import pytest
from test_widget_protocol import BROAD, FACTUAL, TIMEOUT, ended, kinds, panel, run

from zocrates_nb.app import App
from zocrates_nb.errors import UsageError
from zocrates_nb.widget import MAX_PROMPT_CHARS, PAUSED_HINT, chat, start_warm_up
from zocrates_nb.widget.recording import recording_comms, send_from_front_end


def test_the_first_answer_loads_the_models_as_a_step_counted_in_its_seconds(
    sample_home: Path,
) -> None:
    """Models still loading when the question comes: the turn starts at once, its first step
    says the models load (each part named), and the seconds the answer shows include it; the
    next question loads nothing."""
    with App.open(sample_home) as fresh:  # a kernel just started: no model of this App loaded
        widget, comm = panel(fresh, warm_up=False)

        async def scenario() -> None:
            send_from_front_end(widget, {"kind": "ask", "prompt": FACTUAL})
            await comm.wait_for(ended, TIMEOUT)
            await widget.wait()

        run(scenario())
        steps = comm.events("step")
        assert steps[0]["phase"] == "loading" and steps[0]["turn_id"]  # a step of the turn
        assert "Loading the offline engine…" in [s["label"] for s in steps]
        order = kinds(comm)
        assert order[:2] == ["turn_started", "busy=True"]
        final = comm.events("final")[-1]
        record = fresh.turn(final["turn_id"])
        loading = sum(s.seconds or 0 for s in record.steps if s.phase == "loading")
        assert record.steps[0].phase == "loading" and loading > 0
        assert final["seconds"] >= loading and record.timings["loading"] > 0
        again = agents_helpers.terminal(agents_helpers.run(fresh.ask(FACTUAL)))
        assert not [s for s in fresh.turn(again.turn_id).steps if s.phase == "loading"]


def test_the_warm_up_loads_the_models_once_per_app_and_names_each_stage(sample_home: Path) -> None:
    with App.open(sample_home) as fresh:
        stages: list[str] = []
        fresh.warm_up(stages.append)
        assert stages == ["the search index and embedding model", "the offline engine",
                          "the reranker"]
        assert fresh.models_ready()  # the turn will not load them again
        warm = start_warm_up(fresh)
        assert start_warm_up(fresh) is warm, "one load per App, however many panels"
        assert warm.done.wait(120)
        assert warm.stage == "the reranker"


def test_a_panel_on_an_empty_home_does_not_warm_up_and_its_banner_has_no_backticks(
    tmp_path: Path,
) -> None:
    with App.open(tmp_path / "empty") as empty:
        widget, _ = panel(empty, warm_up=True)
        assert widget._warmup is None, "nothing to search: no models to load"
        assert "not indexed yet" in widget.error and "`" not in widget.error
        assert widget.library == {}


def test_asking_while_a_checkpoint_waits_is_refused_in_plain_words(app: App) -> None:
    widget, comm = panel(app, budget=1)

    async def ask(prompt: str) -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": prompt})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()

    run(ask(BROAD))
    (checkpoint,) = comm.events("checkpoint")
    # The card names the papers the search covered so far.
    assert checkpoint["papers"] and all(isinstance(p, str) and p for p in checkpoint["papers"])
    assert "similarity" not in checkpoint["covered_summary"]
    paused = [s for s in widget.sessions if s["id"] == widget.session_id]
    assert paused and paused[0]["paused"] is True

    comm.clear()
    run(ask("And something else?"))
    (refusal,) = comm.events("error")
    assert refusal["message"] == PAUSED_HINT
    assert checkpoint["turn_id"] not in refusal["message"]
    assert not re.search(r"[0-9a-f]{8}", refusal["message"]), "no internal ids"
    assert comm.messages("turn_started") == []

    # Reopened (a kernel restart), the paused turn's card names the papers again.
    send_from_front_end(widget, {"kind": "open_session", "session_id": widget.session_id})
    (turn,) = comm.messages("history")[-1]["turns"]
    assert turn["checkpoint"]["papers"] == checkpoint["papers"]
    assert turn["steps"], "the stored step trail comes back with the paused turn"


def test_a_question_over_the_limit_is_refused_with_its_length(app: App) -> None:
    widget, comm = panel(app)

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": "x" * (MAX_PROMPT_CHARS + 1)})
        await comm.wait_for(lambda c: c.events("error"), 30)

    run(scenario())
    (refusal,) = comm.events("error")
    assert f"{MAX_PROMPT_CHARS + 1:,} characters" in refusal["message"]
    assert widget.max_prompt == MAX_PROMPT_CHARS


def test_turns_carry_their_scope_by_name_and_sessions_can_be_renamed_and_deleted(
    app: App,
) -> None:
    widget, comm = panel(app)
    leases = next(m for m in app.search_titles("Leases") if m.kind != "collection")
    send_from_front_end(widget, {"kind": "set_scope", "scope": {
        "mode": "items", "items": [{"key": leases.key, "title": ""}], "collections": []}})

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": "What is a fencing token?"})
        await comm.wait_for(ended, TIMEOUT)
        await widget.wait()

    run(scenario())
    final = comm.events("final")[0]
    assert final["chips"]["mode"] == "items"
    assert final["chips"]["items"][0]["title"].startswith("Leases")
    session_id = widget.session_id
    send_from_front_end(widget, {"kind": "open_session", "session_id": session_id})
    (turn,) = comm.messages("history")[-1]["turns"]
    assert turn["chips"] == final["chips"]

    send_from_front_end(widget, {"kind": "rename_session", "session_id": session_id,
                                 "title": "  Fencing   tokens "})
    assert next(s for s in widget.sessions if s["id"] == session_id)["title"] == "Fencing tokens"
    assert app.session(session_id).title == "Fencing tokens"

    comm.clear()
    send_from_front_end(widget, {"kind": "delete_session", "session_id": session_id})
    assert all(s["id"] != session_id for s in widget.sessions)
    assert widget.session_id == ""
    assert comm.messages("history") == [{"kind": "history", "turns": []}]
    assert widget.error == ""


def test_the_empty_screen_shows_at_once_and_its_examples_follow_from_the_library(
    app: App,
) -> None:
    (app.library_index.index_dir / "topics.json").unlink(missing_ok=True)  # a fresh index
    widget, comm = panel(app)
    status = app.status()
    shown = comm.updates("library")[0]
    assert shown["items"] == status.items == 4 and shown["collections"] == 0
    assert shown["examples"] is None, "the panel shows before the examples are drawn"
    examples = run(comm.wait_for(lambda c: c.updates("library")[-1]["examples"], 60))
    assert widget.library["examples"] == examples and widget.library["items"] == 4
    # Drawn from the library's own sections, each naming the paper it asks about.
    titles = [i.title for i in app.items()]
    assert examples == [
        "What does “Hybrid Retrieval for Research Libraries: A Practical Primer” say about "
        "reciprocal rank fusion?",
        "What does “Leases and Lock Delays in Coordination Services” say about fencing tokens?",
    ]
    assert all(any(t in q for t in titles) for q in examples)
    _, comm2 = panel(app)  # cached for this index generation: at once
    assert comm2.updates("library")[0]["examples"] == examples


def zotero_pdf_home(tmp_path: Path) -> Path:
    """A data home holding one Zotero item (a real PDF attachment) with Zotero's keys."""
    from zocrates_nb import sample
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library.model import Attachment, Creator, Item, Library

    pdf = sample.build(tmp_path / "files") / "hybrid-retrieval.pdf"
    library = Library(source=f"test:{tmp_path}")
    library.items["HYBRID23"] = Item(
        key="HYBRID23", item_type="journalArticle", title="Hybrid Retrieval",
        creators=[Creator("Okafor", "Ada")], year=2024, version="v7:2024-05-01T00:00:00Z",
        attachments=[Attachment(key="PDFATT23", parent_key="HYBRID23", title="Full Text PDF",
                                content_type="application/pdf", link_mode="imported_file",
                                path=pdf, filename=pdf.name, version="v7:2024-05-01T00:00:00Z")],
    )
    home = tmp_path / "home"
    with Index.open(home) as index:
        index_library(library, index, progress=False)
    return home


def test_sources_from_zotero_link_to_the_item_and_its_pdf(tmp_path: Path, app: App) -> None:
    from zocrates_nb.turn import Source, TurnResult

    def links(a: App, key: str) -> dict[str, str]:
        turn = TurnResult(turn_id="t", session_id="s",
                          other_sources=[Source(item_key=key, title="")])
        return a.view(turn).other_sources[0].links

    with App.open(zotero_pdf_home(tmp_path)) as zapp:
        assert links(zapp, "HYBRID23") == {
            "select": "zotero://select/library/items/HYBRID23",
            "pdf": "zotero://open-pdf/library/items/PDFATT23",
        }
        widget, comm = panel(zapp, warm_up=False)

        async def scenario() -> None:
            send_from_front_end(widget, {"kind": "ask", "prompt": FACTUAL})
            await comm.wait_for(ended, TIMEOUT)
            await widget.wait()

        run(scenario())
        final = comm.events("final")[0]
        assert final["cited_sources"][0]["links"]["pdf"].startswith("zotero://open-pdf/")
    # Folder and sample items are not in Zotero: no links.
    key = app.items()[0].key
    assert links(app, key) == {}


def test_chat_returns_a_panel_with_its_session_evidence_and_audit(app: App) -> None:
    with recording_comms():
        widget = chat(app, warm_up=False)
    assert widget.app is app
    with pytest.raises(UsageError, match="no session yet"):
        widget.evidence()

    async def scenario() -> None:
        send_from_front_end(widget, {"kind": "ask", "prompt": FACTUAL})
        await widget.comm.wait_for(ended, TIMEOUT)  # type: ignore[union-attr]
        await widget.wait()

    run(scenario())
    evidence: Any = widget.evidence()
    audit: Any = widget.audit()
    assert len(evidence) > 0 and evidence["cited"].any()
    assert list(audit["query"]) == [FACTUAL]
    assert audit["words"].iloc[0] > 0


def test_a_stray_backtick_in_quoted_paper_text_stays_text(tmp_path: Path) -> None:
    """The offline engine quotes papers as Markdown: a lone backtick in a quote is escaped, so
    the panel does not turn the rest of the answer into a code span."""
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "flags.md").write_text(
        "# Command Line Flags for Safe Deployments\n\n## 1 The force flag\n\n"
        "The deploy tool skips every safety check when the operator passes the `--force flag "
        "on the command line, which is why operators should never pass the force flag during "
        "a production deployment of the service.\n", "utf-8")
    with App.open(tmp_path / "home") as fapp:
        fapp.index(folder=folder)

        async def ask() -> Any:
            events = [e async for e in fapp.ask("Why should operators never pass the force flag?")]
            return events[-1]

        final = run(ask())
    assert final.type == "final"
    assert "\\`--force flag" in final.answer
    assert "`--force" not in final.answer.replace("\\`", "")
