"""Tool-call quirks and bytes that are not UTF-8 never lose a turn: through `App.ask`, on the
`openai:` and `litellm:` routes, against the scripted OpenAI-compatible server. Each answers
with its search evidence kept, and the usage counts what the server served, request for
request."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import run, terminal
from scripted_helpers import ANSWER, QUESTION, assert_usage_served, of_role, open_app, roles

from zocrates_nb.devtools.scripted_openai import (
    Drop,
    Reply,
    Request,
    ScriptedOpenAI,
    Step,
    ToolCall,
    bad_key,
    calls,
    text,
    too_long,
    tool,
)


def first_then_conclude(first: Reply) -> Any:
    def search(req: Request) -> Step:
        if not req.tool_calls_made():
            return first
        return tool("conclude_search", summary="Raft elections", gaps=[])

    return search


RAFT = {"query": "raft leader election", "limit": 3}
LOGS = {"query": "raft log replication", "limit": 3}
SEARCH_QUIRKS = {
    "shared-id": calls(
        ToolCall("search_corpus", RAFT, id="call_1"), ToolCall("search_corpus", LOGS, id="call_1")
    ),
    "empty-ids": calls(
        ToolCall("search_corpus", RAFT, id=""), ToolCall("search_corpus", LOGS, id="")
    ),
    "object-arguments": calls(ToolCall("search_corpus", RAFT, as_object=True)),
    "unknown-tool": calls(
        ToolCall("browse_web", {"url": "http://example.com"}), ToolCall("search_corpus", RAFT)
    ),
    "only-unknown-tool": calls(ToolCall("browse_web", {"url": "http://example.com"})),
}


@pytest.mark.parametrize("first", SEARCH_QUIRKS.values(), ids=list(SEARCH_QUIRKS))
def test_a_tool_call_quirk_of_the_search_model_never_loses_the_search(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str, first: Reply
) -> None:
    scripted_llm.set_script(roles(search=first_then_conclude(first)))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    final = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert final.type == "final", final
    assert final.evidence and final.answer.startswith(ANSWER[:20]), final
    assert final.seconds > 0
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)


def test_parallel_coordinator_calls_each_answer_or_are_said(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    def coordinator(req: Request) -> Step:
        return calls(ToolCall("search_library", {"request": QUESTION}, id="same"),
                     ToolCall("search_library", {"request": "How are logs replicated?"},
                              id="same"))  # fmt: skip

    scripted_llm.set_script(roles(coordinator=coordinator))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    final = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert final.type == "final", final
    assert final.evidence
    labels = " ".join(s.label for s in final.steps)
    assert "logs replicated" in labels or "How are logs replicated?" in final.answer, labels
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)


def test_invalid_utf8_bytes_are_replaced_counted_and_the_turn_answers(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    broken = "Raft elects a leader \udcff\udcfe with randomized election timeouts [1]."
    scripted_llm.set_script(roles(synthesizer=lambda req: text(broken)))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    final = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert final.type == "final", final
    assert "\ufffd" in final.answer and "timeouts [1]" in final.answer
    assert any("synthesizer" in w and "invalid" in w for w in final.warnings), final.warnings
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)


# ---------------------------------------------------------------------------- context window
def test_a_context_window_refusal_is_sent_again_shortened_once(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    replies = iter([too_long(), text(ANSWER)])
    scripted_llm.set_script(roles(synthesizer=lambda req: next(replies)))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    final = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert final.type == "final", final
    first, again = of_role(scripted_llm, "synthesizer")
    assert again.prompt_chars < first.prompt_chars
    assert any("context window" in w and "shortened" in w for w in final.warnings), final.warnings
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)


def test_a_refusal_that_no_retry_can_mend_says_who_and_offers_no_retry(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    for step, words in [(too_long(), "context window"), (bad_key(), "API key")]:
        scripted_llm.requests.clear()
        scripted_llm.set_script(roles(coordinator=lambda req, step=step: step))
        app = open_app(tmp_path, scripted_llm, small_index, model_route)
        sid = app.new_session()
        end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
        assert end.type == "error" and not end.retryable, end
        assert "coordinator model" in end.message and scripted_llm.url in end.message
        assert words in end.message, end.message
        waited = float(re.search(r"gave up after ([\d.]+) s", end.message).group(1))  # type: ignore[union-attr]
        stored = app.history(sid)[-1]
        assert stored.seconds > 0 and waited < 5, (waited, stored.seconds)
        assert_usage_served(stored.usage, scripted_llm)


def test_a_rejected_key_is_sent_once_and_reports_the_time_the_server_took(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    # The first 401 of a process once reported 10.4 s for a reply that took none: the time of
    # booking the failed request (pricing it imported LiteLLM) was counted as time waited.
    scripted_llm.set_script(roles(coordinator=lambda req: bad_key(delay=1.0)))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert end.type == "error" and not end.retryable, end
    assert len(scripted_llm.requests) == 1  # neither we nor the SDK send a refused key again
    waited = float(re.search(r"gave up after ([\d.]+) s", end.message).group(1))  # type: ignore[union-attr]
    assert 1.0 <= waited <= 1.4, end.message
    assert "sk-proj" not in end.message and "platform.openai.com" not in end.message
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)


def test_a_stream_cut_short_is_booked_unmetered_never_free(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    scripted_llm.set_script(roles(synthesizer=lambda req: Drop(Reply(text=ANSWER * 8), after=4)))
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    end = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert end.type == "error", end
    usage = app.history(sid)[-1].usage
    sent = len(of_role(scripted_llm, "synthesizer"))
    assert usage.roles["synthesizer"].requests == sent >= 1
    assert usage.roles["synthesizer"].unmetered == sent  # its prompt was sent, not counted
    assert_usage_served(usage, scripted_llm)


def test_a_verifier_that_refuses_the_key_is_asked_once_and_the_turn_says_why(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    answer = ("Raft elects a leader with randomized election timeouts [1]. A follower that "
              "hears no heartbeat becomes a candidate [1]. The candidate wins the election "
              "with a majority [1].")  # fmt: skip
    scripted_llm.set_script(roles(synthesizer=lambda req: text(answer),
                                  verifier=lambda req: bad_key()))  # fmt: skip
    app = open_app(tmp_path, scripted_llm, small_index, model_route)
    sid = app.new_session()
    final = terminal(run(app.ask(QUESTION, session_id=sid, hitl=False)))
    assert final.type == "final" and final.citations_verified is False, final
    assert len(of_role(scripted_llm, "verifier")) == 1  # not once per citation
    assert any("verifier model" in w and "rejected the API key" in w for w in final.warnings)
    assert "Citations not verified" in final.answer
    assert_usage_served(app.history(sid)[-1].usage, scripted_llm)
