"""Synthesis over the real reranked evidence with a scripted synthesizer: streamed text, leaked
keys stripped, every citation checked (offline support score, or a verifier model), unsupported
ids pruned in place, and the sources split into two tiers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agents_helpers import (
    GARDEN,
    RAFT,
    Recorder,
    prompt_evidence,
    run,
    search_then,
    terminal,
    text,
    user_prompts,
)
from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents import citations as cit
from zocrates_nb.app import App
from zocrates_nb.text import split_sentences


def evidence_of(messages: list[ModelMessage]) -> dict[str, tuple[int, str]]:
    """Title → (index, first sentence) of the first chunk of each paper in the prompt."""
    out: dict[str, tuple[int, str]] = {}
    for ch in prompt_evidence(user_prompts(messages)[-1]):
        sents = [s for s in split_sentences(ch.text) if len(s.split()) >= 6]
        if sents and ch.title not in out:
            out[ch.title] = (ch.index, sents[0])
    return out


RAFT_TITLE = "Understandable Consensus with Raft"
GARDEN_TITLE = "Growing Tomatoes in Small Gardens"


def writer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    ev = evidence_of(messages)
    a, raft_sentence = ev[RAFT_TITLE]
    g, _ = ev[GARDEN_TITLE]
    return text(
        f"{raft_sentence} [{a}, {g}]\n\n"
        f'According to [Key: {RAFT}] ({RAFT}: "{RAFT_TITLE}"), chunk A{RAFT}:0001 says so.\n\n'
        f"The moon orbits Jupiter every Tuesday [{a}]."
    )


def make_app(tmp_path: Path, index: Any, **models: Any) -> App:
    rec = Recorder()
    role_models = {
        "coordinator": rec.wrap(
            "coordinator",
            lambda m, i: ModelResponse(
                parts=[ToolCallPart("search_library", {"request": "raft elections and tomatoes"})]
            ),
        ),
        "search": rec.wrap("search", search_then(["raft leader election", "tomato watering"])),
        "synthesizer": rec.wrap("synthesizer", writer),
    }
    role_models.update({k: rec.wrap(k, v) for k, v in models.items()})
    return App.open(tmp_path, index=index, role_models=role_models)


def test_offline_verification_prunes_and_splits_sources(tmp_path: Path, small_index: Any) -> None:
    app = make_app(tmp_path, small_index)
    events = run(app.ask("How does Raft elect leaders, and how do I water tomatoes?", hitl=False))
    final = terminal(events)
    assert final.type == "final"
    labels = [e.label for e in events if e.type == "step"]
    assert any(lbl.startswith("Reranking") for lbl in labels)
    assert "Verifying citations" in labels
    assert any(e.type == "text_delta" for e in events)  # the draft streamed
    answer = final.answer
    # The Raft sentence keeps its Raft citation only; the made-up claim is marked, visibly.
    first_line = answer.splitlines()[0]
    assert first_line.endswith("[1]")
    assert "Tuesday [unsupported]." in answer
    assert any("Tuesday" in c for c in final.unsupported_claims)
    assert final.citations_verified is True
    # Leaked plumbing is gone.
    assert RAFT not in answer and "Key:" not in answer and ":0001" not in answer
    assert [(s.n, s.title) for s in final.cited_sources] == [(1, RAFT_TITLE)]
    other = [s.title for s in final.other_sources]
    assert GARDEN_TITLE in other and RAFT_TITLE not in other
    assert len(other) == len(set(other))
    (c,) = final.citations
    assert c.n == 1 and c.item_key == RAFT and c.support is not None and c.support > 0.5
    # The stored turn keeps the evidence with cited flags and support probabilities.
    rows = app.turn(final.turn_id).evidence
    assert rows == final.evidence  # the answer's event carries the stored record
    cited = [r for r in rows if r.cited]
    assert [r.item_key for r in cited] == [RAFT]
    garden_rows = [r for r in rows if r.item_key == GARDEN and r.ranked]
    assert garden_rows and all(not r.cited for r in garden_rows)
    assert any(r.support is not None and r.support < 0.5 for r in garden_rows)


def test_verifier_model_judges_each_citation(tmp_path: Path, small_index: Any) -> None:
    def verifier(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = user_prompts(messages)[-1]
        supported = "Tuesday" not in prompt and "Tomato" not in prompt.split("<passage", 1)[1][:200]
        p = 0.9 if supported else 0.1
        (tool,) = info.output_tools
        return ModelResponse(
            parts=[ToolCallPart(tool.name, {"supported_probability": p, "reason": "test"})]
        )

    app = make_app(tmp_path, small_index, verifier=verifier)
    final = terminal(run(app.ask("Raft and tomatoes?", hitl=False)))
    assert final.type == "final"
    assert [s.title for s in final.cited_sources] == [RAFT_TITLE]
    assert final.citations[0].support == pytest.approx(0.9)
    assert "Tuesday [unsupported]" in final.answer


def test_verifier_errors_fail_open(tmp_path: Path, small_index: Any) -> None:
    def broken(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        raise ConnectionError("verifier endpoint down")

    app = make_app(tmp_path, small_index, verifier=broken)
    final = terminal(run(app.ask("Raft and tomatoes?", hitl=False)))
    assert final.type == "final"
    # Nothing was judged, so nothing was pruned: both papers are cited, support unknown.
    assert {s.title for s in final.cited_sources} == {RAFT_TITLE, GARDEN_TITLE}
    assert all(c.support is None for c in final.citations)
    assert "Tuesday [1]" in final.answer
    # …and the answer itself says so, not only a log line.
    assert final.answer.endswith(cit.NOT_VERIFIED_NOTE)
    assert final.citations_verified is False


def test_offline_quotes_keep_short_facts_and_drop_sentences_that_only_introduce() -> None:
    from zocrates_nb.agents.offline.quotes import EvidenceChunk, quotable

    chunk = EvidenceChunk(
        index=1, title="Attention", authors="Vaswani et al.", year="2017", section="5.3",
        text=(
            "We varied the learning rate over the course of training, according to the formula:"
            "\n\nlrate = d^-0.5 · min(step^-0.5, step · warmup^-1.5)\n\n"
            "This corresponds to increasing the learning rate linearly for the first warmup "
            "steps, and decreasing it thereafter. We used warmup_steps = 4000."
        ),
    )  # fmt: skip
    quotes = [c.text for c in quotable([chunk])]
    assert quotes == [
        "This corresponds to increasing the learning rate linearly for the first warmup steps, "
        "and decreasing it thereafter. We used warmup_steps = 4000."
    ]


@pytest.mark.parametrize(
    ("sentence", "states"),
    [
        ("In all of our experiments, we mask 15% of all WordPiece tokens.", True),
        ("Velvet used a hash length of 21 and a coverage cutoff of 7.", True),
        ("As we mention in Section 3.1, masking reduces the mismatch.", False),
        ("Cloze tasks go back to Taylor (1953) and Figure 2 shows one.", False),
    ],
)
def test_a_quantity_is_a_number_not_a_year_or_a_pointer(sentence: str, states: bool) -> None:
    from zocrates_nb.agents.offline.quantity import states_quantity

    assert states_quantity(sentence) is states


@pytest.mark.parametrize(
    ("question", "sentence", "gives"),
    [
        # The number must count what was asked: its unit, or the noun counted, beside it.
        (
            "How many TPU-hours did training take?",
            "We trained on 128 Cloud TPUs for 800 epochs.",
            False,
        ),
        ("How many TPU-hours did training take?", "Training took 4,000 TPU-hours in all.", True),
        ("How many milliseconds does decoding take?", "There are 14 possible paths.", False),
        (
            "How many milliseconds does decoding take?",
            "It takes about 2 seconds on one core.",
            True,
        ),
        ("How many servers or copies does a cell use?", "Blocks are kept in 3 copies.", True),
        (
            "How many attention heads are used?",
            "We employ h = 8 parallel attention layers, or heads.",
            True,
        ),
        ("How much memory does the index need?", "The index fits in 1 GB.", True),
        ("How many of those were used?", "Twelve were used.", True),  # counts nothing named
        ("What is the number of hours it takes?", "The model keeps 256 replicas.", False),
        # A counted noun is not checked: its synonyms are not listed ("copies" are "replicas").
        ("How many copies of each chunk are kept?", "By default, we store three replicas.", True),
        ("How many lines of code is the server?", "The server has 40,000 lines of Java.", True),
        # a fee is an amount of money: a sentence about fees that names none does not give it
        ("What transaction fee, in bitcoins, is recommended?", "Fees fund the incentive.", False),
        ("What transaction fee, in bitcoins, is recommended?", "Attach 0.01 bitcoins.", True),
        # "time" near a number is no number of seconds ("this time we choose β = 1.0")
        ("How many seconds did the iteration take?", "This time we choose β = 1.0.", False),
        ("How many seconds did the iteration take?", "It took 2 seconds.", True),
        ("How many seconds did it take?", "This lets us choose β = 1.0 for Jacot's run.", False),
        ("How many seconds did it take?", "The second component is ten times bigger.", False),
        ("What mask AP does it get on COCO?", "It achieves 71.1% on ImageNet.", False),
        ("What mask AP does it get on COCO?", "It reaches 37.2 AP on COCO.", True),
        ("How many full nodes were running?", "2) Each node collects new transactions.", False),
        ("How many full nodes were running?", "About 120 nodes (3) were running.", True),
    ],
)
def test_a_number_answers_how_many_only_when_it_counts_what_was_asked(
    question: str, sentence: str, gives: bool
) -> None:
    from zocrates_nb.agents.offline.quantity import gives_quantity

    assert gives_quantity(question, sentence) is gives


def test_a_metric_asked_for_by_its_name_asks_for_a_number() -> None:
    from zocrates_nb.agents.offline.quantity import asks_quantity

    assert asks_quantity("What mask AP does MoCo v2 get on COCO instance segmentation?")
    assert asks_quantity("What BLEU does the big Transformer reach on English-French?")
    assert not asks_quantity("What map function does MapReduce use?")  # a word, not mAP


def test_a_question_asking_only_how_many_is_answered_only_by_that_number() -> None:
    from zocrates_nb.agents.offline.quantity import asks_only_count

    assert asks_only_count("How many milliseconds does the Viterbi algorithm take here?")
    assert not asks_only_count("How many replicas does Chubby use, and why five?")
    assert not asks_only_count("How does Raft elect a leader?")
    # a sentence setting the scene is not a second question
    assert asks_only_count("Salimans and Kingma say it is cheap. How many seconds per epoch did "
                           "each take?")  # fmt: skip
