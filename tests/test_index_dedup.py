"""Near-duplicate passages: one place in the results, held by the larger passage."""

from __future__ import annotations

from pathlib import Path

from conftest import LibraryBuilder, topic_paragraphs

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, SearchFilter, index_library
from zocrates_nb.index.dedup import distinct


def test_a_passage_inside_another_gives_its_place_to_the_larger() -> None:
    caption = "Figure 3: Throughput of the lighthouse lamp against the clockwork winding rate"
    body = f"We measured the lamp for a week. {caption}. The rate barely matters."
    other = "Tomato seedlings need plenty of sunlight and warm soil in early spring."
    ranked = [caption, "unrelated words about nothing in particular at all", body, other]
    assert distinct(ranked, str, 3) == [body, ranked[1], other]
    assert distinct([body, caption, other], str, 2) == [body, other]  # the smaller one goes
    assert distinct([caption, other], str, 1) == [caption]


def test_search_never_spends_two_places_on_a_caption_and_its_body_text(tmp_path: Path) -> None:
    caption = "**Figure 1:** Lighthouse lamp brightness against the clockwork winding rate."
    text = "\n\n".join(
        ["# Lamps", "## 1 Measurements", *topic_paragraphs("raft", 1), caption,
         "The keeper wound the lighthouse clockwork every four hours."]
    )
    b = LibraryBuilder(tmp_path / "library")
    b.paper("LAMP", "raft", text=text)
    b.paper("OKAPI", "bm25")
    index = Index.open(tmp_path / "home", Settings())
    try:
        index_library(b.library, index, progress=False)
        chunks = index.chunks_of("ALAMP")
        figure = next(c for c in chunks if c.chunk_type == "figure")
        body = next(c for c in chunks if c.chunk_type == "body")
        assert "Lighthouse lamp brightness" in body.text  # the premise: the caption is twice
        query = "lighthouse lamp brightness clockwork winding rate"
        both = index.catalog.bm25(query, SearchFilter(), 10)
        assert {figure.chunk_id, body.chunk_id} <= set(both)
        got = [h.chunk.chunk_id for h in index.search(query, limit=10, mode="bm25")]
        assert body.chunk_id in got and figure.chunk_id not in got
        assert got.index(body.chunk_id) == 0  # at the place the better of the two had
    finally:
        index.close()


def test_two_papers_holding_the_same_passage_both_keep_a_place() -> None:
    """A preprint and its published version: each paper stays findable."""
    text = "Leaders are elected with randomized timeouts so that split votes are rare."
    ranked = [("PREPRINT", text), ("JOURNAL", text), ("PREPRINT", text + " Votes are rare.")]
    got = distinct(ranked, lambda r: r[1], 5, group=lambda r: r[0])
    assert got == [ranked[2], ranked[1]]  # the preprint's larger twin takes its place
