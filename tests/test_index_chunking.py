"""Chunking: section-aware, 150–400 words, frontmatter first, figures/tables/notes typed."""

from __future__ import annotations

import re

import pytest
from conftest import topic_markdown, topic_paragraphs

from zocrates_nb.index.chunking import chunk_bundle, section_heading
from zocrates_nb.index.model import Chunk
from zocrates_nb.ingest.bundle import Bundle, Toc
from zocrates_nb.ingest.toc import TocInfo, make_bundle


def _bundle(markdown: str, **info: object) -> Bundle:
    return make_bundle(markdown, TocInfo(converter="test", **info))  # type: ignore[arg-type]


def _chunks(bundle: Bundle, kind: str = "markdown") -> list[Chunk]:
    return chunk_bundle(bundle, item_key="ITEM", doc_key="DOC", kind=kind)


def _section_of(toc: Toc, line: int) -> str:
    return next(s.id for s in toc.sections if s.line_start <= line <= s.line_end)


def test_chunk_zero_is_the_frontmatter_with_title_authors_year_abstract() -> None:
    bundle = _bundle(
        topic_markdown("raft", sections=2),
        title="Understandable Consensus with Raft",
        authors=["Diego Ongaro", "John Ousterhout"],
        year=2014,
        abstract="Raft is a consensus algorithm for managing a replicated log.",
    )
    chunks = _chunks(bundle)
    front = chunks[0]
    assert front.chunk_id == "DOC:0000"
    assert front.chunk_type == "frontmatter"
    assert front.section_id == "s0"
    assert "Understandable Consensus with Raft" in front.text
    assert "Diego Ongaro, John Ousterhout" in front.text
    assert "2014" in front.text
    assert "managing a replicated log" in front.text
    s0 = bundle.toc.sections[0]
    assert (front.line_start, front.line_end) == (1, max(s0.line_end, 1))
    assert [c.chunk_type for c in chunks].count("frontmatter") == 1
    assert [c.chunk_id for c in chunks] == [f"DOC:{n:04d}" for n in range(len(chunks))]


def test_long_sections_split_at_paragraphs_into_balanced_chunks_never_across_sections() -> None:
    # Section 1: 12 paragraphs × ~80 words ≈ 960 words → 3 chunks of ~320; section 2: short.
    paras = topic_paragraphs("bm25", 12, sentences=7)
    md = "\n\n".join(
        ["# Ranking", "## 1 Weighting", *paras, "## 2 Notes", "A short closing section."]
    )
    bundle = _bundle(md)
    body = [c for c in _chunks(bundle) if c.chunk_type == "body"]
    first = [c for c in body if c.section == "1 Weighting"]
    assert len(first) == 3
    assert all(150 <= c.words <= 400 for c in first)
    assert max(c.words for c in first) - min(c.words for c in first) < 120  # balanced
    # Paragraph boundaries: every chunk starts a paragraph of the document.
    for c in first:
        assert c.text.splitlines()[0].lstrip("# ") in {p.splitlines()[0] for p in paras} | {
            "1 Weighting"
        }
    last = [c for c in body if c.section == "2 Notes"]
    assert len(last) == 1 and last[0].words < 150  # a short section stays whole
    for c in body:
        assert _section_of(bundle.toc, c.line_start) == _section_of(bundle.toc, c.line_end)


def test_a_very_long_paragraph_is_cut_at_sentence_boundaries() -> None:
    sentences = [f"Sentence number {i} talks about leader election and terms." for i in range(120)]
    md = "# Doc\n\n## 1 One giant paragraph\n\n" + " ".join(sentences) + "\n"
    chunks = [c for c in _chunks(_bundle(md)) if c.chunk_type == "body"]
    assert len(chunks) >= 3
    assert all(c.words <= 400 for c in chunks)
    assert all(c.text.rstrip().endswith(".") for c in chunks)
    rebuilt = " ".join(c.text.replace("## 1 One giant paragraph", "").strip() for c in chunks)
    assert rebuilt == " ".join(sentences)


def test_sentence_less_text_is_still_cut_below_the_maximum() -> None:
    md = "# Doc\n\n## 1 Numbers\n\n" + " ".join(str(i) for i in range(1500)) + "\n"
    chunks = [c for c in _chunks(_bundle(md)) if c.chunk_type == "body"]
    assert all(c.words <= 400 for c in chunks)
    assert sum(c.words for c in chunks) == 1500 + 3  # the heading line's words too


def test_abstract_section_figures_and_tables_are_typed_chunks() -> None:
    md = "\n".join(
        [
            "# A Study",
            "",
            "## Abstract",
            "",
            "We study weighting of query terms.",
            "",
            "## 1 Results",
            "",
            *topic_paragraphs("bm25", 3),
            "",
            "**Figure 1:** Precision at ten against the k1 parameter.",
            "",
            "**Table 2:** Runs on TREC-3.",
            "",
            "| run | P@10 |",
            "|---|---|",
            "| city1 | 0.58 |",
            "| city2 | 0.61 |",
        ]
    )
    bundle = _bundle(md)
    chunks = _chunks(bundle)
    types = [c.chunk_type for c in chunks]
    assert types[0] == "frontmatter"
    assert types.count("abstract") == 1
    fig = next(c for c in chunks if c.chunk_type == "figure")
    assert fig.section_id == "f1" and fig.section == "1 Results"
    assert fig.text.startswith("Figure 1: Precision at ten")
    table = next(c for c in chunks if c.chunk_type == "table")
    assert table.section_id == "t1"
    assert "city2,0.61" in table.text and table.text.startswith("Table 2: Runs on TREC-3.")
    # Chunks are numbered in document order: the figure comes after the body text it is in.
    assert chunks.index(fig) > types.index("body")


