"""Dense passages: every word of a chunk reaches the embedding model, context on each window."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from conftest import LibraryBuilder, topic_paragraphs

from zocrates_nb.config import Settings
from zocrates_nb.index import Chunk, Index, SearchFilter, index_library
from zocrates_nb.index.passages import WINDOW_WORDS, dense_passages, dense_texts, windows


def _chunk(text: str, chunk_type: str = "body") -> Chunk:
    return Chunk(
        chunk_id="DOC:0003", item_key="ITEM", attachment_key="DOC", line_start=1, line_end=9,
        section="4.2 Garbage Collection", section_id="s7", chunk_type=chunk_type, text=text,
        title="Paxos Made Moderately Complex",
    )


def test_long_chunks_become_overlapping_windows_covering_every_word() -> None:
    words = [f"w{i}" for i in range(400)]
    parts = windows(" ".join(words))
    assert len(parts) == 3
    assert all(len(p.split()) <= WINDOW_WORDS for p in parts)
    assert parts[0].split()[0] == "w0" and parts[-1].split()[-1] == "w399"
    covered = {w for p in parts for w in p.split()}
    assert covered == set(words)
    for a, b in pairwise(parts):  # neighbours overlap: no cut sentence
        assert set(a.split()) & set(b.split())


def test_every_window_carries_the_title_and_section_and_short_chunks_stay_whole() -> None:
    long = _chunk(" ".join(f"w{i}" for i in range(400)))
    texts = dense_texts(long)
    assert len(texts) == 3
    assert all(t.startswith("Paxos Made Moderately Complex — 4.2 Garbage Collection\n")
               for t in texts)
    short = _chunk("Acceptors may discard pvalues once a majority has them.")
    assert dense_texts(short) == [
        "Paxos Made Moderately Complex — 4.2 Garbage Collection\n"
        "Acceptors may discard pvalues once a majority has them."
    ]
    owners, flat = dense_passages([long, short])
    assert [c.chunk_id for c in owners] == ["DOC:0003"] * 4
    assert flat == [*texts, *dense_texts(short)]


def test_dense_search_finds_a_fact_at_the_end_of_a_long_chunk(tmp_path: Path) -> None:
    """The model reads ≈ 190 words: a fact past them is found only through a later window."""
    raft = topic_paragraphs("raft", 4, sentences=8)  # ≈ 350 words of consensus
    tail = ("The lighthouse keeper winds the clockwork lamp at dusk and logs every passing "
            "ship in the harbour ledger.")
    text = "# Notes\n\n## 1 Field notes\n\n" + "\n\n".join([*raft, tail]) + "\n"
    b = LibraryBuilder(tmp_path / "library")
    b.paper("MIXED", "raft", text=text)
    b.paper("OKAPI", "bm25")
    b.paper("SIMCLR", "vision")
    index = Index.open(tmp_path / "home", Settings())
    try:
        report = index_library(b.library, index, progress=False)
        assert report.errors == []
        body = next(c for c in index.chunks_of("AMIXED") if c.section == "1 Field notes")
        assert body.words > 300 and tail in body.text  # one chunk: the fact is its last line
        query = "Who keeps a record of the ships passing the harbour lighthouse?"
        hits = index.search(query, SearchFilter(chunk_types=["body"]), limit=3, mode="dense")
        assert hits[0].chunk.chunk_id == body.chunk_id
        # The premise: the chunk's first window alone (what one vector saw) is far from it.
        q = index.embedder.embed_query(query)
        first = index.embedder.embed([dense_texts(body)[0]])[0]
        whole = 1 - sum(x * y for x, y in zip(q, first, strict=True))
        found = dict(index.dense.query(q, SearchFilter(), 10))[body.chunk_id]
        assert found < whole - 0.2
        # Windows are vectors only: one id per chunk everywhere else.
        assert index.dense.ids() == set(index.catalog.chunk_ids())
        assert index.dense.count() == index.catalog.chunk_count()
        ids = [cid for cid, _ in index.dense.query(q, SearchFilter(), 50)]
        assert len(ids) == len(set(ids))
    finally:
        index.close()
