"""Reranking the evidence of a run before synthesis.

1. Substantive filter: frontmatter chunks, `s0`, table-of-contents headings and leading YAML
   blocks are dropped (a cross-encoder loves their keyword density, and they give the
   synthesizer nothing to ground a claim on); if nothing is left, the original set is kept.
2. Ordering against the search goal: a local sentence-transformers `CrossEncoder` when one is
   configured (`retrieval.rerank_model`) and loads offline; otherwise the named fallback
   `FALLBACK_METHOD`, which needs no model beyond the index's own embedder. With the run's
   `PassageVectors`, the fallback's bi-encoder cosine is the dense search's own: each passage's
   best stored window, fetched by chunk id, so reranking embeds nothing but the goal (already
   embedded by the search). Any error keeps retrieval order, and says so in the method
   recorded on every evidence item.
3. Cap to `max_rerank_chunks` and trim to the word ceiling.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from zocrates_nb.config import RetrievalSettings
from zocrates_nb.retrieval.state import Evidence, RunState
from zocrates_nb.text import split_sentences, terms

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

    from zocrates_nb.retrieval.vectors import PassageVectors

log = logging.getLogger(__name__)

FALLBACK_METHOD = "biencoder-bm25-fusion"
RETRIEVAL_ORDER = "retrieval-order"

_TOC_HEADINGS = {"frontmatter", "contents", "table of contents", "toc", "outline"}
# Sentences of prose (a capital, eight words or more, a full stop): a title page has names,
# affiliations and addresses, not these.
_PROSE_RE = re.compile(r"(?:^|(?<=[.!?]\s))[A-Z][^.!?\n]*(?:\s+[^.!?\s]+){7,}[.!?](?=\s|$)")
S0_PROSE_SENTENCES = 3
_YAML = re.compile(r"^\s*---\s*\n(.*?)\n---\s*(\n|$)", re.DOTALL)

_CE_LOCK = threading.Lock()
_CROSS_ENCODERS: dict[str, CrossEncoder] = {}


class TextEmbedder(Protocol):
    """What the fallback needs from the index's embedder (normalised vectors)."""

    def embed(self, texts: list[str]) -> list[list[float]]: ...


# --------------------------------------------------------------------------- filter


def is_substantive(e: Evidence) -> bool:
    """False for passages with nothing to ground a claim on (frontmatter, s0, a TOC, YAML)."""
    if e.chunk_type == "frontmatter":
        return False
    # A paper's s0 is what stands before its first heading: a title page (title, authors),
    # unless the paper has no early headings (a letter, an OCR scan, a primer), where it is the
    # paper's text. A note's is the note itself, and the user's notes are evidence.
    s0 = e.section_id == "s0" or e.chunk_id.endswith(":s0")
    if e.chunk_type != "note" and s0 and len(_PROSE_RE.findall(e.text)) < S0_PROSE_SENTENCES:
        return False
    heading = e.section.strip().lower().strip(" .:#")
    heading = re.sub(r"^[\divxlc.]+\s+", "", heading)  # "0 Contents" → "contents"
    if heading in _TOC_HEADINGS:
        return False
    rest = _strip_yaml(e.text)
    if rest != e.text and len(rest.split()) < 20:  # a metadata block and little else
        return False
    return e.chunk_type in ("table", "figure") or not _looks_like_toc(e.text)


def _strip_yaml(text: str) -> str:
    """The text without a leading YAML metadata block (`---` … `title:`/`authors:` … `---`)."""
    m = _YAML.match(text)
    if m and re.search(r"^(title|authors?):", m.group(1), re.MULTILINE):
        return text[m.end() :].strip()
    return text


_TOC_LINE = re.compile(r"(\.\s?){3,}\s*\d{1,4}\s*$|\s\d{1,4}\s*$")


