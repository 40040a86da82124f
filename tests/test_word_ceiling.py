"""The evidence word ceiling is exact (a read that would pass it is cut, a search adds only
the passages that fit, each with a notice), and a checkpoint says truly why it paused."""

from __future__ import annotations

from typing import Any

from agents_helpers import GARDEN, RAFT

from zocrates_nb.agents.pipeline import checkpoint_reason
from zocrates_nb.config import RetrievalSettings
from zocrates_nb.retrieval import RunState, Toolkit


def test_the_word_ceiling_is_never_passed(small_index: Any) -> None:
    ceiling = 250
    kit = Toolkit(small_index, RunState.new(RetrievalSettings(word_ceiling=ceiling, budget=20)))
    st = kit.state
    notices: list[str] = []
    calls = [
        lambda: kit.search_corpus("raft leader election", limit=10),
        lambda: kit.read_document(RAFT, "s1, s2, s3"),
        lambda: kit.read_document(GARDEN, "s1"),
        lambda: kit.search_corpus("tomatoes", limit=10),
    ]
    for call in calls:
        out = call()
        notices.append(str(out.notice or "") + str(getattr(out, "message", "")))
        assert st.words <= ceiling, (st.words, out)
        assert st.words == sum(len(e.text.split()) for e in st.evidence)
    assert st.words >= ceiling - 60  # it filled up to the ceiling, not stopped far short
    text = " ".join(notices)
    assert "word ceiling" in text.lower()


def test_a_cut_read_says_what_the_ceiling_left(small_index: Any) -> None:
    kit = Toolkit(small_index, RunState.new(RetrievalSettings(word_ceiling=100, budget=5)))
    out = kit.read_document(RAFT, "s1, s2")
    assert kit.state.words <= 100
    assert "what the word ceiling leaves" in (out.notice or "") or any(
        a.text.endswith(" …") for a in out.assets
    )


def test_the_checkpoint_reason_matches_its_numbers() -> None:
    st = RunState.new(RetrievalSettings(budget=10, word_ceiling=7500))
    st.tool_count, st.words = 8, 6100
    reason, headline = checkpoint_reason(st)
    assert reason == "word_ceiling_near" and "used up" not in headline
    assert "6,100 of 7,500 words" in headline and "8 of 10 retrieval calls" in headline
    st.tool_count = 10
    assert checkpoint_reason(st)[0] == "budget"
    st.tool_count, st.words = 4, 7500
    reason, headline = checkpoint_reason(st)
    assert reason == "word_ceiling" and "7,500 of 7,500 words" in headline


def test_a_read_with_one_word_left_adds_exactly_one_word(small_index: Any) -> None:
    """The last word of the ceiling is one word, not a word and a "…" (the 485/484 bug)."""
    from zocrates_nb.retrieval.state import Evidence

    ceiling = 300
    for left in (1, 2, 3):
        kit = Toolkit(small_index, RunState.new(RetrievalSettings(word_ceiling=ceiling)))
        filler = " ".join(["word"] * (ceiling - left))
        kit.state.add_evidence([Evidence(chunk_id="F:1", item_key="F", attachment_key="F",
                                         text=filler, words=ceiling - left)])  # fmt: skip
        out = kit.read_document(RAFT, "s1")
        assert out.status == "success"
        assert kit.state.words == ceiling, (left, kit.state.words)
        assert kit.state.words == sum(len(e.text.split()) for e in kit.state.evidence)
        assert out.assets[0].text.endswith("…")  # the cut is shown
