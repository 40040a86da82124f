"""The offline writer's quotes: which sentences of the evidence answer the question.

Every prose sentence of the evidence is a candidate. The ones worth embedding are found first
without the model: they lie in the windows of their passage whose stored vectors (the index's
own, `retrieval.vectors`) come closest to the question, or share its rarer words. Only those
are embedded (once per process: the vector cache), scored (meaning, words, the heading of their
section, numbers when a quantity is asked for), grouped into runs of consecutive sentences
(a run's vector is its sentences' mean: never embedded again) and chosen by MMR.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zocrates_nb.agents.offline.aspects import aspect, bare_heading
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.retrieval.vectors import PassageVectors
from zocrates_nb.text import (
    TermStats,
    clean_passage,
    entities,
    mentions,
    split_sentences,
    strip_reference_markers,
    terms,
)

HARD_FLOOR = 0.30
# Words of sentences embedded per question (≈ 60 sentences), and per part of a compound one.
FOCUS_WORDS = 900
PART_FOCUS_WORDS = 450
# A section whose heading comes this close to the question's aspect is where it is answered.
NAMES_ASPECT = 0.55
LEAD_SHARE = 0.7  # its best passage leads the quotes when it scores this share of the best


@dataclass
class EvidenceChunk:
    index: int  # the citation number [n]
    title: str
    authors: str
    year: str
    section: str
    text: str
    item_key: str = ""
    evidence: Evidence | None = None


def chunks_of(evidence: Sequence[Evidence]) -> list[EvidenceChunk]:
    """The evidence as the writer quotes it, numbered from 1 in the order given."""
    from zocrates_nb.retrieval.evidence import format_authors

    out = []
    for i, e in enumerate(evidence, 1):
        text = e.text.strip()
        if e.chunk_type == "figure" and e.caption and e.caption.strip() not in text:
            text = f"{e.caption.strip()}\n{text}".strip()
        out.append(
            EvidenceChunk(i, e.title or "Untitled", format_authors(e.authors),
                          str(e.year) if e.year else "n.d.", e.section, text, e.item_key, e)
        )  # fmt: skip
    return out


@dataclass
class Candidate:
    chunk: EvidenceChunk
    order: int  # position of the sentence within its chunk
    text: str
    paragraph: int = 0  # paragraph of the chunk the sentence is in
    score: float = 0.0
    heading: float = 0.0  # how well its section's heading names the question's aspect
    prior: float = 0.0  # its passage window's stored cosine to the question
    vec: np.ndarray | None = None


_QUANTITY_RE = re.compile(
    r"\bhow (many|much|long|large|big|small|often|fast|deep|wide)\b|"
    r"\b(rate|percentage|percent|proportion|fraction|ratio|size|number|amount|count|value|"
    r"dimension(ality)?|threshold|length|duration|depth|width|gain)s?\b",
    re.I,
)
# A number that states something: not a year, nor a pointer to a section, figure or table.
_QUANTITY_IN_TEXT_RE = re.compile(r"(?<![\w.])(?!(?:1[89]|20)\d\d[a-z]?\b)\d[\d,.]*(\s?%|\b)", re.I)
_POINTER_RE = re.compile(
    r"\b(section|sec\.|table|figure|fig\.|eq\.|equation|appendix|§)\s*[A-Z]?\d[\d.]*", re.I
)
_FILLER_RE = re.compile(
    r"(as follows[.:]?$|^(in|the) (this|next|following|remainder of this) (section|paper)|"
    r"^(table|figure|fig\.)\s*\d+\s*[:.]|\*\*|^this paper is organi[sz]ed)",
    re.I,
)
_DANGLING_TEXT = """a an the this that these those of to in on for with by and or but as at from
its their our which whose is are was were be"""
_DANGLING = frozenset(_DANGLING_TEXT.split())


_BACK_MATTER_RE = re.compile(r"\b(references|bibliography|acknowledge?ments?)\b", re.I)


def states_quantity(sentence: str) -> bool:
    return bool(_QUANTITY_IN_TEXT_RE.search(_POINTER_RE.sub(" ", sentence)))


def is_prose(sentence: str) -> bool:
    """A sentence worth quoting: enough words, mostly letters, not a caption stub, a formula,
    a rhetorical question or a signpost ("The paper is organized as follows.")."""
    if sentence.rstrip().endswith(("?", ":")) or _FILLER_RE.search(sentence.strip()):
        return False
    ws = sentence.split()
    if len(ws) < 6 or len(ws) > 90:
        return False
    letters = sum(c.isalpha() for c in sentence)
    if letters < 0.6 * len(sentence.replace(" ", "")):
        return False
    alpha_words = [w for w in ws if re.fullmatch(r"[A-Za-z][A-Za-z'’-]*[,.;:]?", w)]
    if len(alpha_words) < 0.6 * len(ws):
        return False
    # A sentence cut at a page or column break ends on a function word ("… rare; this.").
    last = ws[-1].rstrip(".!?:;,\"')”’").lower()
    return last not in _DANGLING and not sentence[:1].islower()


def _attach_short(sentences: Sequence[str]) -> list[str]:
    """Short sentences ride with the one before: "We used warmup_steps = 4000." is too short to
    quote alone, yet it is often the fact asked for."""
    out: list[str] = []
    for sent in sentences:
        if out and len(sent.split()) < 6 and re.search(r"[.!]$", sent):
            out[-1] = f"{out[-1]} {sent}"
        else:
            out.append(sent)
    return out


def _loose(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


Unit = tuple[list[Candidate], float]


class QuoteScorer:
    """Candidates, their focus, scores and the chosen quotes of one answer."""

    def __init__(self, emb: SentenceEmbeddings, vectors: PassageVectors | None) -> None:
        self.emb = emb
        self.vectors = vectors

    # ------------------------------------------------------------------ candidates
    @staticmethod
    def candidates(chunks: Sequence[EvidenceChunk]) -> list[Candidate]:
        """Quotable sentences of the evidence, with their paragraph and position."""
        out: list[Candidate] = []
        seen: set[str] = set()
        for ch in chunks:
            if _BACK_MATTER_RE.search(ch.section):
                continue  # a reference list is not what a paper says
            order = 0
            text = clean_passage(strip_reference_markers(ch.text))
            for para_no, para in enumerate(re.split(r"\n\s*\n", text)):
                for sent in _attach_short(split_sentences(para)):
                    sent = re.sub(r"\s+", " ", sent).strip()
                    order += 1
                    key = sent.lower()
                    if key in seen or not is_prose(sent):
                        continue
                    seen.add(key)
                    out.append(Candidate(ch, order, sent, paragraph=para_no))
        return out

    # ------------------------------------------------------------------ focus
    def focus(self, question: str, cands: list[Candidate], words: int) -> list[Candidate]:
        """The candidates worth embedding for `question`, within `words`: those in their
        passage's windows nearest the question (stored vectors), or sharing its rarer words."""
        if not cands:
            return []
        stats = TermStats([terms(c.text) for c in cands])
        q_terms = terms(question)
        windows: dict[int, list[tuple[str, float]]] = {}
        if self.vectors is not None:
            for ch in {id(c.chunk): c.chunk for c in cands}.values():
                if ch.evidence is None:
                    continue
                try:
                    scored = self.vectors.window_scores(question, ch.evidence)
                except Exception:  # no stored vectors: words alone choose
                    scored = []
                windows[id(ch)] = [(_loose(w.text), s) for w, s in scored]
        cheap: list[tuple[float, int]] = []
        for i, c in enumerate(cands):
            ws = windows.get(id(c.chunk), [])
            probe = _loose(c.text)[:80]
            inside = [s for t, s in ws if probe and probe in t]
            c.prior = max(inside) if inside else max((s for _, s in ws), default=0.0) - 0.05
            lex = stats.overlap(q_terms, terms(c.text))
            cheap.append((c.prior + 0.5 * lex - 0.002 * c.chunk.index, i))
        picked: list[Candidate] = []
        total = 0
        for _, i in sorted(cheap, reverse=True):
            n = len(cands[i].text.split())
            if total + n > words and picked:
                continue
            picked.append(cands[i])
            total += n
        return sorted(picked, key=lambda c: (c.chunk.index, c.order))

    # ------------------------------------------------------------------ scoring
    def prefetch(self, asks: Sequence[tuple[str, Sequence[Candidate]]]) -> None:
        """Embed in one call everything scoring these (question, candidates) pairs needs: the
        questions, their aspects, the section headings and the sentences. Each call to the
        model costs far more than its texts on a busy CPU; the scoring then reads the cache."""
        texts: list[str] = []
        for question, cands in asks:
            texts += [question, aspect(question)]
            texts += [bare_heading(h) for h in sorted({c.chunk.section for c in cands} - {""})]
            texts += [c.text for c in cands]
        if texts:
            self.emb.embed(list(dict.fromkeys(texts)))

    def score(self, question: str, cands: list[Candidate]) -> None:
        """Meaning (embedded), words, the section heading, a stated number when asked for."""
        if not cands:
            return
        vecs = self.emb.embed([question, *(c.text for c in cands)])
        q = vecs[0]
        for c, v in zip(cands, vecs[1:], strict=True):
            c.vec = v
        dense = vecs[1:] @ q
        doc_terms = [terms(c.text) for c in cands]
        stats = TermStats(doc_terms)
        q_terms = terms(question)
        n_chunks = max(c.chunk.index for c in cands)
        wants_number = bool(_QUANTITY_RE.search(question))
        fit = self.heading_fit(question, [c.chunk.section for c in cands])
        for c, d, t in zip(cands, dense, doc_terms, strict=True):
            lex = stats.overlap(q_terms, t)
            prior = 0.03 * (1 - (c.chunk.index - 1) / max(n_chunks, 1))
            states = 0.05 if wants_number and states_quantity(c.text) else 0.0
            c.heading = fit.get(c.chunk.section, 0.0)
            bonus = 0.4 * max(c.heading - 0.45, 0.0)
            c.score = 0.72 * float(d) + 0.28 * lex + prior + states + bonus

    def heading_fit(self, question: str, sections: Sequence[str]) -> dict[str, float]:
        heads = sorted({s for s in sections if s})
        if not heads:
            return {}
        sims = self.emb.similarity(aspect(question), [bare_heading(h) for h in heads])
        return {h: float(s) for h, s in zip(heads, sims, strict=True)}

    # ------------------------------------------------------------------ units and choice
    def units(self, question: str, cands: list[Candidate]) -> list[Unit]:
        """Answer units: single sentences, and runs of up to four consecutive sentences of one
        paragraph (an answer often spans a few: "… is deleted. However, it is only renamed …")."""
        if not cands:
            return []
        top = max(c.score for c in cands)
        units: list[Unit] = [([c], c.score) for c in cands]
        groups: dict[tuple[int, int], list[Candidate]] = {}
        for c in cands:
            groups.setdefault((c.chunk.index, c.paragraph), []).append(c)
        stats = TermStats([terms(c.text) for c in cands])
        q_terms = terms(question)
        q = self.emb.embed([question])[0]
        for seq in groups.values():
            seq.sort(key=lambda c: c.order)
            if max(c.score for c in seq) < 0.55 * top:
                continue
            start = 0
            while start < len(seq):
                run: list[Candidate] = []
                words = 0
                for c in seq[start:]:
                    n = len(c.text.split())
                    if run and (len(run) >= 4 or words + n > 110 or c.order - run[-1].order > 1):
                        break
                    run.append(c)
                    words += n
                if len(run) > 1:
                    d = float(_mean([c.vec for c in run]) @ q)
                    lex = stats.overlap(q_terms, terms(" ".join(c.text for c in run)))
                    best = max(c.score for c in run)
                    score = 0.55 * d + 0.2 * lex + 0.25 * best - 0.015 * (len(run) - 1)
                    score += 0.75 * 0.4 * max(run[0].heading - 0.45, 0.0)
                    units.append((run, score))
                start += max(len(run) - 1, 1)  # overlap by one sentence
        return units

    def select(self, question: str, cands: list[Candidate], max_sentences: int = 8,
               max_words: int = 230) -> list[Unit]:  # fmt: skip
        """Greedy MMR over answer units (no sentence twice), at most `max_sentences`
        sentences, making room for a second paper when it is nearly as relevant."""
        units = self.units(question, cands)
        if not units:
            return []
        top = max(u[1] for u in units)
        pool = [u for u in units if u[1] >= max(HARD_FLOOR, 0.62 * top)]
        pool.sort(key=lambda u: u[1], reverse=True)
        pool = pool[:60]
        vecs = [_mean([c.vec for c in u[0]]) for u in pool]
        chosen: list[int] = []
        used: set[int] = set()
        n_sent = words = 0
        # The section whose heading names what is asked states the answer: its best passage
        # leads, when it is anywhere near the best ("§ 2.9 Fail-overs" for a fail-over).
        named = max((u[0][0].heading for u in pool), default=0.0)
        lead = [i for i, u in enumerate(pool)
                if named >= NAMES_ASPECT and u[0][0].heading >= named - 0.02
                and u[1] >= LEAD_SHARE * top]  # fmt: skip
        if lead:
            first = max(lead, key=lambda i: pool[i][1])
            chosen.append(first)
            used.update(id(c) for c in pool[first][0])
            n_sent = len(pool[first][0])
            words = sum(len(c.text.split()) for c in pool[first][0])
        while n_sent < max_sentences and words < max_words:
            best_i, best_v = -1, -1e9
            titles = {pool[j][0][0].chunk.title for j in chosen}
            for i, (run, score) in enumerate(pool):
                if i in chosen or any(id(c) in used for c in run):
                    continue
                if n_sent + len(run) > max_sentences + 1:
                    continue
                red = max((float(vecs[i] @ vecs[j]) for j in chosen), default=0.0)
                if red > 0.9:  # near-duplicate content adds nothing
                    continue
                v = 0.75 * score - 0.25 * red
                if chosen and score >= 0.85 * top and run[0].chunk.title not in titles:
                    v += 0.03  # cross-paper questions: the other paper gets a turn
                if v > best_v:
                    best_i, best_v = i, v
            if best_i < 0:
                break
            if len(chosen) >= 2 and pool[best_i][1] < 0.75 * top:
                break  # beyond the core of the answer, only strong material
            run = pool[best_i][0]
            if len(run) == 1:
                # The sentence's own run, when nearly as relevant, says it with its context.
                wider = [
                    j
                    for j, (r, sc) in enumerate(pool)
                    if len(r) > 1 and run[0] in r and sc >= 0.85 * pool[best_i][1]
                    and j not in chosen and not any(id(c) in used for c in r)
                    and n_sent + len(r) <= max_sentences + 1
                ]  # fmt: skip
                if wider:
                    best_i = max(wider, key=lambda j: pool[j][1])
            chosen.append(best_i)
            used.update(id(c) for c in pool[best_i][0])
            n_sent += len(pool[best_i][0])
            words += sum(len(c.text.split()) for c in pool[best_i][0])
        picked = [pool[i] for i in chosen]
        floor = [u for u in units if u[1] >= HARD_FLOOR]
        return picked + cover_entities(question, floor, picked, used)

    def quotes(self, question: str, cands: list[Candidate], words: int, **limits: int
               ) -> list[Unit]:  # fmt: skip
        """Focus, score and choose: the quotes that answer `question` from `cands`."""
        mine = [dataclasses.replace(c) for c in self.focus(question, cands, words)]
        self.score(question, mine)
        return self.select(question, mine, **limits)