def _looks_like_toc(text: str) -> bool:
    """A printed table of contents: mostly short lines ending in page numbers."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 5:
        return False
    hits = sum(1 for ln in lines if len(ln.split()) <= 12 and _TOC_LINE.search(ln))
    return hits / len(lines) > 0.6


def filter_substantive(items: Sequence[Evidence]) -> list[Evidence]:
    """Passages worth reranking (leading YAML blocks cut off); all of them if none is."""
    kept = []
    for e in items:
        if not is_substantive(e):
            continue
        text = _strip_yaml(e.text)
        kept.append(
            e if text == e.text else e.model_copy(update={"text": text, "words": len(text.split())})
        )
    return kept if kept else list(items)


# --------------------------------------------------------------------------- scorers


def load_cross_encoder(name: str) -> CrossEncoder:
    """A local CrossEncoder (path or cached hub name), once per process; never downloads."""
    with _CE_LOCK:
        model = _CROSS_ENCODERS.get(name)
        if model is None:
            from sentence_transformers import CrossEncoder

            model = CrossEncoder(name, device="cpu", local_files_only=True)
            _CROSS_ENCODERS[name] = model
        return model


@dataclass
class FusionWeights:
    """Weights of the fallback's signals, each z-normalised over the candidates.

    Tuned on the SciFact *train* split (`bench beir --split train`); reported on test.
    """

    lexical: float = 1.0  # BM25 of the goal over the candidates (IDF from the candidate pool)
    passage: float = 1.0  # best cosine over ~200-word windows of the passage (heading prepended)
    sentence: float = 1.0  # best cosine of a single sentence
    bm25_rank: float = 0.5  # the index's BM25 rank, where the passage came from a search


MAX_WINDOWS = 12  # per passage: long sections are read whole, but scored on their start
MAX_SENTENCES = 60


def sentence_pieces(text: str, min_words: int = 4, max_words: int = 80) -> list[str]:
    """The passage's sentences for the best-sentence signal: long ones cut, short ones dropped."""
    out: list[str] = []
    for sentence in split_sentences(text):
        words = sentence.split()
        for i in range(0, len(words), max_words):
            piece = words[i : i + max_words]
            if len(piece) >= min_words:
                out.append(" ".join(piece))
    return out[:MAX_SENTENCES]


def windows(text: str, size: int = 200, stride: int = 150) -> list[str]:
    words = text.split()
    if len(words) <= size:
        return [" ".join(words)]
    starts = range(0, max(len(words) - size + stride, 1), stride)
    return [" ".join(words[i : i + size]) for i in starts][:MAX_WINDOWS]


def pool_bm25(query: str, texts: Sequence[str], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """BM25 of the query over the candidates, with document frequencies from the candidates:
    words every candidate shares (the topic) weigh little, the discriminating ones a lot."""
    docs = [terms(t) for t in texts]
    n = len(docs)
    if not n:
        return []
    avg = max(sum(map(len, docs)) / n, 1.0)
    df = Counter(w for d in docs for w in set(d))
    q = set(terms(query))
    out = []
    for d in docs:
        tf = Counter(d)
        score = 0.0
        for w in q:
            f = tf.get(w, 0)
            if f:
                idf = math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5))
                score += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avg))
        out.append(score)
    return out


def _z(values: Sequence[float | None]) -> list[float]:
    """Standard scores; missing values score as the mean (0)."""
    have = [v for v in values if v is not None]
    if len(have) < 2:
        return [0.0] * len(values)
    mean = sum(have) / len(have)
    sd = math.sqrt(sum((v - mean) ** 2 for v in have) / len(have))
    if sd == 0:
        return [0.0] * len(values)
    return [0.0 if v is None else (v - mean) / sd for v in values]


