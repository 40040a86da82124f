"""The one typed turn record and the one declaration of a question's options, as every surface
uses them: the HTTP body derives from `AskOptions`, the CLI's flags cover it, the widget's
history entry and the server's chat bubbles are conversions of a `TurnResult`, the CLI's JSON
is a projection of it, and usage totals are derived (never stored twice)."""

from __future__ import annotations

import argparse
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from zocrates_nb.cli.options import ASK_FLAGS, add_ask_options, ask_options
from zocrates_nb.cli.printer import SOURCE_KEYS, TurnPrinter, usage_line
from zocrates_nb.errors import UsageError
from zocrates_nb.events import CheckpointEvent, Final, event_from_json
from zocrates_nb.sessions.migrations import result_json
from zocrates_nb.turn import (
    AskOptions,
    CheckpointInfo,
    Citation,
    EvidenceRow,
    Scope,
    Source,
    TrailStep,
    TurnResult,
    TurnView,
    Usage,
)

NOW = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


def answered() -> TurnResult:
    usage = Usage()
    usage.add("search", "openai:gpt-5.2", requests=2, input_tokens=1000, output_tokens=200,
              cost_usd=0.012)  # fmt: skip
    usage.add("synthesizer", "openai:gpt-5.2", requests=1, input_tokens=500, output_tokens=300,
              cost_usd=0.02)  # fmt: skip
    return TurnResult(
        turn_id="t1", session_id="s1", index=1, prompt="How does Raft elect a leader?",
        options=AskOptions(items=["RAFTKEY2"], budget=5), status="answered",
        answer="Randomized timeouts [1].",
        cited_sources=[Source(n=1, numbers=[1], item_key="RAFTKEY2", title="Raft", year=2014,
                              authors=["Diego Ongaro"], tier="cited")],
        citations=[Citation(n=1, chunk_id="ARAFT:0001", item_key="RAFTKEY2", title="Raft",
                            page=5, support=0.9)],
        evidence=[EvidenceRow(chunk_id="ARAFT:0001", item_key="RAFTKEY2", words=40, ranked=True,
                              rerank_rank=1, cited=True, n=1, support=0.9, text="…")],
        usage=usage, seconds=2.5, model="openai:gpt-5.2", created=NOW, updated=NOW,
        steps=[TrailStep(phase="search", label="Searching", seconds=0.4),
               TrailStep(phase="synthesize", label="Writing")],
    )  # fmt: skip


def test_usage_totals_are_derived_and_not_stored() -> None:
    r = answered()
    assert (r.usage.requests, r.usage.input_tokens, r.usage.output_tokens) == (3, 1500, 500)
    assert r.usage.cost_usd == pytest.approx(0.032)
    stored = json.loads(result_json(r))
    assert set(stored["usage"]) == {"roles"} and "scope" not in stored
    again = TurnResult.model_validate_json(result_json(r))
    assert again.usage == r.usage and again.scope == r.scope
    assert Usage().cost_usd is None  # nothing priced: unknown, not free


def test_the_answer_event_is_the_record() -> None:
    r = answered()
    final = Final.of(r)
    wire = final.model_dump(mode="json")
    assert wire["type"] == "final" and wire["usage"]["input_tokens"] == 1500
    parsed = event_from_json(wire)  # what a remote client receives
    assert isinstance(parsed, Final) and parsed.result() == r.model_copy()
    card = CheckpointInfo(interrupt_id="t1-ext1", extension=1, calls_used=5, budget=5,
                          words_used=900, word_ceiling=7500)  # fmt: skip
    paused = r.model_copy(update={"status": "checkpoint", "checkpoint": card})
    event = CheckpointEvent.of(paused)
    assert event is not None and (event.session_id, event.turn_id) == ("s1", "t1")
    assert event.model_dump(exclude={"type", "session_id", "turn_id"}) == card.model_dump()


def test_the_http_body_is_the_options_plus_the_question() -> None:
    from zocrates_nb.server.schema import ChatRequest

    assert set(ChatRequest.model_fields) == set(AskOptions.model_fields) | {"prompt", "session_id"}
    for name, field in AskOptions.model_fields.items():
        assert ChatRequest.model_fields[name].metadata == field.metadata  # the same bounds
    req = ChatRequest.model_validate_json('{"prompt": "hi", "budget": 3, "items": ["K"]}')
    assert req.options() == AskOptions(budget=3, items=["K"])
    assert type(req.options()) is AskOptions


