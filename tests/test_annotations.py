"""Verified quotes of real answers written as highlights in the corpus PDFs through a loopback
Web API (ZOTERO_WEB_API.md): each highlight read back, its rectangles' text rendered from the PDF
with PDFium and compared with the quote; a lost answer or a re-run never makes a duplicate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pypdfium2 as pdfium
import pytest
from agents_helpers import run, terminal
from zotero_fakes import FakeWebAPI

from zocrates_nb.app import App
from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.errors import UsageError
from zocrates_nb.ingest.pdf_locate import locate, loose
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.text import strip_reference_markers
from zocrates_nb.turn import Citation, TurnResult
from zocrates_nb.writeback.annotations import Attachment, plan, verified_quotes, write_highlights

pytestmark = pytest.mark.corpus
QUESTIONS = ("How does Raft elect a leader?",
             "How does Dynamo handle temporary node failures?",
             "How does the Google File System recover from chunkserver failures?",
             "How does chain replication handle the failure of a server?",
             "How does MoCo maintain its dictionary of negative keys?")  # fmt: skip
KEY = {"ZOTERO_API_KEY": "test-zotero-key"}


@pytest.fixture(scope="module")
def answered(corpus_index: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[App, list[TurnResult]]]:  # fmt: skip
    """Real offline answers over the indexed corpus, in a home of their own."""
    home = tmp_path_factory.mktemp("annotate-home")
    app = App.open(home, index=corpus_index.index)
    turns = []
    for q in QUESTIONS:
        final = terminal(run(app.ask(q, hitl=False)))
        assert final.type == "final", final
        turns.append(app.turn(final.turn_id))
    yield app, turns
    app.close()


def bare(text: str) -> str:
    """Text compared as the locator compares it: reference markers aside, letters and digits."""
    return loose(strip_reference_markers(text))


def pdfs(app: App) -> dict[str, str]:
    """The index's PDF attachments: key → file."""
    return {d.doc_key: d.file for d in app.library_index.catalog.documents() if d.kind == "pdf"}


def web(api: FakeWebAPI, library_type: str = "user") -> ZoteroWebSettings:
    return ZoteroWebSettings(library_id=api.library.rsplit("/", 1)[1], base_url=api.url,
                             library_type=library_type)  # fmt: skip


def read_back(api: FakeWebAPI, key: str) -> dict[str, Any]:
    r = httpx.get(f"{api.url}{api.library}/items/{key}",
                  headers={"Authorization": "Bearer test-zotero-key"})  # fmt: skip
    assert r.status_code == 200
    data: dict[str, Any] = r.json()["data"]
    return data


def rendered(file: str, position: dict[str, Any]) -> str:
    """The PDF's text inside the highlight's rectangles."""
    pdf = pdfium.PdfDocument(file)
    try:
        tp = pdf[position["pageIndex"]].get_textpage()
        return " ".join(tp.get_text_bounded(*r) for r in position["rects"])
    finally:
        pdf.close()


def attachments_of(app: App) -> Any:
    from zocrates_nb.app.annotating import attachments

    return lambda key: attachments(app, key)


def test_each_verified_quote_becomes_a_highlight_covering_its_sentence_once(
    answered: tuple[App, list[TurnResult]],
) -> None:
    app, turns = answered
    files = pdfs(app)
    with FakeWebAPI(attachments=dict.fromkeys(files, "application/pdf")) as api:
        results = [write_highlights(t, attachments_of(app), web(api), environ=KEY,
                                    ledger=WriteLedger(app.store)) for t in turns]  # fmt: skip
        written = [h for r in results for h in r.highlights]
        assert len(written) >= 8 and all(h.state == "written" for h in written), written
        assert len({h.key for h in written}) == len(written) == len(api.created)
        for r, turn in zip(results, turns, strict=True):
            quotes, _ = verified_quotes(turn)
            for q in quotes:  # each quote's highlights (two across a page break) spell it
                parts = [bare(h.quote) for h in r.highlights if bare(h.quote) in bare(q.text)]
                assert "".join(parts) == bare(q.text) or not parts
            for h in r.highlights:
                item = read_back(api, h.key or "")
                assert item["itemType"] == "annotation" and item["annotationType"] == "highlight"
                assert item["parentItem"] == h.attachment_key
                assert item["annotationComment"].startswith(turn.prompt)
                position = json.loads(item["annotationPosition"])
                assert position["pageIndex"] == h.page_index
                assert item["annotationSortIndex"].startswith(f"{h.page_index:05d}|")
                assert item["annotationPageLabel"] == h.page_label
                text = rendered(files[item["parentItem"]], position)
                assert loose(text) == loose(item["annotationText"]), (text, item)
                # The quote is the cited passage's sentence: the highlight is it (or, across
                # a page break, one part of it).
                assert any(bare(item["annotationText"]) in bare(q.text) for q in quotes)
        # A second run of every turn writes nothing: each highlight is already there.
        again = [write_highlights(t, attachments_of(app), web(api), environ=KEY,
                                  ledger=WriteLedger(app.store)) for t in turns]  # fmt: skip
        assert len(api.created) == len(written)
        assert all(h.state == "already" for r in again for h in r.highlights)


