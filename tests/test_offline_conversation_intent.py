"""Questions about the conversation read by meaning: phrasings no rule lists are still answered
from the history, and questions on the papers (the user's notes included) are not taken for
them. Uses the shipped MiniLM embedder (no download)."""

from __future__ import annotations

import pytest

from zocrates_nb.agents.offline.brief import PastTurn
from zocrates_nb.agents.offline.conversation import conversation_answer, conversation_intent
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings


@pytest.fixture(scope="module")
def emb() -> SentenceEmbeddings:
    return SentenceEmbeddings()


@pytest.mark.parametrize(
    ("message", "intent"),
    [
        ("Which question did I kick things off with?", "first"),
        ("Go back to my very first question: what was it?", "first"),
        ("Sum up our discussion so far.", "summary"),
        ("Can you recap our chat?", "summary"),
        ("What did I jot down about Raft's log compaction?", None),
        ("How does my favourite consensus paper elect a leader?", None),
        ("Why does the Chubby master hold on to KeepAlive calls?", None),
    ],
)
def test_a_question_about_the_conversation_is_read_by_meaning(
    emb: SentenceEmbeddings, message: str, intent: str | None
) -> None:
    assert conversation_intent(message, emb) == intent


def test_the_intent_chooses_the_answer_from_the_history() -> None:
    turns = [
        PastTurn(question="How does Raft elect a leader?", answer="- Raft uses timeouts. [1]"),
        PastTurn(question="And Zab?", answer="- Zab elects a prospective leader. [1]"),
    ]
    first = conversation_answer("Which question did I kick things off with?", turns, "first")
    assert "How does Raft elect a leader?" in first and "Zab" not in first
    summary = conversation_answer("Sum up our discussion so far.", turns, "summary")
    assert "How does Raft elect a leader?" in summary and "And Zab?" in summary
