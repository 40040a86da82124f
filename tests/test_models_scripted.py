"""A configured model, the way a researcher configures one: an OpenAI-compatible endpoint (the
scripted server in `zocrates_nb.devtools.scripted_openai`, on loopback), driving the real App,
index, tools and session store. Each test fails without the behaviour it names."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import RAFT, index_small_library, run, terminal
from conftest import LibraryBuilder
from scripted_helpers import (
    QUESTION,
    configure,
    of_role,
    open_app,
    roles,
    searcher,
)

from zocrates_nb.agents.search_context import ELIDED_WORDS, SHORTENED
from zocrates_nb.app import App
from zocrates_nb.devtools.scripted_openai import (
    Drop,
    Hang,
    Raw,
    Request,
    ScriptedOpenAI,
    Status,
    Step,
    bad_args,
    closed_port_url,
    model_config,
    text,
    tool,
)


@pytest.fixture(scope="module")
def small_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("scripted-llm")
    index = index_small_library(LibraryBuilder(root / "library"), root / "home")
    yield root / "home", index
    index.close()


@pytest.fixture(scope="module")
def small(small_home: tuple[Path, Any]) -> Any:
    return small_home[1]


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


# ---------------------------------------------------------------------------- the baseline
def test_a_configured_model_answers_through_the_real_pipeline(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles())
    app = open_app(tmp_path, llm, small)
    final = terminal(run(app.ask(QUESTION, hitl=False)))
    assert final.type == "final", final
    assert "randomized election timeouts [1]" in final.answer
    assert final.citations and final.citations[0].item_key == RAFT
    # The streamed roles ask for usage in the stream (what the usage record is built from);
    # the verifier and the question's parts answer a typed record in one body.
    streamed = [r for r in llm.requests if r.role not in ("verifier", "parts")]
    assert all(r.stream and r.body["stream_options"]["include_usage"] for r in streamed)
    assert {r.role for r in llm.requests} >= {"coordinator", "search", "synthesizer"}


# ---------------------------------------------------------------------------- tools not used
def test_a_search_model_that_never_searches_is_an_error_naming_role_and_model(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(search=lambda req: text("Raft uses randomized timeouts.")))
    app = open_app(tmp_path, llm, small)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error"
    assert "search model openai:scripted answered without searching" in end.message
    searches = of_role(llm, "search")
    # Insisted exactly once, with tool use required on the wire.
    assert [r.tool_choice for r in searches] == ["auto", "required"]
    assert "Use your tools now" in json.dumps(searches[1].messages)
    assert not of_role(llm, "synthesizer"), "no answer is written from an empty search"
    turn = app.history(app.sessions()[0].session_id)[-1]
    assert turn.status == "error" and turn.answer == ""
    # Both answers the server gave are counted.
    assert turn.usage.roles["search"].requests == 2


def test_insisting_once_recovers_a_model_that_then_searches(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    def search(req: Request) -> Step:
        if req.tool_choice != "required":
            return text("I think Raft uses timeouts.")
        return searcher(req)

    llm.set_script(roles(search=search))
    app = open_app(tmp_path, llm, small)
    final = terminal(run(app.ask(QUESTION, hitl=False)))
    assert final.type == "final" and "[1]" in final.answer
    assert any("answered without searching" in s.label for s in final.steps)


@pytest.mark.parametrize(
    ("steps", "words"),
    [
        ([bad_args("search_corpus")] * 3, "sent invalid arguments for search_corpus"),
        ([tool("search_corpus", query="raft", limit=3), Raw()], "sent a reply that is not JSON"),
    ],
    ids=["invalid-arguments-x3", "non-json-200"],
)
def test_unusable_search_replies_are_an_error_not_an_empty_answer(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any, steps: list[Step], words: str
) -> None:
    llm.set_script(roles(search=steps))
    app = open_app(tmp_path, llm, small)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error", getattr(end, "answer", "")
    assert end.message.startswith("The search model openai:scripted at http://127.0.0.1:")
    assert words in end.message
    assert "Traceback" not in end.message and "UnexpectedModelBehavior" not in end.message
    assert not of_role(llm, "synthesizer")


# ---------------------------------------------------------------------------- deadlines
def test_a_hung_endpoint_fails_within_models_timeout_and_says_how_long(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(coordinator=[Hang(60), Hang(60), Hang(60)]))
    app = open_app(tmp_path, llm, small, timeout=2)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error"
    assert end.message.startswith("The coordinator model openai:scripted at http://127.0.0.1:")
    assert "did not finish answering within models.timeout = 2 s" in end.message
    m = re.search(r"gave up after (\d+\.\d) s", end.message)
    assert m, end.message
    # The deadline covers the SDK's retries: one deadline, not one per attempt (the bug: 3×).
    assert 2.0 <= float(m.group(1)) < 4.0


def test_retries_of_a_rate_limited_call_stay_inside_the_deadline(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(coordinator=lambda req: Status(429, retry_after=1.5)))
    app = open_app(tmp_path, llm, small, timeout=2)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error"
    # The first attempt and one retry after Retry-After; the next wait would pass the 2 s
    # deadline, so the call stops there and says what the server said, and the time waited.
    assert len(llm.requests) == 2
    assert "is rate-limiting requests (HTTP 429); try again in 1.5 s" in end.message
    m = re.search(r"gave up after (\d+\.\d) s", end.message)
    assert m and 1.5 <= float(m.group(1)) < 2.0, end.message


@pytest.mark.parametrize(
    ("step", "words"),
    [
        (Drop(after=2), "dropped the connection before the answer was complete"),
        (Status(429, retry_after=0), "is rate-limiting requests (HTTP 429)"),
        (Status(503), "failed with a server error (HTTP 503)"),
    ],
    ids=["dropped", "429", "503"],
)
def test_each_transport_failure_has_its_own_plain_message(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any, step: Step, words: str
) -> None:
    llm.set_script(roles(coordinator=lambda req: step))
    app = open_app(tmp_path, llm, small)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error"
    assert end.message.startswith("The coordinator model openai:scripted at http://127.0.0.1:")
    assert words in end.message and "gave up after" in end.message
    assert "refused" not in end.message and "Error" not in end.message


def test_a_refused_connection_says_so(tmp_path: Path, small: Any) -> None:
    configure(tmp_path, closed_port_url())
    app = App.open(tmp_path, index=small)
    end = terminal(run(app.ask(QUESTION, hitl=False)))
    assert end.type == "error"
    assert "is unreachable (connection refused)" in end.message
    assert "dropped" not in end.message


# ---------------------------------------------------------------------------- usage
def gappy_searcher(req: Request) -> Step:
    """Searches until the budget refuses, then concludes with a gap (a reactive checkpoint)."""
    results = req.tool_results()
    if any(isinstance(r, dict) and r.get("status") == "budget_exhausted" for r in results[-1:]):
        return tool("conclude_search", summary="partial", gaps=["log compaction"])
    n = req.tool_calls_made().count("search_corpus")
    return tool("search_corpus", query=f"raft aspect {n}", limit=3)


def test_usage_after_a_checkpoint_and_resume_equals_what_the_server_served(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(search=gappy_searcher))
    app = open_app(tmp_path, llm, small)
    sid = app.new_session()
    pause = terminal(run(app.ask(QUESTION, session_id=sid, budget=2)))
    assert pause.type == "checkpoint", pause
    paused = app.history(sid)[-1]
    assert paused.usage.requests == llm.usage()["requests"] > 0
    again = terminal(run(app.resume(sid, pause.interrupt_id, "extend_budget")))
    assert again.type == "checkpoint", again  # the gap is still open: a second pause
    assert app.history(sid)[-1].usage.requests == llm.usage()["requests"]
    final = terminal(run(app.resume(sid, again.interrupt_id, "synthesize")))
    assert final.type == "final", final
    served = llm.usage()
    usage = app.history(sid)[-1].usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        served["requests"],
        served["input_tokens"],
        served["output_tokens"],
    )
    per_role = {role: len([r for r in llm.requests if r.role == role]) for role in usage.roles}
    assert {role: u.requests for role, u in usage.roles.items()} == per_role


def test_a_pass_stopped_by_the_request_limit_counts_its_requests(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    # A model that ignores the budget's refusals and never concludes.
    llm.set_script(roles(search=lambda req: tool("search_corpus", query="raft", limit=3)))
    app = open_app(tmp_path, llm, small)
    final = terminal(run(app.ask(QUESTION, hitl=False, budget=2)))
    assert final.type == "final"
    searches = [r for r in llm.served if r.role == "search"]
    assert len(searches) == 2 + 6  # the budget, then the request limit's margin
    assert final.usage.roles["search"].requests == len(searches)
    assert final.usage.requests == llm.usage()["requests"]


def test_a_failed_turn_keeps_its_usage(tmp_path: Path, llm: ScriptedOpenAI, small: Any) -> None:
    llm.set_script(roles(synthesizer=[Status(500)] * 3))
    app = open_app(tmp_path, llm, small)
    sid = app.new_session()
    end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert end.type == "error" and end.message.startswith("The synthesizer model")
    turn = app.history(sid)[-1]
    assert turn.status == "error"
    assert turn.usage.roles["search"].requests == 2  # what was served before the failure
    assert turn.usage.requests == llm.usage()["requests"]


def test_a_resume_after_a_config_edit_names_the_model_that_ran(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(search=gappy_searcher))
    app = open_app(tmp_path, llm, small)
    sid = app.new_session()
    pause = terminal(run(app.ask(QUESTION, session_id=sid, budget=2)))
    assert pause.type == "checkpoint"
    configure(tmp_path, llm.url, model="openai:scripted-2")
    final = terminal(run(app.resume(sid, pause.interrupt_id, "synthesize")))
    assert final.type == "final"
    assert final.usage.roles["synthesizer"].model == "openai:scripted-2"
    assert "openai:scripted-2" in final.model


# ---------------------------------------------------------------------------- verification
def long_section() -> tuple[str, str]:
    """A 34,000-character section (like Raft §5) and a sentence copied from near its end."""
    from conftest import topic_paragraphs

    body = "\n\n".join(topic_paragraphs("garden", 80, seed=3))
    while len(body) < 34_000:
        body += "\n\n" + "\n\n".join(topic_paragraphs("genome", 20, seed=len(body)))
    quote = "A follower that hears no heartbeat within its election timeout becomes a candidate."
    cut = len(body) - 1500
    return body[:cut] + " " + quote + " " + body[cut:], quote


def verifier_turn(llm: ScriptedOpenAI) -> Any:
    import asyncio

    from zocrates_nb.agents.models import resolve_model
    from zocrates_nb.agents.runtime import RoleModel, Roles, TurnContext
    from zocrates_nb.config import Settings

    settings = Settings.model_validate(model_config(llm.url))
    r = resolve_model(settings, "verifier")
    rm = RoleModel("verifier", r.model, r.settings, r.display_name, r.model_string, r)  # type: ignore[arg-type]
    roles = Roles(rm, rm, rm, rm, None)
    return TurnContext("s", "t", "q", asyncio.Queue(), None, None, settings, roles, None)  # type: ignore[arg-type]


def judge_by_passage(req: Request) -> Step:
    prompt = req.contents("user")[-1]
    claim, passage = prompt.split("<passage", 1)
    claim = claim.split("<claim>", 1)[1].split("</claim>", 1)[0].strip()
    p = 0.95 if " ".join(claim.split()) in " ".join(passage.split()) else 0.05
    return tool(req.tools[0], supported_probability=p, reason="scripted")


def test_a_claim_from_the_end_of_a_long_passage_is_verified_against_it(
    llm: ScriptedOpenAI,
) -> None:
    import asyncio

    from zocrates_nb.agents import citations as cit
    from zocrates_nb.agents.verifier import verify
    from zocrates_nb.retrieval.state import Evidence

    section, quote = long_section()
    assert len(section) > 34_000 and section.index(quote) > 30_000
    ranked = [Evidence(chunk_id="AK:s5", item_key="K", attachment_key="AK", text=section)]
    answer = f"{quote[:-1]} [1]."
    occs = cit.find_occurrences(answer)
    llm.set_script(judge_by_passage)
    verdicts = asyncio.run(verify(verifier_turn(llm), occs, ranked))
    assert verdicts[(0, 1)].supported and verdicts[(0, 1)].probability == 0.95
    (req,) = llm.requests
    passage = req.contents("user")[-1].split("<passage", 1)[1]
    assert len(passage) < 6_500  # the best windows, not the whole section nor its start
    done = cit.finish(answer, occs, verdicts, ranked, ranked)
    assert done.text == answer and done.verified is True


def test_a_failing_verifier_says_citations_not_verified_in_the_answer(
    llm: ScriptedOpenAI,
) -> None:
    import asyncio

    from zocrates_nb.agents import citations as cit
    from zocrates_nb.agents.verifier import verify
    from zocrates_nb.retrieval.state import Evidence

    ranked = [Evidence(chunk_id="AK:1", item_key="K", attachment_key="AK", text="Raft elects.")]
    answer = "Raft elects a leader [1]."
    occs = cit.find_occurrences(answer)
    llm.set_script(lambda req: Status(500))
    verdicts = asyncio.run(verify(verifier_turn(llm), occs, ranked))
    assert verdicts[(0, 1)].probability is None
    done = cit.finish(answer, occs, verdicts, ranked, ranked)
    assert done.text.startswith("Raft elects a leader [1].")
    assert done.text.endswith(cit.NOT_VERIFIED_NOTE) and done.verified is False
    assert done.citations[0].support is None


# ---------------------------------------------------------------------------- keep the search
def test_a_failed_answer_keeps_the_search_and_synthesize_writes_it_again(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(synthesizer=[Status(503)] * 3))
    app = open_app(tmp_path, llm, small)
    sid = app.new_session()
    end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert end.type == "error" and end.retryable and end.retry_id
    assert "server error (HTTP 503)" in end.message and "The search is kept" in end.message
    failed = app.history(sid)[-1]
    assert failed.status == "error" and failed.evidence and failed.tool_calls == 1
    searches = len(of_role(llm, "search"))
    # A retry that fails again keeps the search, says so, and counts what it spent.
    llm.set_script(roles(synthesizer=[Status(503)] * 3))
    again = terminal(run(app.resume(sid, end.retry_id, "synthesize")))
    assert again.type == "error" and again.retry_id == end.retry_id
    assert app.history(sid)[-1].status == "error"
    assert app.history(sid)[-1].usage.requests == llm.usage()["requests"]
    # The endpoint recovers; "Retry answer" writes the answer from the kept evidence.
    llm.set_script(roles())
    final = terminal(run(app.resume(sid, end.retry_id, "synthesize")))
    assert final.type == "final", final
    assert final.turn_id == failed.turn_id and "[1]" in final.answer
    assert len(of_role(llm, "search")) == searches, "nothing was searched again"
    turn = app.history(sid)[-1]
    assert turn.status == "answered" and turn.error is None
    assert turn.usage.requests == llm.usage()["requests"]
    # Only `synthesize` retries a failed answer; a new question simply moves on.
    assert app.pending_checkpoint(sid) is None


def test_a_new_question_supersedes_a_failed_answer(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    llm.set_script(roles(synthesizer=[Status(500)] * 3))
    app = open_app(tmp_path, llm, small)
    sid = app.new_session()
    end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert end.type == "error" and end.retry_id
    from zocrates_nb.errors import UsageError

    with pytest.raises(UsageError, match="only `synthesize`"):
        app.resume(sid, end.retry_id, "extend_budget")
    llm.set_script(roles())
    final = terminal(run(app.ask("And log replication?", session_id=sid, hitl=False)))
    assert final.type == "final"
    assert [t.status for t in app.history(sid)] == ["error", "answered"]
    assert app.pending_checkpoint(sid) is None


# ---------------------------------------------------------------------------- context economy
def test_older_passages_are_elided_and_results_carry_only_what_the_model_needs(
    tmp_path: Path, llm: ScriptedOpenAI, small: Any
) -> None:
    queries = ["raft leader election", "raft log replication", "tomato watering"]

    def search(req: Request) -> Step:
        n = req.tool_calls_made().count("search_corpus")
        if n < len(queries):
            return tool("search_corpus", query=queries[n], limit=3)
        return tool("conclude_search", summary="done", gaps=[])

    llm.set_script(roles(search=search))
    app = open_app(tmp_path, llm, small)
    final = terminal(run(app.ask(QUESTION, hitl=False)))
    assert final.type == "final"
    last = of_role(llm, "search")[-1]  # sees all three results
    first, second, latest = (r for r in last.tool_results() if isinstance(r, dict))
    full = {e.chunk_id: e for e in final.evidence}
    for older in (first, second):
        # One line per passage read earlier: its paper, place and opening words, one note.
        assert older["note"] == SHORTENED and all(isinstance(r, str) for r in older["results"])
        assert all(r.split()[0] in older["papers"] for r in older["results"])
        openings = [r.split(": ", 1)[1] for r in older["results"]]
        assert any(o.endswith(" …") for o in openings), older
        assert all(len(o.split()) <= ELIDED_WORDS + 5 for o in openings)
    assert "note" not in latest and not any(r["text"].endswith(" …") for r in latest["results"])
    # The writer still gets every passage in full: elision is for the search model only.
    assert full and any(len(e.text.split()) > ELIDED_WORDS + 5 for e in full.values())
    # No plumbing the model does not need, and each paper's title once.
    for r in latest["results"]:
        assert not {"chunk_id", "attachment_key", "authors", "chunk_type", "rank"} & set(r)
        assert r["item_key"] in latest["papers"]


# ---------------------------------------------------------------------------- the CLI
def test_the_cli_shows_tokens_per_turn_answered_or_failed(
    llm: ScriptedOpenAI, small_home: tuple[Path, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from zocrates_nb.cli import main

    home, _ = small_home
    configure(home, llm.url)
    try:
        llm.set_script(roles())
        assert main(["--home", str(home), "ask", QUESTION, "--no-hitl"]) == 0
        out = capsys.readouterr().out
        served = llm.usage()
        assert f"{served['input_tokens']:,} tokens in, {served['output_tokens']:,} out" in out
        llm.set_script(roles(synthesizer=[Status(500)] * 3))
        assert main(["--home", str(home), "ask", QUESTION, "--no-hitl"]) == 1
        err = capsys.readouterr().err
        assert "The synthesizer model openai:scripted" in err
        assert "[spent · " in err and "tokens in" in err
    finally:
        (home / "zocrates_config.json").unlink()
