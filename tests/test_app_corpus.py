"""The embedded offline engine on the real 37-paper corpus library (no language model): factual
questions cite the right paper, an off-topic question cites nothing and says so, a selection
is respected, and `--budget 1` pauses at a checkpoint that `resume` (another process) completes.

The whole dev set is measured by `scripts/eval_answers.py`; these are the spot checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from agents_helpers import run, terminal
from conftest import ZOTERO_DIR, sha256_file

from zocrates_nb.app import App
from zocrates_nb.index.topics import papers_of, suggestions_for

pytestmark = pytest.mark.corpus


@pytest.fixture(scope="module")
def corpus_app(corpus_index: Any) -> Iterator[App]:
    app = App.open(corpus_index.home, index=corpus_index.index)
    yield app
    app.close()


@pytest.mark.parametrize(
    ("question", "title", "phrase"),
    [
        (
            "If an application deletes a file in GFS by mistake, can it still get the file "
            "back, and for how long?",
            "The Google File System",
            "hidden",
        ),
        (
            "Why does MoCo reorder the samples of a mini-batch across GPUs before computing "
            "the keys, and what failure does that prevent?",
            "Momentum Contrast for Unsupervised Visual Representation Learning",
            "shuffl",
        ),
        (  # a quantity question: the sentence stating the number, not one about masking
            "What masking rate does BERT use during pre-training?",
            "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
            "15%",
        ),
        (  # a short factual sentence ("We used warmup_steps = 4000.") is quoted too
            "How many warmup steps did the Transformer use for its learning rate?",
            "Attention Is All You Need",
            "4000",
        ),
    ],
)
def test_factual_questions_cite_the_right_paper(
    corpus_app: App, question: str, title: str, phrase: str
) -> None:
    final = terminal(run(corpus_app.ask(question, hitl=False)))
    assert final.type == "final"
    assert final.cited_sources[0].title == title
    assert phrase in final.answer.lower()
    assert "without a language model" in final.answer
    assert all(c.support is not None and c.support >= 0.5 for c in final.citations)


def test_the_empty_panels_suggestions_are_answered_from_the_papers_they_were_drawn_from(
    corpus_app: App,
) -> None:
    """What the empty screen offers is what the library can answer: each suggestion, asked
    through App, cites a paper it was drawn from (issue 30); a question naming one paper by
    its whole title asks one thing (the title's own names are not parts of their own)."""
    index = corpus_app.library_index
    suggestions = suggestions_for(papers_of(index))
    assert [q for q, _ in suggestions] == corpus_app.example_questions()
    for question, drawn in suggestions:
        final = terminal(run(corpus_app.ask(question, hitl=False)))
        assert final.type == "final", final
        cited = {s.item_key for s in final.cited_sources}
        assert cited & drawn, (question, cited, drawn)
        if len(drawn) == 1:  # one paper's section: that paper, and one part at most
            assert cited == drawn, (question, cited)
            assert "about each part" not in final.answer, final.answer[:300]


def test_off_topic_question_cites_nothing_and_says_so(corpus_app: App) -> None:
    final = terminal(run(corpus_app.ask("What is the boiling point of tungsten?", hitl=False)))
    assert final.type == "final"
    assert final.cited_sources == [] and final.citations == []
    assert "no evidence" in final.answer and "without a language model" in final.answer
    assert "[1]" not in final.answer


def test_selection_scope_is_respected(corpus_app: App) -> None:
    question = (
        "According to this paper, when may acceptors discard the pvalues they have "
        "accepted, and what makes that scheme break down?"
    )
    final = terminal(run(corpus_app.ask(question, items=["ULJB8NEJ"], hitl=False)))
    assert [s.title for s in final.cited_sources] == ["Paxos Made Moderately Complex"]
    rows = corpus_app.turn(final.turn_id).evidence
    assert rows and {r.title for r in rows} == {"Paxos Made Moderately Complex"}


# "Attention Is All You Need": its PDF and its child note (the corpus's paper with both).
ATTENTION, ATTENTION_PDF, ATTENTION_NOTE = "TEN7CNGG", "4Q4PQA5L", "QLG29MTK"


def test_an_attachment_key_scopes_search_and_ask_like_its_parent_item(corpus_app: App) -> None:
    """The attachment rule: an attachment's or a note's key in a scope stands for its paper,
    in `search` (alone or within a collection) as in `ask`."""
    query = "warmup steps learning rate schedule"
    by_parent = corpus_app.search(query, items=[ATTENTION])
    assert by_parent and {h.item_key for h in by_parent} == {ATTENTION}
    assert {h.attachment_key for h in by_parent} >= {ATTENTION_PDF}
    for key in (ATTENTION_PDF, ATTENTION_NOTE):
        assert corpus_app.search(query, items=[key]) == by_parent
        in_collection = corpus_app.search(query, items=[key], collections=["Machine Learning"])
        assert in_collection == by_parent
    question = "How many warmup steps did the Transformer use for its learning rate?"
    for key in (ATTENTION, ATTENTION_NOTE):
        final = terminal(run(corpus_app.ask(question, items=[key], hitl=False)))
        assert [s.title for s in final.cited_sources] == ["Attention Is All You Need"], key
        assert "4000" in final.answer, key  # from the PDF: the note's key opened the paper
        rows = corpus_app.turn(final.turn_id).evidence
        assert {r.item_key for r in rows} == {ATTENTION}
        assert any(r.chunk_type != "note" for r in rows), key


def _cli(home: Any, *args: str) -> dict[str, Any]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), *args, "--json"],
        capture_output=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_budget_one_checkpoint_then_resume_in_a_new_process(corpus_index: Any) -> None:
    home = corpus_index.home
    first = _cli(
        home,
        "ask",
        "How do consensus protocols elect a leader and replicate a log?",
        "--budget",
        "1",
    )
    assert first["status"] == "checkpoint"
    cp = first["checkpoint"]
    assert cp["interrupt_id"] == f"{first['turn_id']}-ext1" and cp["calls_used"] == 1
    assert cp["missing_aspects"]
    out = _cli(home, "resume", "--session", first["session_id"], "--action", "extend_budget")
    if out["status"] == "checkpoint":  # a second pause is allowed: answer now
        out = _cli(home, "resume", "--session", first["session_id"], "--action", "synthesize")
    assert out["status"] == "answered" and out["session_id"] == first["session_id"]
    titles = {s["title"] for s in out["cited_sources"]}
    assert titles & {
        "In Search of an Understandable Consensus Algorithm",
        "Paxos Made Simple",
        "Paxos Made Moderately Complex",
        "Zab: High-performance broadcast for primary-backup systems",
    }


def test_zotero_database_bytes_are_identical_after_every_command(corpus_index: Any) -> None:
    """index, status, search and ask (each a fresh CLI process) on the corpus library leave
    zotero.sqlite byte for byte as it was, and create no side file (-wal, -journal, -shm)
    next to it."""
    db = ZOTERO_DIR / "zotero.sqlite"
    before = sha256_file(db)
    assert before == corpus_index.zotero_sha_before == corpus_index.zotero_sha_after
    listing = sorted(p.name for p in ZOTERO_DIR.iterdir())
    stat = db.stat()
    home = corpus_index.home
    commands = [
        ("index", "--zotero-dir", str(ZOTERO_DIR)),
        ("status",),
        ("search", "how does Raft elect a leader"),
        ("ask", "How does Raft elect a leader?", "--budget", "2"),
    ]
    for command in commands:
        _cli(home, *command)
        assert sha256_file(db) == before, command
        assert sorted(p.name for p in ZOTERO_DIR.iterdir()) == listing, command
        assert (db.stat().st_size, db.stat().st_mtime_ns) == (stat.st_size, stat.st_mtime_ns)
