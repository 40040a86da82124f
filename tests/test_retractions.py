"""Retracted papers in the real corpus library, checked against loopback OpenAlex and Crossref
servers that answer batched DOI filters as the recorded responses show (`is_retracted`;
`updated-by` notices with their type and date): flagged in status, doctor and an answer's
sources and JSON; cached with the date; offline nothing is sent and the date is said."""

from __future__ import annotations

import copy
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from agents_helpers import run, terminal
from conftest import corpus_path
from online_fixtures import FixtureServer, Reply

from zocrates_nb.app import App
from zocrates_nb.cli.printer import TurnPrinter
from zocrates_nb.events import Final
from zocrates_nb.online.retractions import CACHE, load
from zocrates_nb.online.sources import crossref_item, openalex_work

pytestmark = pytest.mark.corpus


def fixtures() -> Path:
    """The recorded OpenAlex and Crossref answers (the test skips without the corpus)."""
    return corpus_path("online-fixtures")

DYNAMO = "10.1145/1294261.1294281"  # flagged here (a made-up retraction, for the test)
ZAB = "10.1109/dsn.2011.5958223"  # an expression of concern, made up too
GFS = "10.1145/945445.945450"  # OpenAlex says retracted, Crossref has no notice


def _recorded(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((fixtures() / name).read_text("utf-8"))
    return data


class ScholarlyRecord(FixtureServer):
    """The recorded APIs, and batched DOI filters answered from records shaped as the
    recordings are: OpenAlex `filter=doi:a|b` → works; Crossref `filter=doi:a,doi:b` → items."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.work = _recorded("openalex/openalex_works_doi_10.1073-pnas.1414271111.json")
        self.item = _recorded("crossref/crossref_works_doi_10.1371-journal.pone.0033693.json")

    def answer(self, prefix: str, path: str, query: str) -> Reply:
        wanted = (parse_qs(query).get("filter") or [""])[0]
        if not (path.endswith("/works") and wanted.startswith("doi:")) or self.injected[prefix]:
            return super().answer(prefix, path, query)
        if prefix == "openalex":
            dois = wanted[4:].split("|")
            works = [{**copy.deepcopy(self.work), "doi": f"https://doi.org/{d}",
                      "is_retracted": d in (DYNAMO, GFS)} for d in dois]  # fmt: skip
            body = {"meta": {"count": len(works), "page": 1, "per_page": len(dois)},
                    "results": works, "group_by": []}  # fmt: skip
        else:
            dois = [d.removeprefix("doi:") for d in wanted.split(",")]
            items = []
            for d in dois:
                item = {**copy.deepcopy(self.item["message"]), "DOI": d}
                notice = self.item["message"]["updated-by"][0]
                kind = {DYNAMO: "retraction", ZAB: "expression_of_concern"}.get(d)
                item["updated-by"] = [{**notice, "type": kind, "label": kind.title(),
                                       "updated": {"date-parts": [[2021, 3, 2]]}}] if kind else []
                items.append(item)
            body = {"status": "ok", "message-type": "work-list",
                    "message": {"items": items, "total-results": len(items)}}  # fmt: skip
        return Reply(200, json.dumps(body).encode(), {"content-type": "application/json"})


@pytest.fixture
def server() -> Iterator[ScholarlyRecord]:
    with ScholarlyRecord(fixtures()) as srv:
        yield srv


def test_status_doctor_and_an_answer_name_the_retracted_papers_and_the_cache_is_dated(
    corpus_index: Any, tmp_path: Path, server: ScholarlyRecord
) -> None:
    app = App.open(tmp_path, index=corpus_index.index, online=server.online_config())
    try:
        status = app.status().retractions
        assert status is not None and status.dois == 17 and not status.errors
        flagged = {p.doi: p for p in status.papers}
        assert set(flagged) == {DYNAMO, ZAB, GFS}
        assert flagged[DYNAMO].notice == "this paper was retracted in 2021"
        assert flagged[DYNAMO].retracted and flagged[GFS].retracted
        assert not flagged[ZAB].retracted and "expression of concern" in flagged[ZAB].notice
        assert "Dynamo: Amazon's Highly Available Key-value Store: this paper was retracted " \
               "in 2021" in status.message
        # One batched request per API for the 17 DOIs.
        asked = [(p, q) for p, q, _ in server.requests]
        assert [p for p, _ in asked] == ["openalex", "crossref"]
        assert asked[0][1].count("%7C") == 16 and asked[1][1].count("doi%3A") == 17
        assert load(tmp_path).checked is not None and (tmp_path / CACHE).is_file()
        # doctor shows the same, and the check is not made again while it is fresh.
        assert app.doctor().retractions == app.status().retractions
        assert len(server.requests) == 2

        final = terminal(run(app.ask("How does Dynamo handle temporary failures of nodes?",
                                     hitl=False)))  # fmt: skip
        record = app.turn(final.turn_id)
        dynamo = next(s for s in record.cited_sources if s.item_key == "VBM7NB2X")
        assert dynamo.retracted and dynamo.notice == "this paper was retracted in 2021"
        assert f"[{dynamo.n}] *Dynamo: Amazon's Highly Available Key-value Store*: this paper " \
               "was retracted in 2021." in record.answer
        # `ask --json` prints the turn's sources with the two fields.
        printer = TurnPrinter(app, json_mode=True, verbose=False, out=io.StringIO(),
                              err=io.StringIO())  # fmt: skip
        printer.feed(Final.of(record))
        cited = next(s for s in printer.result()["cited_sources"] if s["item_key"] == "VBM7NB2X")
        assert cited["retracted"] is True and cited["notice"] == "this paper was retracted in 2021"
        assert not any(s.retracted for s in record.cited_sources if s.item_key != "VBM7NB2X"
                       and s.item_key not in ("KE77WAJS", "BJYZHN69"))  # fmt: skip
    finally:
        app.close()

    # Offline: nothing is sent; the last check is said with its date.
    before = len(server.requests)
    offline = App.open(tmp_path, index=corpus_index.index)
    try:
        status = offline.status().retractions
    finally:
        offline.close()
    assert len(server.requests) == before
    assert status is not None and status.checked == load(tmp_path).checked.date().isoformat()
    assert f"last checked {status.checked}; online search is off" in status.message
    assert {p.doi for p in status.papers} == {DYNAMO, ZAB, GFS}


def test_a_source_that_fails_keeps_what_the_last_check_found(
    corpus_index: Any, tmp_path: Path, server: ScholarlyRecord
) -> None:
    app = App.open(tmp_path, index=corpus_index.index, online=server.online_config())
    try:
        assert len(app.retractions().papers) == 3
        server.inject("openalex", Reply(500, b"oops"))
        again = app.retractions(refresh=True)
    finally:
        app.close()
    assert again.errors == ["OpenAlex: had a server error (HTTP 500); try again later"]
    assert {p.doi for p in again.papers} == {DYNAMO, ZAB, GFS}  # GFS kept from before
    assert "Not every source answered" in again.message


def test_discovery_candidates_carry_the_same_signal() -> None:
    work = _recorded("openalex/openalex_works_doi_10.1073-pnas.1414271111.json")
    assert not openalex_work(work).retracted
    flagged = openalex_work({**work, "is_retracted": True})
    assert flagged.retracted and flagged.notice == "this paper was retracted"
    item = _recorded("crossref/crossref_works_doi_10.1371-journal.pone.0033693.json")["message"]
    assert not crossref_item(item).notice  # a correction is no retraction
    notice = {**item["updated-by"][0], "type": "retraction",
              "updated": {"date-parts": [[2019, 1, 4]]}}  # fmt: skip
    retracted = crossref_item({**item, "updated-by": [notice]})
    assert retracted.retracted and retracted.notice == "this paper was retracted in 2019"
