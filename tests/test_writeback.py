"""Saving staged candidates: Zotero's connector server and Web API (loopback fakes written from
the recorded protocol notes) and RIS/BibTeX files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bibtexparser
import pytest
from zotero_fakes import FakeConnector, FakeWebAPI

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import WriteError, save_to_connector, save_to_web, to_bibtex, to_ris

ARTICLE = Candidate(
    title="Augmenting large language models with chemistry tools",
    authors=["Andrés M Bran", "Sam Cox", "Schwaller, Philippe"],
    year=2024, venue="Nature Machine Intelligence", doi="https://doi.org/10.1038/S42256-024-00832-8",
    arxiv_id="2304.05376", url="https://www.nature.com/articles/s42256-024-00832-8",
    abstract="Large language models have shown strong performance. ChemCrow augments them.",
    sources=["Crossref", "Semantic Scholar"],
)  # fmt: skip
PREPRINT = Candidate(
    title="Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques",
    authors=["Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker"], year=2022,
    arxiv_id="http://arxiv.org/abs/2202.12139v1", url="https://arxiv.org/abs/2202.12139v1",
    pdf_url="https://arxiv.org/pdf/2202.12139v1", sources=["arXiv"],
)  # fmt: skip
WEB_ENV = {"ZOTERO_API_KEY": "test-zotero-key"}


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[WriteLedger]:
    """The write ledger of a fresh data home (sessions.db)."""
    store = SessionStore.open(tmp_path)
    yield WriteLedger(store)
    store.close()


def test_connector_saves_exactly_the_staged_items_into_the_selected_collection(
    ledger: WriteLedger,
) -> None:
    with FakeConnector() as zotero:
        result = save_to_connector([ARTICLE, PREPRINT], zotero.url, ledger=ledger)
    assert result.saved == [ARTICLE.id, PREPRINT.id]
    assert result.where == "the collection 'Distributed systems' in My Library"
    assert zotero.saved == [
        {"id": ARTICLE.id, "itemType": "journalArticle", "title": ARTICLE.title,
         "creators": [
             {"creatorType": "author", "firstName": "Andrés M", "lastName": "Bran"},
             {"creatorType": "author", "firstName": "Sam", "lastName": "Cox"},
             {"creatorType": "author", "firstName": "Philippe", "lastName": "Schwaller"}],
         "date": "2024", "url": ARTICLE.url, "abstractNote": ARTICLE.abstract,
         "tags": [{"tag": "zocrates:discovered"}], "DOI": "10.1038/s42256-024-00832-8",
         "publicationTitle": "Nature Machine Intelligence", "extra": "arXiv: 2304.05376"},
        {"id": PREPRINT.id, "itemType": "preprint", "title": PREPRINT.title,
         "creators": [
             {"creatorType": "author", "firstName": "Mohit Kumar", "lastName": "Ahuja"},
             {"creatorType": "author", "firstName": "Arnaud", "lastName": "Gotlieb"},
             {"creatorType": "author", "firstName": "Helge", "lastName": "Spieker"}],
         "date": "2022", "url": "https://arxiv.org/abs/2202.12139v1",
         "tags": [{"tag": "zocrates:discovered"}], "repository": "arXiv",
         "archiveID": "arXiv:2202.12139"},
    ]  # fmt: skip
    save = [r for r in zotero.requests if r["path"] == "/connector/saveItems"]
    assert len(save) == 1
    headers = {k.lower(): v for k, v in save[0]["headers"].items()}
    assert headers["x-zotero-connector-api-version"] == "3" and "origin" not in headers
    assert save[0]["body"]["sessionID"].startswith("zocrates-")
    assert [r["path"] for r in zotero.requests] == [
        "/connector/ping",
        "/connector/getSelectedCollection",
        "/connector/saveItems",
    ]


def test_connector_has_zotero_attach_the_pdfs_its_resolvers_find(ledger: WriteLedger) -> None:
    """saveItems ignores attachments (CONNECTOR.md §4): Zotero is asked to find each saved
    item's PDF with its own resolvers (§5b; this process downloads nothing). A PDF not found is
    reported and its item stays saved."""
    with FakeConnector() as zotero:
        zotero.resolvable = {ARTICLE.id}
        result = save_to_connector([ARTICLE, PREPRINT], zotero.url, ledger=ledger,
                                   find_pdfs=True)  # fmt: skip
        sid = next(r["body"]["sessionID"] for r in zotero.requests
                   if r["path"] == "/connector/saveItems")  # fmt: skip
        asked = [(r["path"], r["body"]) for r in zotero.requests[3:]]
    assert result.saved == [ARTICLE.id, PREPRINT.id] and result.failed == {}
    assert result.attached == [ARTICLE.id] == zotero.attached
    assert result.unattached == {PREPRINT.id: "Zotero knows no open-access copy of it"}
    assert asked == [
        ("/connector/hasAttachmentResolvers", {"sessionID": sid, "itemID": ARTICLE.id}),
        ("/connector/saveAttachmentFromResolver", {"sessionID": sid, "itemID": ARTICLE.id}),
        ("/connector/hasAttachmentResolvers", {"sessionID": sid, "itemID": PREPRINT.id}),
    ]


def test_connector_finds_no_pdf_unless_asked_and_reports_a_library_without_files(
    ledger: WriteLedger,
) -> None:
    with FakeConnector() as zotero:
        zotero.resolvable = {ARTICLE.id}
        # Discovery off: Zotero is not asked for PDFs.
        plain = save_to_connector([ARTICLE], zotero.url, ledger=ledger)
        assert [r["path"] for r in zotero.requests][-1] == "/connector/saveItems"
        zotero.files_editable = False
        result = save_to_connector([PREPRINT], zotero.url, ledger=ledger, find_pdfs=True)
    assert plain.attached == [] and plain.unattached == {}
    assert result.saved == [PREPRINT.id] and result.attached == [] == zotero.attached
    assert result.unattached == {PREPRINT.id: "My Library does not store files"}


def test_connector_refuses_a_read_only_selection_and_saves_nothing(ledger: WriteLedger) -> None:
    with (
        FakeConnector(editable=False) as zotero,
        pytest.raises(WriteError, match="read-only: select another one in Zotero"),
    ):
        save_to_connector([ARTICLE], zotero.url, ledger=ledger)
    assert zotero.saved == [] and not any(r["path"] == "/connector/saveItems"
                                          for r in zotero.requests)  # fmt: skip


def test_connector_not_running_is_a_plain_message(ledger: WriteLedger) -> None:
    with pytest.raises(WriteError, match=r"Zotero is not running .*127\.0\.0\.1:9.*ris or bibtex"):
        save_to_connector([ARTICLE], "http://127.0.0.1:9", ledger=ledger)


def test_connector_save_error_says_nothing_was_saved(ledger: WriteLedger) -> None:
    with FakeConnector() as zotero:
        zotero.injected.extend([(200, {"X-Zotero-Version": "7"}, b"{}"),
                                (200, {"X-Zotero-Version": "7"}, b'{"id": null}'),
                                (500, {"X-Zotero-Version": "7"}, b"")])  # fmt: skip
        result = save_to_connector([ARTICLE], zotero.url, ledger=ledger)
    assert result.saved == [] and not result.complete
    assert result.failed == {ARTICLE.id: "Zotero failed while saving them (HTTP 500); try again"}
    assert "nothing of that save was saved" in result.message
    assert ledger.saved() == {}


def web(api: FakeWebAPI) -> ZoteroWebSettings:
    return ZoteroWebSettings(library_id="475425", base_url=api.url)


def posts(api: FakeWebAPI) -> list[dict[str, Any]]:
    return [r for r in api.requests if r["method"] == "POST"]


def token(request: dict[str, Any]) -> str:
    return {k.lower(): v for k, v in request["headers"].items()}["zotero-write-token"]


def test_web_api_creates_the_items_with_the_key_and_a_write_token(
    ledger: WriteLedger,
) -> None:
    with FakeWebAPI() as api:
        result = save_to_web([ARTICLE, PREPRINT], web(api), ledger=ledger, collection="COLL2345",
                             environ=WEB_ENV)  # fmt: skip
    assert result.saved == [ARTICLE.id, PREPRINT.id] and not result.failed
    assert list(result.keys.values()) == [c["key"] for c in api.created]
    (post,) = posts(api)
    headers = {k.lower(): v for k, v in post["headers"].items()}
    assert headers["authorization"] == "Bearer test-zotero-key"
    assert len(headers["zotero-write-token"]) == 32
    assert [i["title"] for i in post["body"]] == [ARTICLE.title, PREPRINT.title]
    assert all(i["collections"] == ["COLL2345"] for i in post["body"])
    assert post["body"][0]["DOI"] == "10.1038/s42256-024-00832-8"
    assert post["body"][1]["itemType"] == "preprint"


def test_web_api_429_is_waited_out_then_saved_once(ledger: WriteLedger) -> None:
    waits: list[float] = []
    with FakeWebAPI() as api:
        api.injected.append((429, {"Retry-After": "2", "Content-Type": "text/plain"},
                             b"Request rate limit exceeded"))  # fmt: skip
        result = save_to_web([ARTICLE], web(api), ledger=ledger, environ=WEB_ENV,
                             sleep=waits.append)  # fmt: skip
    assert waits == [2.0] and result.saved == [ARTICLE.id]
    first, second = posts(api)  # the retry carries the same write token
    assert len(api.created) == 1 and token(first) == token(second)


def test_web_api_long_rate_limit_stops_and_says_how_to_continue(ledger: WriteLedger) -> None:
    with FakeWebAPI() as api:
        api.injected.append((429, {"Retry-After": "600"}, b"Request rate limit exceeded"))
        result = save_to_web([ARTICLE], web(api), ledger=ledger, environ=WEB_ENV,
                             sleep=lambda s: None)  # fmt: skip
    assert api.created == [] and result.saved == [] and result.pending == [ARTICLE.id]
    assert result.message.startswith("The Zotero Web API is rate limiting (it asks to wait "
                                     "600 s). Saved 0, not saved yet 1: run the same save")


def test_web_api_per_item_failures_are_reported_and_the_rest_kept(
    ledger: WriteLedger,
) -> None:
    untitled = Candidate(title="", doi="10.1/x")
    with FakeWebAPI() as api:
        result = save_to_web([ARTICLE, untitled], web(api), ledger=ledger, environ=WEB_ENV)
    assert result.saved == [ARTICLE.id] and result.failed == {untitled.id: "Title is required"}


def test_web_api_needs_a_library_id_and_a_key_and_never_prints_it(
    ledger: WriteLedger,
) -> None:
    with pytest.raises(WriteError, match=r"zotero\.web\.library_id"):
        save_to_web([ARTICLE], ZoteroWebSettings(), environ=WEB_ENV, ledger=ledger)
    with pytest.raises(WriteError, match="ZOTERO_API_KEY") as err:
        save_to_web([ARTICLE], ZoteroWebSettings(library_id="1"), environ={}, ledger=ledger)
    assert "test-zotero-key" not in str(err.value)


def test_bibtex_round_trips_through_bibtexparser() -> None:
    twin = ARTICLE.model_copy(update={"doi": "10.1/other", "id": ""})
    text = to_bibtex([ARTICLE, PREPRINT, twin])
    db = bibtexparser.loads(text)
    assert [e["ID"] for e in db.entries] == ["bran2024augmenting", "ahuja2022testing",
                                             "bran2024augmentinga"]  # fmt: skip
    first, second, _ = db.entries
    assert first["ENTRYTYPE"] == "article" and first["title"] == ARTICLE.title  # no capitals
    assert first["author"] == "Bran, Andrés M and Cox, Sam and Schwaller, Philippe"
    assert first["doi"] == "10.1038/s42256-024-00832-8"
    assert first["journal"] == "Nature {Machine} {Intelligence}"  # capitals kept by styles
    assert second["ENTRYTYPE"] == "misc" and second["eprint"] == "2202.12139"
    assert second["eprinttype"] == "arxiv" and "journal" not in second


def test_ris_has_one_record_per_candidate() -> None:
    text = to_ris([ARTICLE, PREPRINT])
    records = [r for r in text.split("ER  - ") if r.strip()]
    assert len(records) == 2
    assert "TY  - JOUR\nTI  - Augmenting large language models with chemistry tools\n" in text
    assert "DO  - 10.1038/s42256-024-00832-8" in records[0]
    assert "TY  - GEN" in records[1] and "M2  - Archive ID: arXiv:2202.12139" in records[1]
    assert records[0].count("AU  - ") == 3 and "AU  - Bran, Andrés M\n" in records[0]


def test_bibtex_escapes_latex_specials_in_prose_not_in_urls() -> None:
    odd = Candidate(title="50% of {braces} & more", authors=["A_B Writer"], year=2019,
                    venue="Big Data & Society", doi="10.1177/2053951719836258",
                    url="https://example.org/a_b?x=1&y=2%20z")  # fmt: skip
    (entry,) = bibtexparser.loads(to_bibtex([odd])).entries
    assert entry["journal"] == r"Big {Data} \& {Society}"
    assert entry["title"] == r"50\% of \{braces\} \& more"
    assert entry["author"] == r"Writer, A\_B"
    assert entry["url"] == "https://example.org/a_b?x=1&y=2%20z"
