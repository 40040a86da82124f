"""Creators as Zotero keeps them, in the items sent to Zotero (tests/test_export_roundtrip.py
proves the same names through Zotero's own import translators)."""

from __future__ import annotations

from pathlib import Path

import pytest
from zotero_fakes import FakeConnector

from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import save_to_connector
from zocrates_nb.writeback.names import creator

CASES = [
    ("van der Berg, Johannes", ("van der Berg", "Johannes")),
    ("Johannes van der Berg", ("van der Berg", "Johannes")),
    ("Ludwig van Beethoven", ("van Beethoven", "Ludwig")),
    ("Jean-Paul de la Tour", ("de la Tour", "Jean-Paul")),
    ("Martin Luther King Jr.", ("King", "Martin Luther, Jr.")),
    ("King, Martin Luther, Jr.", ("King", "Martin Luther, Jr.")),
    ("J. R. R. Tolkien", ("Tolkien", "J. R. R.")),
    ("Smith JA", ("Smith", "JA")),
    ("JA Smith", ("Smith", "JA")),
    ("Zhang Wei", ("Zhang", "Wei")),
    ("ZHANG Wei", ("Zhang", "Wei")),
    ("Wei Zhang", ("Zhang", "Wei")),
    ("Zhang, Wei", ("Zhang", "Wei")),
    ("张 伟", ("张", "伟")),
    ("Ольга Петрова", ("Петрова", "Ольга")),
    ("Γιώργος Παπαδόπουλος", ("Παπαδόπουλος", "Γιώργος")),
    ("World Health Organization", "World Health Organization"),
    ("The Open Science Collaboration", "The Open Science Collaboration"),
    ("Plato", "Plato"),
    ("张伟", "张伟"),
]  # fmt: skip


@pytest.mark.parametrize("name, want", CASES)
def test_a_name_becomes_the_creator_zotero_keeps(name: str, want: object) -> None:
    got = creator(name)
    if isinstance(want, str):
        assert got == {"creatorType": "author", "name": want}
    else:
        assert (got["lastName"], got["firstName"]) == want and "name" not in got


def test_the_items_sent_through_the_connector_carry_those_creators(tmp_path: Path) -> None:
    paper = Candidate(title="Health systems", year=2020, doi="10.5555/who.2020",
                      authors=["Johannes van der Berg", "World Health Organization", "Zhang Wei"])
    store = SessionStore.open(tmp_path)
    with FakeConnector() as zotero:
        save_to_connector([paper], zotero.url, ledger=WriteLedger(store))
    store.close()
    assert zotero.saved[0]["creators"] == [
        {"creatorType": "author", "lastName": "van der Berg", "firstName": "Johannes"},
        {"creatorType": "author", "name": "World Health Organization"},
        {"creatorType": "author", "lastName": "Zhang", "firstName": "Wei"},
    ]