def fallback_scores(
    query: str,
    texts: Sequence[str],
    embed: Callable[[list[str]], list[list[float]]],
    *,
    heads: Sequence[str] | None = None,
    bm25_ranks: Sequence[int | None] | None = None,
    weights: FusionWeights | None = None,
    stored: Sequence[float | None] | None = None,
) -> list[float]:
    """The named fallback: bi-encoder cosines (best window, best sentence) fused with BM25 (of
    the goal over the candidates, and the index's BM25 rank) as a weighted sum of z-scores.

    `stored` holds each passage's best stored-window cosine (None where the index has no
    vector): those passages are not embedded again, and the best-sentence signal, which would
    embed every sentence of every candidate, gives its weight to the stored windows (a
    window of the index is a few sentences: the finer signal is already in it)."""
    w = weights or FusionWeights()
    if not texts:
        return []
    heads = heads or [""] * len(texts)
    have = list(stored) if stored is not None else [None] * len(texts)
    with_sentences = stored is None
    pieces: list[str] = [query]
    owners: list[tuple[int, str]] = []
    for i, t in enumerate(texts):
        if have[i] is None:
            for win in windows(t):
                pieces.append(f"{heads[i]}\n{win}" if heads[i] else win)
                owners.append((i, "passage"))
        if with_sentences:
            for sent in sentence_pieces(t):
                pieces.append(sent)
                owners.append((i, "sentence"))
    best: dict[str, list[float]] = {
        "passage": [-1.0 if c is None else float(c) for c in have],
        "sentence": [-1.0] * len(texts),
    }
    if owners:
        vectors = embed(pieces)
        q = vectors[0]
        for v, (i, kind) in zip(vectors[1:], owners, strict=True):
            cos = sum(x * y for x, y in zip(q, v, strict=True))
            if cos > best[kind][i]:
                best[kind][i] = cos
    best["sentence"] = [
        max(s, p) if s < -0.5 else s for s, p in zip(best["sentence"], best["passage"], strict=True)
    ]
    lexical = pool_bm25(query, [f"{h} {t}" for h, t in zip(heads, texts, strict=True)])
    ranks = bm25_ranks or [None] * len(texts)
    log_ranks = [None if r is None else -math.log(r) for r in ranks]
    passage_weight = w.passage if with_sentences else w.passage + w.sentence
    parts = (
        (w.lexical, _z(lexical)),
        (passage_weight, _z(best["passage"])),
        (w.sentence if with_sentences else 0.0, _z(best["sentence"])),
        (w.bm25_rank, _z(log_ranks)),
    )
    return [sum(weight * zs[i] for weight, zs in parts) for i in range(len(texts))]


@dataclass
class Ranked:
    order: list[int]  # indices into the input, best first
    scores: list[float]  # score of each input item (same order as the input)
    method: str


@dataclass
class Reranker:
    """Orders passages against a goal: configured cross-encoder, else the named fallback."""

    settings: RetrievalSettings = field(default_factory=RetrievalSettings)
    embedder: TextEmbedder | None = None
    weights: FusionWeights = field(default_factory=FusionWeights)
    _ce_error: str = field(default="", init=False, repr=False)

    @property
    def method(self) -> str:
        """The method `rank` will use (what `doctor` shows)."""
        name = self.settings.rerank_model
        if name:
            try:
                load_cross_encoder(name)
                return f"cross-encoder:{name}"
            except Exception as e:
                self._ce_error = _short(e)
        if self.embedder is None:
            return RETRIEVAL_ORDER
        suffix = (
            f" (cross-encoder unavailable: {self._ce_error})" if name and self._ce_error else ""
        )
        return FALLBACK_METHOD + suffix

    def rank(
        self,
        query: str,
        texts: Sequence[str],
        prior_ranks: Sequence[int] | None = None,
        heads: Sequence[str] | None = None,
        bm25_ranks: Sequence[int | None] | None = None,
        stored: Sequence[float | None] | None = None,
    ) -> Ranked:
        """Order `texts` against `query`; `prior_ranks` (retrieval order) breaks ties and is
        the order kept when reranking fails; `stored`: each text's best stored-window cosine
        (the fallback then embeds nothing it holds)."""
        prior = list(prior_ranks) if prior_ranks is not None else list(range(1, len(texts) + 1))
        method = self.method
        try:
            if method.startswith("cross-encoder:"):
                assert self.settings.rerank_model is not None
                model = load_cross_encoder(self.settings.rerank_model)
                pairs = [
                    (query, f"{h}\n{t}" if h else t)
                    for t, h in zip(texts, heads or [""] * len(texts), strict=True)
                ]
                raw: Any = model.predict(pairs, show_progress_bar=False) if pairs else []
                scores = [float(x) for x in raw]
            elif method.startswith(FALLBACK_METHOD):
                assert self.embedder is not None
                scores = fallback_scores(
                    query,
                    texts,
                    self.embedder.embed,
                    heads=heads,
                    bm25_ranks=bm25_ranks,
                    weights=self.weights,
                    stored=stored,
                )
            else:
                scores = [-float(r) for r in prior]
            if any(math.isnan(s) for s in scores):
                raise ValueError("reranker returned NaN")
        except Exception as e:
            log.warning("rerank failed, keeping retrieval order: %s", e)
            scores = [-float(r) for r in prior]
            method = f"{RETRIEVAL_ORDER} (rerank failed: {_short(e)})"
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], prior[i], i))
        return Ranked(order=order, scores=scores, method=method)


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:160]