def test_a_lost_answer_then_a_rerun_leaves_one_highlight_each_in_a_group_library(
    answered: tuple[App, list[TurnResult]], tmp_path: Path,
) -> None:
    app, turns = answered
    ledger_app = App.open(tmp_path, index=app.library_index)  # a ledger of its own
    files = pdfs(app)
    try:
        with FakeWebAPI("/groups/4711", attachments=dict.fromkeys(files, "application/pdf")) as api:
            api.lose.extend([0, 0, 0, 0])  # written at once, then every retry's answer lost too
            first = write_highlights(turns[0], attachments_of(app), web(api, "group"),
                                     environ=KEY, ledger=WriteLedger(ledger_app.store),
                                     sleep=lambda s: None)  # fmt: skip
            n = len(first.highlights)
            assert n and all(h.state == "pending" for h in first.highlights)
            assert "run the same" in first.message
            assert len(api.created) == n  # Zotero did write them
            second = write_highlights(turns[0], attachments_of(app), web(api, "group"),
                                      environ=KEY, ledger=WriteLedger(ledger_app.store),
                                      sleep=lambda s: None)  # fmt: skip
            assert [h.state for h in second.highlights] == ["written"] * n
            assert len(api.created) == n  # found again by read-back, not created twice
            assert {h.key for h in second.highlights} == {i["key"] for i in api.created}
            posts = [r for r in api.requests if r["method"] == "POST"]
            assert all(r["path"] == "/groups/4711/items" for r in posts)
            assert len({r["headers"]["Zotero-Write-Token"] for r in posts}) == 1
    finally:
        ledger_app.close()


def test_folder_papers_other_attachments_and_unplaceable_quotes_are_named_as_skipped(
    answered: tuple[App, list[TurnResult]],
) -> None:
    app, turns = answered
    files = pdfs(app)
    turn = turns[0]
    quotes = [q for q in verified_quotes(turn)[0] if q.doc_key in files]  # not the user's notes
    first = quotes[0].doc_key

    def as_folder(key: str) -> Attachment | None:
        return Attachment(key, "pdf", files[key], in_zotero=False) if key in files else None

    def as_html(key: str) -> Attachment | None:
        return Attachment(key, "html", files[key], in_zotero=True) if key in files else None

    for resolver, why in ((as_folder, "read from a folder"), (as_html, "not a PDF (html)")):
        highlights, skipped = plan(turn, resolver)
        assert not highlights and len(skipped) >= len(quotes)
        assert all(why in s.why for s in skipped if s.quote in {q.text for q in quotes})
    # A passage sentence the PDF does not hold (text from another edition, say): skipped.
    odd = "Raft elects its leader by drawing lots among all of the servers in the cluster."
    cite = turn.citations[0].model_copy(update={"text": odd})
    fake = turn.model_copy(update={
        "answer": f"- {odd} [1]", "citations": [cite]})  # fmt: skip
    highlights, skipped = plan(fake, lambda k: Attachment(k, "pdf", files[k], True))
    assert not highlights and skipped[0].why == "not found exactly in the PDF's text"
    assert skipped[0].quote == odd and first


def test_a_paraphrase_or_an_unverified_turn_is_no_quote() -> None:
    passage = "Raft uses a heartbeat mechanism to trigger leader election."
    cite = Citation(n=1, chunk_id="YH7LQ4ZJ:s8", item_key="B4BVDRMA", title="Raft", text=passage)
    turn = TurnResult(turn_id="t", session_id="s", index=1, prompt="q", status="answered",
                      citations=[cite], citations_verified=True,
                      answer='Leaders keep order by "Raft uses a heartbeat mechanism to trigger '
                             'leader election" [1]. Raft has leaders elected by timers [1].')
    quotes, skipped = verified_quotes(turn)
    assert [q.text for q in quotes] == [passage.rstrip(".")]
    assert [s.why for s in skipped] == ["written in the answer's own words, not quoted from "
                                        "the paper"]  # fmt: skip
    unverified = turn.model_copy(update={"citations_verified": False})
    assert verified_quotes(unverified)[0] == []


