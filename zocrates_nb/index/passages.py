"""What the dense side embeds for a chunk: its context and its text, in windows the model sees.

The embedding model reads at most 256 word pieces (≈ 190 words); four body chunks in five are
longer, so a single vector per chunk left ~40 % of the body text invisible to dense search.
Each chunk is therefore embedded as overlapping windows of at most `WINDOW_WORDS` words, every
window prefixed by the chunk's context (paper title — section), and a chunk's dense score is
its best window's. What search returns stays the chunk text: windows exist only as vectors.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from zocrates_nb.index.model import Chunk

# Bump when what is embedded for a chunk changes: every document is then re-embedded.
PASSAGE_VERSION = "2"
# ≈ 220 word pieces of text + ≈ 20 of context: inside the model's 256-piece input.
WINDOW_WORDS = 160
WINDOW_OVERLAP = 30  # words shared by neighbouring windows, so no sentence is only ever cut


def context_head(chunk: Chunk) -> str:
    """"Paper title — section heading": what places a passage in its paper."""
    return " — ".join(p for p in (chunk.title, chunk.section) if p)


def windows(text: str, size: int = WINDOW_WORDS, overlap: int = WINDOW_OVERLAP) -> list[str]:
    """Evenly spaced word windows of at most `size` covering all of `text` (one if it fits)."""
    words = text.split()
    if len(words) <= size + overlap // 2:
        return [" ".join(words)]
    n = math.ceil((len(words) - overlap) / (size - overlap))
    step = (len(words) - size) / (n - 1)
    return [" ".join(words[round(i * step) : round(i * step) + size]) for i in range(n)]


def dense_texts(chunk: Chunk) -> list[str]:
    """The texts embedded for one chunk, context first in each."""
    if chunk.chunk_type == "frontmatter":  # title, authors, … abstract: the title leads
        parts = windows(chunk.text)
        return [parts[0], *(f"{chunk.title}\n{p}" if chunk.title else p for p in parts[1:])]
    head = context_head(chunk)
    return [f"{head}\n{p}" if head else p for p in windows(chunk.text)]


def dense_passages(chunks: Sequence[Chunk]) -> tuple[list[Chunk], list[str]]:
    """(owner chunk, text) of every window of these chunks, as two parallel lists."""
    owners: list[Chunk] = []
    texts: list[str] = []
    for chunk in chunks:
        for text in dense_texts(chunk):
            owners.append(chunk)
            texts.append(text)
    return owners, texts
