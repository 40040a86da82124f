"""Post-turn compaction: the thresholds, one rolling summary, the last two turns verbatim."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import run, terminal
from pydantic_ai import Agent
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage
from scripted_helpers import assert_usage_served

from zocrates_nb.app import App
from zocrates_nb.devtools.scripted_openai import (
    Request,
    ScriptedOpenAI,
    Step,
    by_role,
    model_config,
    text,
)
from zocrates_nb.sessions import (
    SUMMARY_PREFIX,
    CheckpointSnapshot,
    SessionStore,
    compact,
    estimate_tokens,
    maybe_compact,
    offline_summarize,
    prompt_tokens,
    should_compact,
    summary_of,
)


@pytest.mark.parametrize(
    ("turns", "tokens", "expected"),
    [
        (3, 50_000, False),  # too few turns
        (4, 29_999, False),  # too few tokens
        (4, 30_000, True),  # both thresholds met, inclusive
        (12, 29_999, False),  # many turns alone never compact
        (3, 99_999, False),
        (3, 100_000, True),  # the ceiling compacts regardless of the turn count
        (2, 500_000, False),  # ...but the two verbatim turns leave nothing older to compact
        (0, 0, False),
    ],
)
def test_should_compact_thresholds(turns: int, tokens: int, expected: bool) -> None:
    assert should_compact(turns, tokens) is expected


def test_min_turns_is_clamped_above_the_verbatim_window() -> None:
    assert not should_compact(2, 50_000, min_turns=1, keep_last=2)
    assert should_compact(3, 50_000, min_turns=1, keep_last=2)
    assert not should_compact(3, 50_000, min_turns=1, keep_last=3)


def test_token_estimates() -> None:
    msgs: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("a" * 400)]),
        ModelResponse(parts=[TextPart("b" * 400)]),
    ]
    assert estimate_tokens(msgs) == 200
    assert prompt_tokens(msgs) == 200  # no usage reported: chars / 4
    measured = ModelResponse(
        parts=[TextPart("b")], usage=RequestUsage(input_tokens=31_000, output_tokens=500)
    )
    assert prompt_tokens([*msgs, measured]) == 31_500  # usage wins when known


def _answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = [p for p in messages[-1].parts if isinstance(p, UserPromptPart)][-1]
    return ModelResponse(parts=[TextPart(f"Answer to: {last.content}. It is well documented.")])


AGENT: Agent[None, str] = Agent(
    FunctionModel(_answer), name="coordinator", system_prompt="Zocrates"
)


def _ask(store: SessionStore, sid: str, question: str) -> None:
    turn = store.begin_turn(sid, question)
    result = AGENT.run_sync(question, message_history=store.load_messages(sid))
    store.append_messages(sid, result.new_messages(), turn_id=turn.turn_id)
    store.update_turn(turn.turn_id, status="answered", answer=result.output)


def _prompts(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)]


def test_compaction_keeps_two_turns_verbatim_and_rolls_one_summary(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    for q in ["What is BM25?", "Who wrote DPR?", "What is RRF?", "What is ColBERT?", "Why fuse?"]:
        _ask(store, sid, q)

    calls: list[tuple[str, str]] = []

    def summarize(previous: str, transcript: str) -> str:
        calls.append((previous, transcript))
        return "User asked about BM25, DPR and RRF."

    result = asyncio.run(compact(store, sid, summarize))
    assert result is not None and result.compacted_turns == 3 and result.kept_turns == 2
    assert result.tokens_after > 0  # (these answers are shorter than their turns' records)
    previous, transcript = calls[0]
    assert previous == ""
    assert "User: What is BM25?" in transcript and "User: What is RRF?" in transcript
    assert "Assistant: Answer to: Who wrote DPR?" in transcript
    assert "ColBERT" not in transcript  # the last two turns are not summarised

    history = store.load_messages(sid)
    head = history[0]
    assert isinstance(head, ModelRequest)
    assert isinstance(head.parts[0], SystemPromptPart)  # the standing system prompt survives
    summary = head.parts[1]
    assert isinstance(summary, CompactionPart)
    # Each compacted turn's own record first, the summarizer's text after it as notes.
    assert summary.content.startswith(SUMMARY_PREFIX + "- Asked: What is BM25? — answered:")
    assert summary.content.endswith("\n\nNotes:\nUser asked about BM25, DPR and RRF.")
    assert _prompts(history) == ["What is ColBERT?", "Why fuse?"]  # verbatim
    blocks = store.message_blocks(sid)
    assert [b.kind for b in blocks] == ["summary", "turn", "turn"]
    info = store.get_state(sid).compaction
    assert info is not None and (info.compacted_turns, info.through_turn_index) == (3, 3)

    # pydantic-ai accepts the compacted history: the next run sees the summary first.
    seen: list[list[ModelMessage]] = []

    def spy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        return ModelResponse(parts=[TextPart("Yes: RRF fuses ranked lists.")])

    _ask_with(store, sid, "Remind me what RRF was?", spy)
    sent = seen[0]
    assert any(
        isinstance(p, CompactionPart) and "BM25, DPR and RRF" in (p.content or "")
        for p in sent[0].parts
    )
    assert _prompts(sent) == ["What is ColBERT?", "Why fuse?", "Remind me what RRF was?"]

    # A second compaction rolls the previous summary and the newly old turns into one.
    _ask(store, sid, "And SPLADE?")

    async def summarize_async(previous: str, transcript: str) -> str:
        calls.append((previous, transcript))
        await asyncio.sleep(0)
        return previous + " Then ColBERT and fusion."

    again = asyncio.run(compact(store, sid, summarize_async))
    assert again is not None and again.compacted_turns == 2
    previous, transcript = calls[1]
    assert previous == "User asked about BM25, DPR and RRF."
    assert "What is ColBERT?" in transcript and "Why fuse?" in transcript
    assert "What is BM25?" not in transcript  # already in the summary
    blocks = store.message_blocks(sid)
    assert [b.kind for b in blocks] == ["summary", "turn", "turn"]  # still exactly one summary
    assert _prompts(store.load_messages(sid)) == ["Remind me what RRF was?", "And SPLADE?"]
    info = store.get_state(sid).compaction
    assert info is not None and (info.compacted_turns, info.times) == (5, 2)
    assert info.summary.endswith("Then ColBERT and fusion.")


def _ask_with(store: SessionStore, sid: str, question: str, fn: object) -> None:
    turn = store.begin_turn(sid, question)
    result = AGENT.run_sync(
        question,
        model=FunctionModel(fn),  # type: ignore[arg-type]
        message_history=store.load_messages(sid),
    )
    store.append_messages(sid, result.new_messages(), turn_id=turn.turn_id)
    store.update_turn(turn.turn_id, status="answered", answer=result.output)


def test_nothing_to_compact_and_paused_sessions_are_left_alone(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    _ask(store, sid, "one")
    _ask(store, sid, "two")
    assert asyncio.run(compact(store, sid, offline_summarize)) is None  # only two turns
    _ask(store, sid, "three")
    t = store.begin_turn(sid, "four: a broad survey")
    store.save_checkpoint(
        sid, CheckpointSnapshot(interrupt_id="i", turn_id=t.turn_id), turn=t
    )
    before = store.load_messages(sid)
    assert asyncio.run(compact(store, sid, offline_summarize)) is None
    assert store.load_messages(sid) == before


def test_maybe_compact_applies_the_thresholds(tmp_path: Path) -> None:
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    for q in ["q1", "q2", "q3", "q4"]:
        _ask(store, sid, q)
    small = asyncio.run(maybe_compact(store, sid, offline_summarize))
    assert small is None  # 4 turns but a few hundred tokens
    assert asyncio.run(maybe_compact(store, sid, offline_summarize, tokens=30_000)) is not None
    assert _prompts(store.load_messages(sid)) == ["q3", "q4"]


def test_offline_summary_lists_questions_and_answers() -> None:
    transcript = "\n".join(
        [
            "User: What is BM25?",
            "[tool call search_library: {}]",
            "Assistant: BM25 is a ranking function. It weighs term frequency. More text.",
            "User: thanks",
        ]
    )
    text = offline_summarize("- Asked: earlier — answered: yes.", transcript)
    assert text.splitlines() == [
        "- Asked: earlier — answered: yes.",
        "- Asked: What is BM25? — answered: BM25 is a ranking function. It weighs term "
        "frequency. More text.",
        "- Asked: thanks",
    ]
    long = offline_summarize("", "\n".join(f"User: question {i} " + "x" * 150 for i in range(200)))
    lines = long.splitlines()
    assert len(lines) == 200  # none dropped, every question whole
    assert all(f"question {i} " + "x" * 150 in line for i, line in enumerate(lines))


def test_a_lossy_summarizer_loses_no_turn(tmp_path: Path) -> None:
    """A model summarizer that keeps almost nothing: every earlier question is still in the
    history verbatim, with the facts of its answer, after compaction upon compaction."""
    store = SessionStore.open(tmp_path)
    sid = store.create_session().id
    questions = [f"What is fact number {i} about system {chr(65 + i)}?" for i in range(10)]

    def lossy(previous: str, transcript: str) -> str:
        return "The user asked some questions."

    for q in questions:
        _ask(store, sid, q)
        asyncio.run(compact(store, sid, lossy))
    history = store.load_messages(sid)
    summary = summary_of(history)
    seen = summary + " ".join(_prompts(history))
    for q in questions:
        assert q in seen, q
    for q in questions[:-2]:  # the compacted ones: their answers' facts too
        assert f"Answer to: {q}" in summary, q
    assert summary.count("The user asked some questions.") == 1
    # Kept as one typed record per turn, which the summary's text is rendered from.
    info = store.get_state(sid).compaction
    assert info is not None
    assert [t.question for t in info.turns] == questions[:-2]
    assert all(t.answer.startswith(f"Answer to: {t.question}") for t in info.turns)


SYSTEMS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
FILLER = (
    " The paper describes the setting in detail, with its assumptions and its limits, and it"
    " compares the design with the alternatives the authors considered before settling on it."
) * 3


def _question(i: int) -> str:
    return f"What is fact number {i} about system {SYSTEMS[i]}?"


def _fact(i: int) -> str:
    return (f"System {SYSTEMS[i]} keeps fact {i} as the value {1000 + 37 * i} in the replicated "
            "configuration log, which every server reads again when it restarts after a crash.")


def test_a_lossy_model_summarizer_loses_no_turn_through_app_ask(
    tmp_path: Path, scripted_llm: ScriptedOpenAI, small_index: Any, model_route: str
) -> None:
    """Many turns through `App.ask`, compacted after each by a model that keeps almost nothing:
    every later coordinator request, as the server received it, still holds each earlier
    question verbatim and the fact its answer gave."""
    turns = 20  # enough that the oldest turns' records are shortened to fit

    def coordinator(req: Request) -> Step:  # answers each question itself, fact first
        asked = req.contents("user")[-1]
        i = int(asked.split("fact number ", 1)[1].split()[0])
        return text(_fact(i) + FILLER)

    lossy = "The user asked some questions."
    scripted_llm.set_script(by_role(coordinator=coordinator, compactor=lambda req: text(lossy)))
    config = {**model_config(scripted_llm.url, model_route), "sessions": {"compaction": {
        "min_turns": 3, "keep_last": 2, "token_floor": 0}}}  # fmt: skip
    (tmp_path / "zocrates_config.json").write_text(json.dumps(config), "utf-8")
    app = App.open(tmp_path, index=small_index)
    sid = app.new_session()
    compacted = 0
    for k in range(turns):
        scripted_llm.requests.clear()
        final = terminal(run(app.ask(_question(k), session_id=sid, hitl=False)))
        assert final.type == "final" and final.answer.startswith(_fact(k)), final
        (sent,) = [r for r in scripted_llm.requests if r.role == "coordinator"]
        prompt = json.loads(json.dumps(sent.messages))
        seen = json.dumps(prompt, ensure_ascii=False)
        for j in range(k):
            assert _question(j) in seen, (k, j)
            assert _fact(j) in seen, (k, j)
        compacted += len([r for r in scripted_llm.requests if r.role == "compactor"])
        assert_usage_served(app.history(sid)[-1].usage, scripted_llm)
    assert compacted >= turns - 3  # it compacted after every turn from the third on
    summary = app.history(sid)  # the stored record of the session is whole too
    assert [t.prompt for t in summary] == [_question(k) for k in range(turns)]
    assert seen.count(lossy) == 1  # the model's notes replace its earlier notes, never pile up


def test_a_long_question_and_its_answers_first_sentence_are_never_cut() -> None:
    """However many turns, an older record shrinks to its question as asked and the first
    sentence of its answer (a pasted paragraph of a question included), never less."""
    long_q = "Given that " + "the replicated log grows with every command, " * 18 + "why?"
    first = "The log is compacted by snapshots taken on each server " + "independently, " * 12
    first = first.rstrip(", ") + "."
    transcript = "\n".join(
        f"User: {long_q if i == 0 else f'question {i}?'}\nAssistant: {first} " + "More. " * 80
        for i in range(30)
    )
    summary = offline_summarize("", transcript)
    assert len(long_q) > 800 and long_q in summary
    assert summary.count(first) == 30
