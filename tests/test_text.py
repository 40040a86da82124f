"""The one text module: sentences of PDF prose (abbreviations, initials, line-break hyphens),
terms stemmed exactly as SQLite FTS5's `porter` tokenizer stems them, and the one stopword list
that both the offline engine and the reranker's lexical signal use."""

from __future__ import annotations

import re
import sqlite3
from html import escape as html_escape

import pytest

from zocrates_nb.retrieval.rerank import pool_bm25, sentence_pieces
from zocrates_nb.text import (
    STOPWORDS,
    clean_passage,
    entities,
    is_caption,
    mentions,
    split_sentences,
    stem,
    strip_reference_markers,
    terms,
    words,
)

# The lexical index's tokenizer (zocrates_nb/index/lexical.py).
FTS5_TOKENIZER = "porter unicode61 remove_diacritics 2"
WORDS = [
    "elections",
    "election",
    "elected",
    "replicas",
    "replicated",
    "replication",
    "consistency",
    "consistent",
    "generalization",
    "relational",
    "agreed",
    "argued",
    "happily",
    "controllers",
    "quorums",
    "running",
    "caresses",
    "ponies",
    "hopefully",
    "embeddings",
    "transformers",
    "attention",
    "retrieval",
    "indexing",
]


def _fts5_stems(words_: list[str]) -> dict[str, str]:
    """Each word as FTS5's porter tokenizer stores it (one row per word, read via fts5vocab)."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{FTS5_TOKENIZER}')")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(words_, 1))
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    rows = db.execute("SELECT doc, term FROM v").fetchall()
    return {words_[doc - 1]: term for doc, term in rows}


def test_stem_matches_fts5_porter_word_for_word() -> None:
    fts = _fts5_stems(WORDS)
    assert {w: stem(w) for w in WORDS} == fts
    # The stems that make lexical matching work across inflections.
    assert stem("elections") == stem("election") == stem("elected") == "elect"
    assert stem("Replicas") == stem("replica")
    assert stem("Raft's") == stem("raft") == "raft"  # possessive dropped, any case


def test_split_sentences_keeps_abbreviations_initials_and_decimals_inside() -> None:
    text = (
        "Leaders are elected by majority vote, e.g. in Raft, as shown in Fig. 3 and Eq. 2. "
        "J. Ousterhout and D. Ongaro measured a 3.5 ms median. Chubby differs, i.e. it uses "
        "Paxos (cf. Sec. 4). The end!"
    )
    assert split_sentences(text) == [
        "Leaders are elected by majority vote, e.g. in Raft, as shown in Fig. 3 and Eq. 2.",
        "J. Ousterhout and D. Ongaro measured a 3.5 ms median.",
        "Chubby differs, i.e. it uses Paxos (cf. Sec. 4).",
        "The end!",
    ]


def test_split_sentences_undoes_pdf_wrapping_and_skips_headings_and_tables() -> None:
    text = (
        "## 3 Leader election\n\n"
        "Raft uses random-\nized timeouts to elect\na leader. Split votes are rare.\n\n"
        "| term | votes |\n|---|---|\n| 1 | 3 |\n\n"
        "![figure](fig1.png)"
    )
    assert split_sentences(text) == [
        "Raft uses randomized timeouts to elect a leader.",
        "Split votes are rare.",
    ]


def test_one_stopword_list_for_terms_entities_and_the_reranker() -> None:
    assert {"the", "of", "does", "paper", "which"} <= STOPWORDS
    assert terms("What does the paper say about leader elections?") == ["leader", "elect"]
    assert entities("How does the paper compare Raft with ZooKeeper's Zab?") == [
        "Raft",
        "ZooKeeper",
        "Zab",
    ]
    assert words("fault-tolerant state machines, 3.5 ms") == [
        "fault-tolerant",
        "state",
        "machines",
        "3.5",
        "ms",
    ]
    # The reranker's lexical signal: a query of stopwords alone scores nothing; the content word
    # matches its inflections through the shared stemmer.
    docs = ["The leader was elected by the majority.", "Attention heads of the transformer."]
    assert pool_bm25("which of the", docs) == [0.0, 0.0]
    lead, other = pool_bm25("elections", docs)
    assert lead > 0 and other == 0


def test_reranker_sentences_come_from_the_one_splitter() -> None:
    text = "Short one. " + "We compare Raft with Paxos, e.g. Multi-Paxos, on five servers."
    long = " ".join(["word"] * 170) + "."
    assert sentence_pieces(text) == [
        "We compare Raft with Paxos, e.g. Multi-Paxos, on five servers."
    ]
    pieces = sentence_pieces(long)
    assert [len(p.split()) for p in pieces] == [80, 80, 10]


HOSTILE = ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>",
           "&lt;b&gt; *x* [1](javascript:y)", "`<iframe>`", "\\<svg onload=z>",
           "[Open](https://e.example/) ![i](https://e.example/i.png)"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_library_and_quoted_text_stays_text_in_markdown(hostile: str) -> None:
    from markdown_it import MarkdownIt

    from zocrates_nb.text import markdown_quote, markdown_text

    render = MarkdownIt("commonmark", {"html": True}).render  # as a notebook renders a cell
    for written in (f"*{markdown_text(hostile)}*", f"- {markdown_quote(hostile)} [1]"):
        html = render(written)
        assert not re.search(r"<(img|script|iframe|svg|a)\b", html), (hostile, html)
    shown = re.sub(r"<[^>]+>", "", render(markdown_text(hostile)))
    assert shown.strip() == html_escape(hostile), "the title reads as written"


def test_a_sentence_cut_by_an_interleaved_caption_is_joined_and_the_caption_kept_aside() -> None:
    # Velvet's text as converted: a page puts Figure 2's caption inside "pro-…gressively".
    text = (
        "To merge two paths, Tour Bus creates a chain of markers. The paths are merged pro-\n\n"
        "**Figure 2:** Example of Tour Bus error correction. (A) Original graph.\n\n"
        "gressively from one end to the next. At each step, a node is compared."
    )
    assert split_sentences(text)[:3] == [
        "To merge two paths, Tour Bus creates a chain of markers.",
        "The paths are merged progressively from one end to the next.",
        "At each step, a node is compared.",
    ]
    paragraphs = clean_passage(text).split("\n\n")
    assert paragraphs[1].startswith("**Figure 2:**") and is_caption(paragraphs[1])


def test_a_footnote_number_after_a_full_stop_ends_the_sentence_and_a_decimal_stays() -> None:
    # MoCo as converted: footnote 4's mark sits on the full stop ("following.4 We set").
    text = ("The dictionary size is a hyper-parameter we study in the following.4 We set "
            "K = 65536 and m = 0.999. It runs on Python 3.6 Then it stops.")  # fmt: skip
    sentences = split_sentences(text)
    assert sentences[0] == "The dictionary size is a hyper-parameter we study in the following."
    assert sentences[1] == "We set K = 65536 and m = 0.999."
    assert any("Python 3.6 Then" in s for s in sentences)


def test_a_word_broken_before_the_authors_address_goes_on_only_in_lower_case() -> None:
    # The HMM primer as converted: a column puts the author's address and Figure 1's labels
    # between "draw-" and "ing"; the address is no half of the word.
    text = (
        "They provide a conceptual toolkit for building complex models just by draw-\n\n"
        "Sean R. Eddy is at Howard Hughes Medical Institute, Saint Louis, Missouri, USA.\n\n"
        "1.0 0.1 0.9 Sequence:\n\n"
        "**Figure 1:** A toy HMM for 5′ splice site recognition.\n\n"
        "ing an intuitive picture. HMMs are the Legos of computational sequence analysis."
    )
    sentences = split_sentences(text)
    assert sentences[0] == ("They provide a conceptual toolkit for building complex models just "
                            "by drawing an intuitive picture.")  # fmt: skip
    assert "Sean R. Eddy is at Howard Hughes Medical Institute, Saint Louis, Missouri, USA." in (
        sentences
    )
    assert not any("drawSean" in s for s in sentences)
    # A broken word whose other half never comes is not joined to prose a page later.
    later = "Results are in Table 2.\n\n" * 6 + "and so the model is small."
    far = split_sentences("It runs by draw-\n\n" + later)
    assert not any(s.startswith("It runs by drawand") for s in far)


def test_a_sentence_cut_at_a_page_break_joins_and_a_list_opener_keeps_its_first_item() -> None:
    text = (
        "A candidate must contact a majority of the cluster, which means that every committed\n\n"
        "entry must be present in at least one of those servers.\n\n"
        "A newly elected master proceeds: 1. It first picks a new client epoch number, which\n\n"
        "clients are required to present on every call. These tools paved the way (see refs. "
        "21,22 for a comparison)."
    )
    assert split_sentences(text) == [
        "A candidate must contact a majority of the cluster, which means that every committed "
        "entry must be present in at least one of those servers.",
        "A newly elected master proceeds: 1. It first picks a new client epoch number, which "
        "clients are required to present on every call.",
        "These tools paved the way (see refs. 21,22 for a comparison).",
    ]


def test_a_running_head_in_capitals_between_a_sentences_halves_is_dropped() -> None:
    """The page break fell after "must have": the journal's running head sits between the
    halves, and a sentence ending on "have" would take it in as words."""
    text = ("For us to guess intelligently, the sequences of exons and introns must have\n\n"
            "NATURE BIOTECHNOLOGY VOLUME 22 NUMBER 10 OCTOBER 2004\n\n"
            "different statistical properties. Exons are uniform.")  # fmt: skip
    assert split_sentences(text) == [
        "For us to guess intelligently, the sequences of exons and introns must have different "
        "statistical properties.",
        "Exons are uniform.",
    ]


def test_paragraphs_that_end_their_sentence_stay_apart_and_numbered_items_are_their_own() -> None:
    text = "Raft elects a leader.\n\nSplit votes are rare.\n\n1. FLP (1985)\n2. Paxos Made Simple"
    assert split_sentences(text) == [
        "Raft elects a leader.",
        "Split votes are rare.",
        "1. FLP (1985)",
        "2. Paxos Made Simple",
    ]


def test_a_name_asked_in_the_plural_is_mentioned_by_its_singular() -> None:
    """'Do bigger Wide-ResNets want harsher augmentation?' was 'no evidence (nothing in it
    mentions Wide-ResNets)' over RandAugment's 'Wide-ResNet-28-2'."""
    assert mentions("we train Wide-ResNet-28-2 and Wide-ResNet-28-10", "Wide-ResNets")
    assert mentions("two Transformers", "Transformer")  # and the other way, as before
    assert not mentions("the GF of a graph", "GFS")  # an acronym's S is no plural
    assert not mentions("a class", "classes")  # only an 's' is taken off


def test_an_interval_in_brackets_is_no_reference_marker() -> None:
    """RandAugment's 'ranging from [0, 30]' was quoted as 'ranging from 2.' (the interval
    taken for a citation, the footnote's number left)."""
    text = "M is on a uniform linear scale ranging from [0, 30] as in prior work [12, 31]."
    assert strip_reference_markers(text) == (
        "M is on a uniform linear scale ranging from [0, 30] as in prior work.")  # fmt: skip