def test_a_quote_of_the_users_own_note_is_skipped_as_a_note() -> None:
    """Notes are evidence and are quoted, but they have no PDF to highlight: the user is
    told it was their note, not that a file is missing."""
    line = "Short note: Raft splits consensus into leader election, log replication and safety."
    cite = Citation(n=1, chunk_id="YJWHUYBU:0001", item_key="YJWHUYBU", title="Raft", text=line)
    turn = TurnResult(turn_id="t", session_id="s", index=1, prompt="q", status="answered",
                      citations=[cite], citations_verified=True, answer=f"- {line} [1]")
    highlights, skipped = plan(turn, lambda k: Attachment(k, "note", "", in_zotero=True))
    assert not highlights and [s.why for s in skipped] == [
        "your own note, not a PDF: there is nothing to highlight"]


def test_the_cited_page_is_only_a_hint_and_a_sentence_across_pages_is_two_highlights(
    answered: tuple[App, list[TurnResult]],
) -> None:
    app, _ = answered
    files = pdfs(app)
    raft = next(f for f in files.values() if "Understandable Consensus" in f)
    sentence = "Raft uses a heartbeat mechanism to trigger leader election."
    assert [p.page_index for p in locate(Path(raft), sentence, 12)] == [4]
    # The last words of a page and the first of the next, as one quote.
    pdf = pdfium.PdfDocument(raft)
    try:
        end = pdf[4].get_textpage().get_text_range().split()[-6:]
        start = pdf[5].get_textpage().get_text_range().split()[:6]
    finally:
        pdf.close()
    places = locate(Path(raft), " ".join(end + start), 5)
    assert [p.page_index for p in places] == [4, 5]
    assert loose(places[0].text + places[1].text) == loose(" ".join(end + start))


def test_annotate_asks_first_and_a_dry_run_writes_nothing(
    answered: tuple[App, list[TurnResult]], capsys: pytest.CaptureFixture[str],
) -> None:
    app, turns = answered
    with pytest.raises(UsageError, match="--yes"):
        app.annotate(turns[0].session_id, turn=1)
    with pytest.raises(UsageError, match="Web API"):
        app.annotate(turns[0].session_id, to="connector", confirmed=True)
    dry = app.annotate(turns[0].session_id, turn=1, dry_run=True)
    assert dry.dry_run and dry.highlights
    assert all(h.state == "would write" and h.rects for h in dry.highlights)


def test_the_panel_shows_a_dry_run_then_writes_once_confirmed(
    answered: tuple[App, list[TurnResult]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    """"Highlight in Zotero" (PROTOCOL.md): `annotate` without `confirmed` answers with what
    would be written and writes nothing; confirmed, the highlights reach the Web API."""
    from test_widget_protocol import panel
    from test_widget_protocol import run as run_async

    from zocrates_nb.widget.recording import send_from_front_end

    app, turns = answered
    monkeypatch.setenv("ZOTERO_API_KEY", "test-zotero-key")
    files = pdfs(app)
    with FakeWebAPI(attachments=dict.fromkeys(files, "application/pdf")) as api:
        own = App.open(tmp_path, index=app.library_index,
                       zotero={"web": {"library_id": "475425", "base_url": api.url}})  # fmt: skip
        try:
            sid = own.new_session("highlights")
            final = terminal(run(own.ask(turns[1].prompt, session_id=sid, hitl=False)))
            widget, comm = panel(own)
            widget.session_id = sid

            async def scenario() -> None:
                send_from_front_end(widget, {"kind": "annotate", "turn_id": final.turn_id})
                await comm.wait_for(lambda c: len(c.messages("annotate_result")) == 1, 60)
                assert not api.created  # a dry run writes nothing
                send_from_front_end(widget, {"kind": "annotate", "turn_id": final.turn_id,
                                             "confirmed": True})  # fmt: skip
                await comm.wait_for(lambda c: len(c.messages("annotate_result")) == 2, 60)
                await widget.wait()

            run_async(scenario())
        finally:
            own.close()
    dry, done = comm.messages("annotate_result")
    assert dry["ok"] and dry["dry_run"] and dry["highlights"]
    assert {h["state"] for h in dry["highlights"]} == {"would write"}
    assert done["ok"] and not done["dry_run"]
    assert {h["state"] for h in done["highlights"]} == {"written"}
    assert len(api.created) == len(done["highlights"]) == len(dry["highlights"])