def test_notes_are_note_chunks_without_frontmatter() -> None:
    bundle = _bundle("# My reading notes\n\n" + "\n\n".join(topic_paragraphs("genome", 2)))
    chunks = _chunks(bundle, kind="note")
    assert chunks and all(c.chunk_type == "note" for c in chunks)
    assert chunks[0].chunk_id == "DOC:0000"


def test_document_without_headings_is_chunked_as_body_of_s0() -> None:
    text = "\n\n".join(topic_paragraphs("garden", 10, sentences=6))
    chunks = _chunks(_bundle(text), kind="text")
    body = [c for c in chunks if c.chunk_type == "body"]
    assert chunks[0].chunk_type == "frontmatter"
    assert len(body) >= 2 and all(c.section_id == "s0" and c.section == "" for c in body)
    assert all(150 <= c.words <= 400 for c in body)


def test_heading_only_parent_sections_make_no_chunk_and_pages_come_from_the_toc() -> None:
    md = "\n".join(
        [
            "# Paper",
            "",
            "## 3 Method",
            "",
            "### 3.1 First step",
            "",
            *topic_paragraphs("vision", 2),
        ]
    )
    bundle = _bundle(md, page_starts=[1, 5])
    chunks = _chunks(bundle)
    assert not [c for c in chunks if c.section == "3 Method"]
    step = next(c for c in chunks if c.section == "3.1 First step")
    assert step.page == bundle.toc.page_of_line(step.line_start) == 2
    assert section_heading(bundle.toc.sections[3]) == "3.1 First step"


def test_metadata_travels_on_every_chunk() -> None:
    bundle = _bundle(topic_markdown("raft"), title="T", authors=["A B"], year=1999)
    for c in _chunks(bundle):
        assert (c.item_key, c.attachment_key, c.title, c.authors, c.year) == (
            "ITEM", "DOC", "T", ["A B"], 1999
        )


@pytest.mark.corpus
def test_corpus_chunks_respect_sections_and_sizes(corpus_index) -> None:  # type: ignore[no-untyped-def]
    index = corpus_index.index
    small_in_long = 0
    body_total = 0
    for doc in index.documents():
        if doc.status != "done":
            continue
        bundle = index.bundle(doc.doc_key)
        chunks = index.chunks_of(doc.doc_key)
        assert chunks[0].chunk_id.endswith(":0000")
        if doc.kind != "note":
            assert chunks[0].chunk_type == "frontmatter"
        by_section: dict[str, list[Chunk]] = {}
        for c in chunks:
            assert c.words <= 400, c.chunk_id
            if c.chunk_type in ("body", "abstract", "note"):
                assert _section_of(bundle.toc, c.line_start) == _section_of(
                    bundle.toc, c.line_end
                ), c.chunk_id
                by_section.setdefault(c.section_id, []).append(c)
        for pieces in by_section.values():
            if len(pieces) > 1:
                body_total += len(pieces)
                small_in_long += sum(1 for c in pieces if c.words < 150)
    # Short chunks only come from short sections, bar a few paragraph-boundary leftovers.
    assert body_total > 300
    assert small_in_long <= 0.03 * body_total


@pytest.mark.corpus
def test_corpus_frontmatter_carries_zotero_metadata(corpus_index) -> None:  # type: ignore[no-untyped-def]
    lib = corpus_index.library
    index = corpus_index.index
    raft = next(it for it in lib.items.values() if it.title.startswith("In Search of an"))
    doc_key = index.resolve_doc_keys(raft.key)[0]
    bundle = index.bundle(doc_key)
    assert bundle.toc.title == raft.title
    assert bundle.toc.authors == raft.authors
    assert bundle.toc.year == raft.year
    if raft.abstract:
        assert bundle.toc.abstract == raft.abstract and bundle.toc.abstract_source == "metadata"
    front = index.chunks_of(doc_key)[0]
    assert raft.title in front.text and re.search(r"Ongaro", front.text)
    okapi = next(it for it in lib.items.values() if it.title == "Okapi at TREC-3")
    okapi_front = index.chunks_of(index.resolve_doc_keys(okapi.key)[0])[0]
    assert "Tags: BM25, ranking" in okapi_front.text  # the user's tags describe the paper
    assert f"Venue: {okapi.venue}" in okapi_front.text


def test_a_short_document_without_headings_keeps_its_text() -> None:
    """Two lines of a plain-text file are the whole document: the frontmatter chunk (title
    only) does not stand for them, so they are a body chunk of their own."""
    b = _bundle("Mémoire sur la crème des marées\n\nLe café du port ferme tôt.\n", title="legacy")
    chunks = _chunks(b, kind="text")
    assert [c.chunk_type for c in chunks] == ["frontmatter", "body"]
    assert "Le café du port ferme tôt." in chunks[1].text
    # A paper's short frontmatter section is still not repeated as body text.
    paper = _bundle("Title\n\nAda Lovelace\n\n# 1 Introduction\n\n" + "word " * 200,
                    title="Title")
    assert [c.section_id for c in _chunks(paper)] == ["s0", "s1"]
