"""The words of a question that point at its scope are no part of what is searched: "this paper",
"the selected paper's", "in this collection", "within my bioinformatics papers" go; a paper named
by its own name, the researcher's notes and a note's title stay."""

from __future__ import annotations

import pytest

from zocrates_nb.retrieval.scope_words import scope_free


@pytest.mark.parametrize(
    ("question", "searched"),
    [
        ("In this paper, from what interval are the election timeouts drawn?",
         "From what interval are the election timeouts drawn?"),
        ("Which paper in this collection replaces term frequency with a graph weight?",
         "Which paper replaces term frequency with a graph weight?"),
        ("Can the selected paper's service stamp a sequence number onto a node's name?",
         "Can the service stamp a sequence number onto a node's name?"),
        ("Does this paper tune a separate strength for every transformation?",
         "Does it tune a separate strength for every transformation?"),
        ("How do these papers handle a failed master?", "How do they handle a failed master?"),
        ("Within my bioinformatics papers, what does the running time scale with?",
         "What does the running time scale with?"),
        ("According to this paper, which features was Bigtable missing?",
         "Which features was Bigtable missing?"),
        ("Among the storage papers here, how does Zab pick a leader?",
         "How does Zab pick a leader?"),
    ],
)  # fmt: skip
def test_the_words_pointing_at_the_scope_are_not_searched(question: str, searched: str) -> None:
    assert scope_free(question) == searched


@pytest.mark.parametrize(
    "question",
    [
        "Does the tidy data paper use the words wide and long?",  # a paper named by its name
        "What did the T5 paper pre-train with?",
        "What do my notes say about Raft's log compaction?",  # the researcher's notes
        "Which systems are on my consensus reading list?",  # a note's title
        "In this paper, what is it?",  # nothing would be left to ask
        "How does Raft elect a leader?",
    ],
)
def test_names_notes_and_questions_without_scope_words_stay_as_asked(question: str) -> None:
    assert scope_free(question) == question
