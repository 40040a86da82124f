"""Discovery and staging over the HTTP API: a real Jupyter server with the extension, the
recorded scholarly-API responses on loopback, and a fake Zotero connector."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import corpus_path
from online_fixtures import FixtureServer
from zotero_fakes import FakeConnector

from zocrates_nb.server.testing import JupyterServer


@pytest.fixture(scope="module")
def fakes() -> Iterator[tuple[FixtureServer, FakeConnector]]:
    with FixtureServer(corpus_path("online-fixtures")) as srv, FakeConnector() as zotero:
        yield srv, zotero


@pytest.fixture(scope="module")
def server(
    fakes: tuple[FixtureServer, FakeConnector], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("discover-http-home")
    srv, zotero = fakes
    config = {"online": srv.online_config(), "zotero": {"connector_url": zotero.url}}
    (home / "zocrates_config.json").write_text(json.dumps(config), "utf-8")
    with JupyterServer(home, tmp_path_factory.mktemp("jupyter"),
                       env={"OPENALEX_API_KEY": ""}) as running:  # fmt: skip
        yield running


def call(server: JupyterServer, method: str, path: str, body: Any = None) -> httpx.Response:
    with httpx.Client(base_url=server.url, timeout=httpx.Timeout(30, read=300),
                      headers={"Authorization": f"token {server.token}"}) as http:  # fmt: skip
        return http.request(method, path, json=body)


def test_discover_stage_and_save_over_http(
    server: JupyterServer, fakes: tuple[FixtureServer, FakeConnector]
) -> None:
    _, zotero = fakes
    r = call(server, "POST", "zocrates/discover", {"query": "ecology", "limit": 5})
    assert r.status_code == 200, r.text
    found = r.json()
    assert found["errors"] == [] and len(found["candidates"]) == 5
    ids = [c["id"] for c in found["candidates"][:2]]
    r = call(server, "POST", "zocrates/staging", {"ids": ids})
    assert r.status_code == 200 and [c["id"] for c in r.json()["staged"]] == ids
    r = call(server, "POST", "zocrates/staging/remove", {"ids": ids[:1]})
    assert [c["id"] for c in r.json()["staged"]] == ids[1:]
    r = call(server, "POST", "zocrates/staging/save", {"to": "connector"})
    assert r.status_code == 400 and "confirm" in r.json()["message"] and zotero.saved == []
    r = call(server, "POST", "zocrates/staging/save", {"to": "bibtex"})
    assert r.status_code == 200 and r.json()["text"].startswith("@")
    r = call(server, "POST", "zocrates/staging/save", {"to": "connector", "confirmed": True})
    assert r.status_code == 200, r.text
    assert r.json()["result"]["saved"] == ids[1:]
    assert [i["id"] for i in zotero.saved] == ids[1:]
    assert call(server, "GET", "zocrates/staging").json() == {"staged": []}


def test_bad_requests_are_plain_400s(server: JupyterServer) -> None:
    r = call(server, "POST", "zocrates/staging", {"ids": ["cnotfound0"]})
    assert r.status_code == 400 and "no candidate cnotfound0" in r.json()["message"]
    r = call(server, "POST", "zocrates/discover", {"query": "x", "limit": 1000})
    assert r.status_code == 400 and "limit" in r.json()["message"]
    r = call(server, "GET", "zocrates/staging?session_id=nope")
    assert r.status_code == 404


def test_saving_a_note_needs_a_confirmation_and_an_answer(server: JupyterServer) -> None:
    r = call(server, "POST", "zocrates/notes", {"session_id": "nope", "to": "connector"})
    assert r.status_code == 404
    r = call(server, "POST", "zocrates/notes", {"session_id": "x", "to": "ris"})
    assert r.status_code == 400


def test_the_openapi_document_lists_the_discovery_routes(server: JupyterServer) -> None:
    doc = call(server, "GET", "zocrates/openapi.json").json()
    assert {"/zocrates/discover", "/zocrates/staging", "/zocrates/staging/remove",
            "/zocrates/staging/save", "/zocrates/notes"} <= set(doc["paths"])  # fmt: skip
    path = Path(__file__).resolve().parents[1] / "zocrates_nb" / "server" / "openapi.json"
    assert doc == json.loads(path.read_text("utf-8"))
