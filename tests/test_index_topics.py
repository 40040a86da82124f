"""The empty panel's example questions come from the library's own topics (issue 21, point 8):
phrases several papers share, a paper's own section, never a site name or a reading-list tag
("What does my library say about google?"), and they are cached per index generation.

The corpus library (37 real papers, Zotero tags such as "google" and "to-read") and a copy of
the indexed sample library; no model is loaded.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from conftest import CorpusIndex

from zocrates_nb.index import Index
from zocrates_nb.index.topics import (
    CACHE_FILE,
    Paper,
    cached_example_questions,
    example_questions,
    library_topics,
    papers_of,
    questions_for,
)

JUNK = re.compile(r"\b(google|to-read|classic|amazon|arxiv)\b", re.IGNORECASE)


def test_the_corpus_examples_are_research_questions_on_its_own_topics(
    corpus_index: CorpusIndex,
) -> None:
    index = corpus_index.index
    assert isinstance(index, Index)
    papers = {p.key: p for p in papers_of(index)}
    tags = {t.lower() for p in papers.values() for t in p.tags}
    assert {"google", "to-read", "classic"} <= tags  # the junk is there to be refused

    topics = library_topics(index)
    assert topics and not any(JUNK.search(t.phrase) for t in topics)
    questions = questions_for(list(papers.values()))
    assert len(questions) == 3 and all(q.endswith("?") for q in questions)
    assert not any(JUNK.search(q) for q in questions), questions
    # The first asks how several papers approach a phrase they share (a phrase, not a word).
    first = re.fullmatch(r"How do my papers approach (.+), and where do they differ\?",
                         questions[0])
    assert first, questions[0]
    shared = next(t for t in topics if t.phrase == first[1])
    assert " " in shared.phrase and len(shared.items) >= 2
    # Another asks what one paper says about one of its own sections.
    section = next(re.fullmatch(r"What does “(.+)” say about (.+)\?", q) for q in questions
                   if q.startswith("What does “"))
    assert section, questions
    paper = next(p for p in papers.values() if p.title.startswith(section[1]))
    assert any(section[2].lower() in h.lower() for h in paper.headings), paper.headings
    # The third is another subject than the first: other words.
    assert first[1].split()[-1] not in questions[2]


def test_site_names_and_reading_list_tags_never_become_topics() -> None:
    """Every paper tagged "google", "to-read" or "classic": the topics several papers share are
    asked about, the tags never are; a title-case heading ("5.2 Leader Election") reads as the
    papers write it, and a paper's section question asks about words no topic took."""
    papers = [
        Paper("SPAN", "Spanner: Google's Globally-Distributed Database", 2012,
              "Spanner is Google's database. Read-only transactions run lock-free at a "
              "snapshot; Paxos replicates each shard.", ["google", "to-read",
                                                        "distributed databases"],
              ["1 Introduction", "4.2 Read-Only Transactions"]),
        Paper("BIGT", "Bigtable: A Distributed Storage System for Structured Data", 2006,
              "Bigtable is a distributed storage system at Google for structured data.",
              ["google", "to-read", "distributed databases"], ["Introduction", "Data Model"]),
        Paper("CHUB", "Chubby: a lock service for distributed systems", 2006,
              "Chubby is a lock service at Google; its replicas hold a leader election with "
              "Paxos.", ["google", "classic"], ["2.4 Leader election", "Conclusion"]),
        Paper("RAFT", "In Search of an Understandable Consensus Algorithm", 2014,
              "Raft separates leader election, log replication and safety.", ["classic"],
              ["5.2 Leader Election", "5.3 Log Replication"]),
    ]
    assert questions_for(papers) == [
        "How do my papers approach distributed databases, and where do they differ?",
        "What does “In Search of an Understandable Consensus Algorithm” say about log "
        "replication?",
        "What do my papers say about leader election, and do they agree?",
    ]


def test_the_questions_are_cached_per_index_generation(sample_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(sample_home, home)
    with Index.open(home) as index:
        (index.index_dir / CACHE_FILE).unlink(missing_ok=True)
        assert cached_example_questions(index) is None  # never computed: None, at once
        questions = example_questions(index)
        assert questions and all(q.endswith("?") for q in questions)
        assert "reciprocal rank fusion" in " ".join(questions)  # a sample paper's section
        assert cached_example_questions(index) == questions
        (index.index_dir / CACHE_FILE).write_text('{"version": 1, "generation": "x", '
                                                  '"questions": ["Stale?"]}', "utf-8")
        assert cached_example_questions(index) is None, "another generation's are stale"
        assert example_questions(index) == questions
        with index.writer_lock():  # an indexing run ends: a new generation
            pass
        assert cached_example_questions(index) is None
