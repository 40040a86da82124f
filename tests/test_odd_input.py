"""Odd and hostile user text at every entry point: lone surrogates, NUL and control characters,
huge queries, FTS5 and SQL syntax, emoji, right-to-left and zero-width text, DOIs and URLs —
through `App.search`, `App.ask`, and the CLI (`search`, `--queries`, `ask`, `--questions`).
Each either answers or gets one plain sentence; a bad batch line never stops the batch."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import RAFT, index_small_library, run, scripted, terminal, text
from conftest import LibraryBuilder

from zocrates_nb.app import App
from zocrates_nb.app.facade import MAX_QUERY_CHARS, MAX_QUESTION_CHARS
from zocrates_nb.cli import main
from zocrates_nb.errors import UsageError
from zocrates_nb.text import TextTooLong, safe_text

SURROGATE = "\ud800"


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("odd-input")
    home = root / "home"
    index = index_small_library(LibraryBuilder(root / "library"), home)
    yield home, index
    index.close()


@pytest.fixture(scope="module")
def app(small: tuple[Path, Any]) -> Iterator[App]:
    home, index = small
    with App.open(home, index=index) as opened:
        yield opened


def test_safe_text_makes_any_text_encodable() -> None:
    s = safe_text(f"{SURROGATE}raft\x00leader\x07 e\u0301lection\u200b \U0001f600 ")
    assert s == "\ufffdraft leader  \u00e9lection\u200b \U0001f600"
    s.encode("utf-8")  # would raise UnicodeEncodeError on a lone surrogate
    assert safe_text("\udcff") == "\ufffd"  # an undecodable argv byte (surrogateescape)
    with pytest.raises(TextTooLong, match=r"the query is too long \(12 characters; at most 5\)"):
        safe_text("x" * 12, max_chars=5, what="the query")


ODD_QUERIES = [
    "",
    "   \t\n ",
    "?!.,;:()[]{}",
    '"',
    '"raft',
    "*",
    "raft*",
    "NEAR",
    "NEAR(raft leader)",
    "raft AND",
    "AND OR NOT",
    "title:raft",
    "raft:leader",
    "^raft",
    "'; DROP TABLE chunks; --",
    "1 OR 1=1",
    "\U0001f9ea\U0001f52c leader election \U0001f5f3",
    "\u0627\u0646\u062a\u062e\u0627\u0628 \u0627\u0644\u0642\u0627\u0626\u062f raft",  # RTL
    "ra\u200bft lea\u200dder \ufeff",  # zero-width characters
    "10.1145/2643130.2643143",
    "https://raft.github.io/raft.pdf?x=1&y=2#leader",
    f"{SURROGATE} leader election",
    "leader\x00election\x1b[31m",
]


@pytest.mark.parametrize("query", ODD_QUERIES)
def test_odd_queries_search_without_failing(app: App, query: str) -> None:
    before = app.status().chunks
    hits = app.search(query)
    assert isinstance(hits, list)
    for h in hits:
        json.dumps(h.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    assert app.status().chunks == before  # SQL-ish text changed nothing


def test_a_lone_surrogate_does_not_stop_a_query_from_finding_its_paper(app: App) -> None:
    hits = app.search(f"{SURROGATE} raft leader election heartbeat")
    assert hits and hits[0].item_key == RAFT


def test_a_huge_query_is_refused_in_one_sentence(app: App) -> None:
    with pytest.raises(UsageError) as refused:
        app.search("raft " * 4000)  # 20,000 characters
    assert str(refused.value) == (
        f"the query is too long (19,999 characters; at most {MAX_QUERY_CHARS:,}): shorten it"
    )
    assert app.search("raft " * 300)  # under the cap: searched


def _echo_app(home: Path, index: Any, seen: list[str]) -> App:
    """An App whose coordinator answers at once, recording the question it was sent."""

    def answer(messages: Any, info: Any) -> Any:
        from agents_helpers import user_prompts

        seen.append(user_prompts(messages)[-1])
        return text("Noted.")

    return App.open(home, index=index, role_models={"coordinator": scripted(answer, "echo")})


def test_ask_sanitises_the_question_and_refuses_empty_or_huge_ones(
    tmp_path: Path, small: tuple[Path, Any]
) -> None:
    _, index = small
    seen: list[str] = []
    with _echo_app(tmp_path, index, seen) as app:
        final = terminal(run(app.ask(f"{SURROGATE}Raft\x00 leader?", hitl=False)))
        assert final.type == "final"
        assert seen == ["\ufffdRaft  leader?"]
        assert app.turn(final.turn_id).prompt == "\ufffdRaft  leader?"
        for empty in ("", "  ", "\x00\x01", "\n\t"):
            with pytest.raises(UsageError, match=r"^ask needs a question$"):
                app.ask(empty)
        with pytest.raises(UsageError, match="the question is too long"):
            app.ask("why " * (MAX_QUESTION_CHARS // 4 + 1))
    assert seen == ["\ufffdRaft  leader?"]  # nothing refused ever reached a model


def test_cli_search_with_undecodable_argv(
    small: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    home, _ = small
    # Python decodes bad argv bytes to lone surrogates (surrogateescape): "\udcff".
    assert main(["--home", str(home), "search", "\udcffraft leader election", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits and hits[0]["item_key"] == RAFT
    assert main(["--home", str(home), "search", "x" * (MAX_QUERY_CHARS + 1)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("zocrates-nb: error: the query is too long") and "Traceback" not in err


def test_cli_search_batch_reports_bad_lines_and_goes_on(
    tmp_path: Path, small: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    home, _ = small
    queries = tmp_path / "queries.jsonl"
    lines = [
        json.dumps({"id": "surrogate", "query": f"{SURROGATE} raft leader election"}),
        "{not json",
        json.dumps({"id": "no-query", "q": "raft"}),
        json.dumps({"id": "empty", "query": "  "}),
        json.dumps({"id": "huge", "query": "raft " * 4000}),
        json.dumps({"id": "bad-collection", "query": "raft", "collections": ["Nope"]}),
        json.dumps(["a", "list"]),
        json.dumps({"id": "fts", "query": 'NEAR("raft" * AND'}),
        json.dumps({"id": "last", "query": "leader election"}),
    ]
    queries.write_text("\n".join(lines) + "\n", "utf-8")
    assert main(["--home", str(home), "search", "--queries", str(queries), "--limit", "3"]) == 1
    captured = capsys.readouterr()
    out = [json.loads(line) for line in captured.out.splitlines()]
    assert [o["id"] for o in out] == ["surrogate", 2, "no-query", "empty", "huge",
                                      "bad-collection", 7, "fts", "last"]  # fmt: skip
    by_id = {o["id"]: o for o in out}
    assert by_id["surrogate"]["results"][0]["item_key"] == RAFT
    assert by_id["last"]["results"] and "results" in by_id["fts"]
    assert by_id[2]["error"] == "not valid JSON (column 2)"
    assert by_id["no-query"]["error"] == 'the line has no "query" text'
    assert by_id["empty"]["error"] == "the query is empty"
    assert by_id["huge"]["error"].startswith("the query is too long (19,999 characters")
    assert "Nope" in by_id["bad-collection"]["error"]
    assert by_id[7]["error"] == 'a line must be a JSON object with a "query"'
    assert "Traceback" not in captured.err and "Error:" not in captured.err
    assert captured.err.count("zocrates-nb: ") == 6


def test_cli_question_batch_reports_bad_lines_and_goes_on(
    tmp_path: Path, small: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    home, _ = small
    questions = tmp_path / "questions.jsonl"
    lines = [
        "{not json",
        json.dumps({"id": "no-question", "prompt": "raft?"}),
        json.dumps({"id": "bad-scope", "question": "raft?", "scope": "everything"}),
        json.dumps({"id": "empty", "question": "\x00 "}),
        json.dumps({"id": "huge", "question": "why " * 6000}),
        json.dumps({"id": "bad-items", "question": "raft?", "items": "RAFTKEY2"}),
    ]
    questions.write_text("\n".join(lines) + "\n", "utf-8")
    code = main(["--home", str(home), "ask", "--questions", str(questions), "--json"])
    assert code == 1
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["id"] for o in out] == [1, "no-question", "bad-scope", "empty", "huge", "bad-items"]
    assert all(o["status"] == "error" for o in out)
    errors = {o["id"]: o["error"] for o in out}
    assert errors[1] == "questions.jsonl:1: not valid JSON (column 2)"
    assert errors["no-question"] == 'questions.jsonl:2: the line has no "question" text'
    assert errors["bad-scope"] == 'questions.jsonl:3: "scope" must be an object'
    assert errors["empty"] == "ask needs a question"
    assert errors["huge"].startswith("the question is too long (23,999 characters")
    assert "items" in errors["bad-items"]
    for message in errors.values():
        assert "Error" not in message and "Traceback" not in message