def test_every_option_has_one_cli_flag_with_the_same_bounds() -> None:
    assert set(ASK_FLAGS) == set(AskOptions.model_fields)
    p = argparse.ArgumentParser()
    add_ask_options(p)
    flags = "--items A B --collection Thesis --no-hitl --budget 7 --word-ceiling 900 --model x"
    assert ask_options(p.parse_args(flags.split())) == AskOptions(
        items=["A", "B"], collections=["Thesis"], hitl=False, budget=7, word_ceiling=900, model="x"
    )
    assert ask_options(p.parse_args([])) == AskOptions()
    with pytest.raises(UsageError, match="budget") as bad:
        ask_options(p.parse_args(["--budget", "0"]))
    assert "AskOptions" not in str(bad.value) and "\n" not in str(bad.value)


def test_the_panels_history_entry_converts_the_record() -> None:
    from zocrates_nb.widget import history_turn

    entry = history_turn(answered())
    assert entry["status"] == "answered" and entry["seconds"] == 2.5
    assert entry["model"] == "openai:gpt-5.2" and entry["checkpoint"] is None
    assert entry["steps"] == [
        {"phase": "search", "label": "Searching", "detail": {}, "seconds": 0.4},
        {"phase": "synthesize", "label": "Writing", "detail": {}, "seconds": None},  # still open
    ]
    assert entry["citations"][0]["chunk_id"] == "ARAFT:0001"
    json.dumps(entry)  # plain JSON for the comm
    failed = answered().model_copy(update={"status": "error", "error": None})
    assert history_turn(failed)["error"] == "This turn failed."
    lost = answered().model_copy(update={"status": "checkpoint"})  # its snapshot is gone
    assert history_turn(lost)["status"] == "cancelled"
    assert entry["widen_chips"] is None
    narrow = answered().model_copy(
        update={"options": AskOptions(items=["ARAFT"]), "widen_scope": Scope()}
    )
    assert history_turn(narrow)["widen_chips"] == {"mode": "library", "items": [],
                                                   "collections": []}  # fmt: skip


def test_chat_bubbles_of_a_turn() -> None:
    from zocrates_nb.server.service import bubbles

    user, assistant = bubbles(answered())
    assert (user["role"], user["text"]) == ("user", "How does Raft elect a leader?")
    assert assistant["text"] == "Randomized timeouts [1]." and assistant["status"] == "answered"
    running = answered().model_copy(update={"status": "running", "answer": ""})
    assert [b["role"] for b in bubbles(running)] == ["user"]


class _NoLookups:
    def turn(self, turn_id: str, *, session_id: str | None = None) -> TurnResult:
        raise AssertionError("an answered turn needs no look-up")

    def view(self, turn: TurnResult, **changes: Any) -> TurnView:
        return TurnView.of(turn, **changes)


def test_the_cli_prints_a_projection_of_the_record_with_tokens_and_cost() -> None:
    out = io.StringIO()
    printer = TurnPrinter(_NoLookups(), json_mode=True, verbose=False, out=out,  # type: ignore[arg-type]
                          err=io.StringIO())  # fmt: skip
    printer.feed(Final.of(answered()))
    data = printer.result()
    # The turn's view: every field of the record (a new one reaches the CLI with no edit here),
    # none of the panel's display fields.
    assert set(data) == {"session_id", "turn_id", "status", "answer", "cited_sources",
                         "other_sources", "evidence", "checkpoint", "usage", "seconds", "model",
                         "elsewhere", "widen_scope", "unsupported_claims",
                         "citations_verified", "warnings", "discovery", "error", "prompt",
                         "index", "options", "citations", "timings", "search_goal", "parts",
                         "tool_calls", "extensions", "steps", "created", "updated", "scope"}
    assert set(data) == set(TurnResult.model_fields) | set(TurnResult.model_computed_fields)
    assert set(data["cited_sources"][0]) == SOURCE_KEYS
    assert data["evidence"] == [e.model_dump(mode="json") for e in answered().evidence]
    assert data["usage"]["cost_usd"] == pytest.approx(0.032) and data["status"] == "answered"
    printer.json_mode = False
    printer.print_human()
    assert "1,500 tokens in, 500 out · $0.0320 · session s1]" in out.getvalue()
    assert "[1] Raft (Ongaro, 2014) — [1] p. 5" in out.getvalue()  # each citation's page
    offline = Usage()
    offline.add("search", "embedded offline engine (no language model)", output_tokens=20)
    assert usage_line(offline) == ""


def test_a_copy_of_a_record_is_validated_like_a_new_one() -> None:
    record = answered()
    assert record.model_copy(update={"status": "error", "error": "x"}).status == "error"
    with pytest.raises(ValueError, match="has no field stauts"):
        record.model_copy(update={"stauts": "answered"})
    with pytest.raises(ValueError):
        record.model_copy(update={"status": "finished"})
    with pytest.raises(ValueError):
        record.model_copy(update={"seconds": "slow"})