# --------------------------------------------------------------------------- evidence


def _prior_ranks(items: Sequence[Evidence]) -> list[int]:
    """Retrieval rank of each passage: deliberate reads first, then by rank within their call."""
    keyed = sorted(
        range(len(items)),
        key=lambda i: (0 if items[i].tool == "read_document" else 1, items[i].rank or 0, i),
    )
    out = [0] * len(items)
    for pos, i in enumerate(keyed, 1):
        out[i] = pos
    return out


def trim_to_words(items: Sequence[Evidence], word_ceiling: int) -> list[Evidence]:
    """Keep passages in order while they fit; cut the first one that does not (at a paragraph
    or word boundary) when it is the only one, so there is always some evidence."""
    out: list[Evidence] = []
    total = 0
    for e in items:
        if total + e.words <= word_ceiling:
            out.append(e)
            total += e.words
            continue
        room = word_ceiling - total
        if room >= 100 or not out:
            words = e.text.split()
            cut = " ".join(words[: max(room, 1)]) + " …"
            out.append(e.model_copy(update={"text": cut, "words": max(room, 1)}))
        break
    return out


def rerank_evidence(
    goal: str,
    items: Sequence[Evidence],
    reranker: Reranker,
    *,
    max_chunks: int,
    word_ceiling: int,
    vectors: PassageVectors | None = None,
) -> list[Evidence]:
    """Filter, order against the goal, cap and trim; each item records the method used.
    `vectors`: the run's stored passage vectors (the fallback's cosines come from them)."""
    pool = filter_substantive(items)
    if not pool:
        return []
    prior = _prior_ranks(pool)
    heads = [" — ".join(p for p in (e.title, e.section) if p) for e in pool]
    bm25 = [e.ranks.get("bm25") for e in pool]
    stored = None
    if vectors is not None and reranker.method.startswith(FALLBACK_METHOD):
        try:
            stored = vectors.similarity(goal, pool)
        except Exception as e:  # no stored vectors to reuse: the fallback embeds as before
            log.warning("stored passage vectors unavailable: %s", _short(e))
    ranked = reranker.rank(goal, [e.text for e in pool], prior, heads, bm25, stored)
    ordered = [
        pool[i].model_copy(
            update={"rerank_method": ranked.method, "rerank_score": round(ranked.scores[i], 6)}
        )
        for i in ranked.order
    ]
    return trim_to_words(ordered[:max_chunks], word_ceiling)


def rerank_state(
    state: RunState, reranker: Reranker, vectors: PassageVectors | None = None
) -> list[Evidence]:
    """The evidence of a run as the synthesizer gets it (uses the run's own ceilings)."""
    return rerank_evidence(
        state.goal,
        state.evidence,
        reranker,
        max_chunks=state.max_rerank_chunks,
        word_ceiling=state.word_ceiling,
        vectors=vectors,
    )


def describe(reranker: Reranker) -> dict[str, Any]:
    """For `doctor`: which method reranking uses on this machine."""
    return {"rerank_method": reranker.method, "rerank_model": reranker.settings.rerank_model}
