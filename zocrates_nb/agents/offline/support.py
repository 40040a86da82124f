"""How well a passage supports a claim, without a language model: the offline verifier's score."""

from __future__ import annotations

import itertools
import re

import numpy as np

from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.notes import table_lines
from zocrates_nb.text import (
    TermStats,
    clean_passage,
    split_sentences,
    strip_reference_markers,
    terms,
)


def _loose(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def is_quote(claim: str, passage: str) -> bool:
    """Whether the claim is the passage's own words (spacing, punctuation, hyphenation, case
    and reference markers aside): the offline writer only quotes, so its claims are checked
    by reading, never by the embedding model."""
    c = _loose(strip_reference_markers(claim))
    if len(c) < 20:
        return False
    text = strip_reference_markers(clean_passage(passage))
    rows = (row for para in re.split(r"\n\s*\n", text) if "|" in para for row in table_lines(para))
    return c in _loose(text) or any(c == _loose(row) for row in rows)  # a table's row, as quoted


def offline_support(emb: SentenceEmbeddings, claim: str, passage: str) -> float:
    """Probability-like support of `claim` by `passage`: 1.0 for a quote, else the best
    sentence similarity mapped through a logistic calibrated on MiniLM cosines."""
    c = re.sub(r"_?\(§[^)]*\)_?", "", claim)  # the writer's section tag is not the claim
    c = re.sub(r"\s+", " ", strip_reference_markers(c)).strip(" .-*_")
    if not c:
        return 0.0
    flat = re.sub(r"\s+", " ", strip_reference_markers(clean_passage(passage))).lower()
    if c.lower().rstrip(".") in flat or is_quote(c, passage):
        return 1.0
    sents = [s for s in split_sentences(passage) if len(s.split()) >= 4] or [passage[:2000]]
    # Windows of two sentences catch claims that merge adjacent sentences.
    windows = sents + [f"{a} {b}" for a, b in itertools.pairwise(sents)]
    sims = emb.similarity(c, windows[:400])
    best = float(sims.max()) if len(sims) else 0.0
    lex = TermStats([terms(w) for w in windows]).overlap(terms(c), terms(passage))
    x = 0.75 * best + 0.25 * lex
    return float(1 / (1 + np.exp(-14 * (x - 0.45))))
