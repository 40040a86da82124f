"""The fresh question set (benchmarks/): its files parse, every answering sentence is verbatim in
its paper or note, and the scorer counts an answer the way issue 27 asks (the set itself is run
by `benchmarks/run_fresh.py`, too slow for the suite)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("suffix", ["", "2", "3", "4", "5"])  # set 1 and the sets written blind
def test_every_sentence_is_in_its_paper_or_note(shared_corpus: Path, suffix: str) -> None:
    check = _module("check_fresh")
    corpus = check.Corpus(shared_corpus)
    questions = check.load(BENCH / f"questions-fresh{suffix}.jsonl")
    assert check.check(questions, corpus) == []
    conversations = BENCH / f"conversations-fresh{suffix}.jsonl"  # set 5 has questions only
    if suffix != "5":
        assert check.check_conversations(conversations, corpus) == []


def test_a_doctored_sentence_is_caught(shared_corpus: Path) -> None:
    check = _module("check_fresh")
    corpus = check.Corpus(shared_corpus)
    q = next(q for q in check.load(BENCH / "questions-fresh.jsonl") if q["kind"] == "factual")
    q["expected"][0]["sentence"] = q["expected"][0]["sentence"].replace(" ", " never ", 1)
    assert any(q["id"] in p for p in check.check([q], corpus))


@pytest.fixture(scope="module")
def library(shared_corpus: Path) -> object:
    return _module("run_fresh").Library(shared_corpus)


def _answer(*lines: str, cited: tuple[str, ...] = ()) -> dict:
    return {"answer": "\n".join(lines), "cited_sources": [{"title": t} for t in cited]}


def test_factual_counts_only_the_first_three_quotes(library: object) -> None:
    run = _module("run_fresh")
    q = {"kind": "factual", "expected": [{"slug": "mapreduce", "sentence": (
        "When a MapReduce operation is close to completion, the master schedules backup "
        "executions of the remaining in-progress tasks.")}]}
    title = "MapReduce: Simplified Data Processing on Large Clusters"
    answer = "- " + q["expected"][0]["sentence"] + " [1]"
    filler = [f"- Filler sentence number {i} about clusters. [1]" for i in range(3)]
    assert run.score(q, _answer(answer, *filler, cited=(title,)), library)[0]
    late, seen = run.score(q, _answer(*filler, answer, cited=(title,)), library)
    assert not late and seen["anywhere"] and seen["padding"] == 3
    assert not run.score(q, _answer(answer), library)[0]  # quoted but not cited


def test_a_negative_must_be_uncited_and_said_in_the_answers_own_words(library: object) -> None:
    run = _module("run_fresh")
    q = {"kind": "negative", "expected": []}
    assert run.score(q, _answer("Your papers do not give the fee in bitcoins."), library)[0]
    quoted_not = _answer("Closest passages:", "- It does not give a fee. [1]")
    assert not run.score(q, quoted_not, library)[0]
    cited = _answer("Your papers do not give it.", cited=("Bitcoin: A Peer-to-Peer Electronic "
                                                          "Cash System",))
    assert not run.score(q, cited, library)[0]


def test_a_cut_quote_is_counted(library: object) -> None:
    run = _module("run_fresh")
    summary = _answer("1. You asked: “Why?”", " The answer: the throughput can reach (over 4 acco…")
    assert run.check_turn({"whole_sentences": True}, summary, [], library)
    assert run.cut("- A newly elected master proceeds: 1 [3] _(§ 2.4 Master)_")
    assert not run.cut("- The master re-replicates a chunk. [3] _(§ 4.3 Re-replication)_")


def test_a_conversation_turn_that_repeats_itself_or_recalls_only_in_a_quote_fails(
    library: object,
) -> None:
    run = _module("run_fresh")
    gfs = "The Google File System"
    bigtable = "Bigtable: A Distributed Storage System for Structured Data"
    first = _answer("- The master keeps a chunk version number. [1]", cited=(gfs,))
    must = {"cite": ["bigtable"], "not_repeat": 1, "own_says": ["GFS"]}
    again = _answer("- The master keeps a chunk version number. [1]",
                    "- Bigtable stores its files in GFS. [2]", cited=(gfs, bigtable))
    fails = run.check_turn(must, again, [first], library)
    assert any("repeats 1 bullet" in f for f in fails)
    assert any("own words" in f for f in fails)  # "GFS" only inside a quote
    contrast = _answer("In GFS, by contrast, a chunk version number marks stale replicas.",
                       "- Bigtable stores its files in GFS. [2]", cited=(bigtable,))
    assert run.check_turn(must, contrast, [first], library) == []