def _mean(vs: Sequence[np.ndarray | None]) -> np.ndarray:
    arr = np.asarray([v for v in vs if v is not None], dtype=np.float32)
    if not len(arr):
        return np.zeros(1, dtype=np.float32)
    m = arr.mean(axis=0)
    n = float(np.linalg.norm(m))
    return m / n if n > 0 else m


def cover_entities(question: str, pool: list[Unit], picked: list[Unit], used: set[int]
                   ) -> list[Unit]:  # fmt: skip
    """For a question naming several things ("Dynamo and Spanner"), the best passage about
    each named thing the answer does not cover yet, when the evidence has one."""
    extra: list[Unit] = []
    ents = entities(question)
    if len(ents) < 2:
        return extra

    def covers(units: list[Unit], ent: str) -> bool:
        return any(
            mentions(u[0][0].chunk.title + " " + " ".join(c.text for c in u[0]), ent)
            for u in units
        )

    for ent in ents:
        if covers(picked + extra, ent):
            continue
        about = [
            u for u in pool
            if not any(id(c) in used for c in u[0])
            and (mentions(u[0][0].chunk.title, ent) or any(mentions(c.text, ent) for c in u[0]))
        ]  # fmt: skip
        if about:
            best = max(about, key=lambda u: u[1])
            extra.append(best)
            used.update(id(c) for c in best[0])
    return extra


__all__ = [
    "Candidate",
    "EvidenceChunk",
    "QuoteScorer",
    "Unit",
    "chunks_of",
    "is_prose",
    "states_quantity",
]
