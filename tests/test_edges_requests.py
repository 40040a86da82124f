"""What one request may select, and the Zotero Web API offline, through the App and the CLI:
one sentence each, before any work."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from zocrates_nb.app import App
from zocrates_nb.cli import main
from zocrates_nb.errors import UsageError
from zocrates_nb.turn import AskOptions, Scope


def test_unknown_item_keys_are_refused_like_unknown_collections(app: App) -> None:
    known = app.search("reciprocal rank fusion", limit=1)[0].item_key
    with pytest.raises(UsageError) as err:
        app.search("fusion", items=[known, "NOSUCHKY"])
    assert str(err.value) == ("unknown item key 'NOSUCHKY': not in the index (run `zocrates-nb "
                              "index` if they were added to the library since)")  # fmt: skip
    with pytest.raises(UsageError, match=r"unknown item keys 'A2345678', 'B2345678', 'C2345678', "
                                         r"'D2345678', 'E2345678' and 2 more"):  # fmt: skip
        app.ask("What is fusion?", items=[f"{c}2345678" for c in "ABCDEFG"])
    with pytest.raises(UsageError, match="unknown collection 'Nope'"):
        app.ask("What is fusion?", collections=["Nope"])
    assert app.search("fusion", items=[known])  # a known key still searches


def test_too_many_keys_are_refused_before_a_single_look_up(
    app: App, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = [f"K{n:07d}" for n in range(5_001)]
    with pytest.raises(UsageError) as err:
        app.ask("What is fusion?", items=keys)
    assert str(err.value).startswith("5,001 item keys in one request; at most 5,000 are accepted "
                                     "(limits.scope_items in zocrates_config.json)")
    home = app.home
    assert main(["--home", str(home), "search", "fusion", "--collection",
                 *[f"C{n}" for n in range(101)]]) == 2  # fmt: skip
    assert capsys.readouterr().err.startswith(
        "zocrates-nb: error: 101 collections in one request; at most 100 are accepted")


def test_the_web_api_offline_is_one_sentence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the with ends: connections are refused
    home = tmp_path / "home"
    home.mkdir()
    (home / "zocrates_config.json").write_text(json.dumps(
        {"zotero": {"web": {"base_url": f"http://127.0.0.1:{port}"}}}))  # fmt: skip
    assert main(["--home", str(home), "index", "--zotero-web", "475425"]) == 2
    err = capsys.readouterr().err
    assert err == ("zocrates-nb: error: the Zotero Web API (127.0.0.1) could not be reached (no "
                   "network connection, or the server is down): check the network connection "
                   "and try again\n")  # fmt: skip
    assert main(["--home", str(home), "index", "--zotero-web", "../../etc"]) == 2
    assert "'../../etc' is not a Zotero library id: it is a number" in capsys.readouterr().err
    assert not (home / "downloads").exists() or not any((home / "downloads").iterdir())


@pytest.mark.parametrize("bad", [False, 0, "", {}, "ABCD2345", [1]])
def test_a_scope_that_is_not_a_list_of_keys_is_refused_naming_its_field(
    app: App, bad: object
) -> None:
    """`false`, `0`, `""` or `{}` never reads as "no scope" (the whole library)."""
    for field in ("items", "collections"):
        with pytest.raises(UsageError, match=rf"^{field}"):
            app.search("fusion", **{field: bad})  # type: ignore[arg-type]
        with pytest.raises(UsageError, match=rf"^{field}"):
            app.ask("What is fusion?", **{field: bad})
    assert AskOptions(items=None, collections=None).scope == Scope()  # null: no restriction


def test_batch_lines_refuse_a_scope_that_is_not_a_list_of_keys(
    app: App, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [{"id": "false", "items": False}, {"id": "zero", "collections": 0},
             {"id": "blank", "collection": ""}, {"id": "object", "scope": {"items": {}}},
             {"id": "scope", "scope": False}]  # fmt: skip
    questions, queries = tmp_path / "questions.jsonl", tmp_path / "queries.jsonl"
    questions.write_text("".join(json.dumps({"question": "fusion?", **x}) + "\n" for x in lines))
    searches = [{"id": "false", "items": False}, {"id": "zero", "collections": 0},
                {"id": "blank", "collections": ""}]  # fmt: skip
    queries.write_text("".join(json.dumps({"query": "fusion", **x}) + "\n" for x in searches))
    home = str(app.home)
    assert main(["--home", home, "ask", "--questions", str(questions), "--json"]) == 1
    asked = {o["id"]: o for o in map(json.loads, capsys.readouterr().out.splitlines())}
    assert main(["--home", home, "search", "--queries", str(queries), "--json"]) == 1
    searched = {o["id"]: o for o in map(json.loads, capsys.readouterr().out.splitlines())}
    assert {k: o["status"] for k, o in asked.items()} == dict.fromkeys(asked, "error")
    assert asked.keys() == {"false", "zero", "blank", "object", "scope"}
    for key, field in (("false", "items"), ("zero", "collections"), ("blank", "collections"),
                       ("object", "items")):  # fmt: skip
        assert asked[key]["error"].startswith(f"{field}: Input should be a valid list"), key
    assert asked["scope"]["error"].endswith('"scope" must be an object')
    for key, field in (("false", "items"), ("zero", "collections"), ("blank", "collections")):
        assert searched[key]["error"].startswith(f"{field}: Input should be a valid list"), key
