"""A question about what the researcher wrote is answered from their notes as one question,
however many papers the note names."""

from __future__ import annotations

import pytest

from zocrates_nb.agents.own_notes import asks_own_notes
from zocrates_nb.agents.parts import decompose
from zocrates_nb.index.names import Catalogue, CatalogueItem


@pytest.mark.parametrize(
    ("question", "own"),
    [
        ("Which other work did I remind myself to read alongside Velvet?", True),
        ("What did I say I should compare Velvet against?", True),
        ("On my consensus reading list, what comes between Paxos and Raft?", True),
        ("What have I flagged as a weakness of MapReduce?", True),
        ("How do Paxos and Raft elect a leader?", False),
        ("Should the reads go to the leader in Raft?", False),
    ],
)
def test_questions_about_the_researchers_own_writing(question: str, own: bool) -> None:
    assert asks_own_notes(question) is own


def test_a_question_about_a_note_is_not_split_by_the_papers_it_names() -> None:
    cat = Catalogue(
        [
            CatalogueItem("PAXOS001", "Paxos Made Simple", ("Leslie Lamport",)),
            CatalogueItem("RAFT0001", "Raft: In Search of an Understandable Consensus Algorithm"),
        ]
    )
    assert len(decompose("How do Paxos and Raft elect a leader?", cat)) == 2
    assert decompose("On my consensus reading list, what comes between Paxos and Raft?", cat) == []



def test_a_note_tables_rows_are_lines_under_their_columns_and_check_as_quotes() -> None:
    from zocrates_nb.agents.offline.notes import note_lines, unframed
    from zocrates_nb.agents.offline.support import is_quote

    table = (
        "| Task | BLEU | Steps |\n|---|:--:|---|\n| EN-DE (big) | 28.4 | 300k |\n| EN-FR | 41.8 | |"
    )
    assert note_lines(table) == ["EN-DE (big): BLEU 28.4; Steps 300k", "EN-FR: BLEU 41.8"]
    assert is_quote("EN-DE (big): BLEU 28.4; Steps 300k", f"## Results\n\n{table}\n\nSee also.")
    assert not is_quote("EN-DE (big): BLEU 41.8; Steps 300k", f"## Results\n\n{table}\n")
    assert unframed("According to my own note, into which parts does Raft split consensus?") == (
        "into which parts does Raft split consensus?")
