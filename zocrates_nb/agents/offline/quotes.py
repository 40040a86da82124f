"""The offline writer's quotes: which sentences of the evidence answer the question.

Every prose sentence of the evidence is a candidate. The ones worth embedding are found first
without the model: they lie in the windows of their passage whose stored vectors (the index's
own, `retrieval.vectors`) come closest to the question, or share its rarer words. Only those
are embedded (once per process: the vector cache) and scored: meaning (the sentence's own and
its paragraph neighbourhood's), words, the heading of their section, a number when one is asked
for, less for a roadmap, front matter or an abstract. Whole sentences only: captions, figure
labels and sentences cut at a passage's edge are never candidates. The one that answers is
chosen first (MMR over single sentences, at most three per paper), quoted with the sentence it
leans on and the ones after it that bear on the question too.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from zocrates_nb.agents.offline.aspects import aspect, bare_heading
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.notes import (
    OWN_NOTES,
    asks_own_notes,
    is_note_line,
    note_lines,
    unframed,
)
from zocrates_nb.agents.offline.quantity import (
    asks_choice,
    asks_quantity,
    gives_quantity,
    states_choice,
)
from zocrates_nb.agents.offline.sentences import is_prose, is_roadmap
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.retrieval.vectors import PassageVectors
from zocrates_nb.text import (
    TermStats,
    clean_passage,
    defined_acronyms,
    entities,
    is_caption,
    markdown_text,
    mentions,
    shorten,
    split_sentences,
    strip_reference_markers,
    terms,
    with_acronyms,
)

HARD_FLOOR = 0.30
PER_PAPER = 3  # quotes from one paper, unless a further one scores with the best (ADDS)
ADDS = 0.95
CHOICE = 0.06  # a sentence stating the value chosen, when the question asks which was chosen
NUMBER_SHARE = 0.7  # a sentence giving the number asked for leads from this share of the best
CONTEXT = 0.45  # the share of a sentence's closeness that its neighbourhood's makes
# A quote is the chosen sentence in its passage: up to two after it (and the one before when
# it leans on it), while the quote stays short. The sentence scorer alone finds the answering
# sentence among its first three in about half of fresh questions; with its neighbours, in
# about two thirds.
QUOTE_BEFORE = 1
QUOTE_AFTER = 2
QUOTE_WORDS = 90
# Past two quotes, a further one must score this share of the best.
STOP = 0.75
# A sentence next to one already chosen adds little beyond that one's quote: the next quote is
# sought elsewhere (MMR redundancy of at least this).
NEIGHBOUR = 0.6
# Retrieval's order of the passages (dense and lexical over the whole passage, fused) knows
# what a sentence alone does not: the answering sentence is in the first passage in most
# questions. Its weight: PASSAGE_PRIOR / (the passage's rank among those scored).
PASSAGE_PRIOR = 0.1
# The same order at the scale of the sentence: its passage window's stored closeness to the
# question (`Candidate.prior`, above or below the candidates' mean), its share of the question's
# rarer words, and a number when one is asked for. They order; they do not say it answers.
WINDOW_PRIOR = 0.8
LEX_ORDER = 0.3
NUMBER_ORDER = 0.28
# A section whose heading names what is asked ("5.2 Leader election"): its sentences state it.
HEADING_FIT = 0.8
# Words of sentences embedded per question (≈ 60 sentences), and per part of a compound one.
FOCUS_WORDS = 900
PART_FOCUS_WORDS = 450


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
    parent: str = ""  # a child note's: the title of the paper it is a note on

    @property
    def is_note(self) -> bool:
        return self.evidence is not None and self.evidence.chunk_type == "note"

    def source_line(self) -> str:
        """How the quotes' source is named above them: a paper by its title, authors and
        year; a note as the user's own, with the paper it is on."""
        if self.is_note:
            on = f" on *{markdown_text(self.parent)}*" if self.parent else ""
            # Zotero titles a note by its first line: a heading names it (headings are not
            # quoted); a first line of prose is quoted below, and naming it would say it twice.
            untitled = (_loose(self.text).startswith(_loose(self.title)[:40])
                        and not self.text.lstrip().startswith("#"))  # fmt: skip
            name = "" if untitled else f" “{markdown_text(shorten(self.title, 80))}”"
            return f"Your note{name}{on}"
        who = ", ".join(x for x in (self.authors, self.year if self.year != "n.d." else "") if x)
        return f"*{markdown_text(self.title)}*" + (f" ({markdown_text(who)})" if who else "")


def chunks_of(evidence: Sequence[Evidence]) -> list[EvidenceChunk]:
    """The evidence as the writer quotes it, numbered from 1 in the order given."""
    from zocrates_nb.retrieval.evidence import format_authors

    papers = {e.item_key: e.title for e in evidence if e.chunk_type != "note" and e.title}
    out = []
    for i, e in enumerate(evidence, 1):
        text = e.text.strip()
        if e.chunk_type == "figure" and e.caption and e.caption.strip() not in text:
            text = f"{e.caption.strip()}\n{text}".strip()
        out.append(
            EvidenceChunk(i, e.title or "Untitled", format_authors(e.authors),
                          str(e.year) if e.year else "n.d.", e.section, text, e.item_key, e,
                          papers.get(e.item_key, "") if e.chunk_type == "note" else "")
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
    # The part of `score` that orders without saying whether it answers: its passage's
    # retrieval rank, the researcher's own note when their notes are asked for, its closeness
    # to the question without its paper's name.
    lift: float = 0.0

    @property
    def relevance(self) -> float:
        """How closely the sentence itself answers: its score without `lift`, which orders
        sentences but says nothing of whether any of them answers."""
        return self.score - self.lift


ROADMAP_PENALTY = 0.15  # a roadmap sentence (`is_roadmap`) may still be what a note says
# Where a passage sits says how likely its sentences are to be what is asked: front matter
# (affiliations, keywords) and an abstract's summary fill in only when the body is silent.
_KIND_PENALTY = {"frontmatter": 0.06, "abstract": 0.03}
# A sentence that goes on from the one before: it opens with a pointer back ("It first …",
# "However, …") or says "then"/"thus" within its first words ("Rows can then be ordered …").
_ANAPHOR_RE = re.compile(
    r"^(?:it|this|these|they|such|its|their|thus|hence|therefore|then|here|that|instead|"
    r"however|in contrast|nevertheless|otherwise|consequently|as a result)\b|"
    r"^(?:[\w-]+\s+){1,3}(?:then|thus|hence|therefore)\b",
    re.I,
)
_BACK_MATTER_RE = re.compile(r"\b(references|bibliography|acknowledge?ments?)\b", re.I)


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


def quotable(chunks: Sequence[EvidenceChunk]) -> list[Candidate]:
    """Quotable sentences of the evidence, with their paragraph and position; a note's lines
    (`note_lines`)."""
    out: list[Candidate] = []
    seen: set[str] = set()
    for ch in chunks:
        if _BACK_MATTER_RE.search(ch.section):
            continue  # a reference list is not what a paper says
        order = 0
        text = clean_passage(strip_reference_markers(ch.text))
        for para_no, para in enumerate(re.split(r"\n\s*\n", text)):
            if ch.is_note:
                units = note_lines(para)
            elif is_caption(para):
                continue  # a caption, a table, the labels of a figure: not evidence
            else:
                units = [" ".join(s.split()) for s in _attach_short(split_sentences(para))]
            for sent in units:
                order += 1
                key = sent.lower()
                ok = (is_note_line(sent) and not is_roadmap(sent)) if ch.is_note else is_prose(sent)
                if key in seen or not ok:
                    continue
                seen.add(key)
                out.append(Candidate(ch, order, sent, paragraph=para_no))
    return out


Unit = tuple[list[Candidate], float]
Position = tuple[int, int, int]  # a sentence's place: its chunk, paragraph and order


def _at(c: Candidate) -> Position:
    return (c.chunk.index, c.paragraph, c.order)


class QuoteScorer:
    """Candidates, their focus, scores and the chosen quotes of one answer."""

    def __init__(self, emb: SentenceEmbeddings, vectors: PassageVectors | None) -> None:
        self.emb = emb
        self.vectors = vectors
        self.pool: list[Candidate] = []  # every candidate of the evidence (`candidates`)
        self.defined: dict[str, str] = {}  # the acronyms the evidence defines ("DQN")

    # ------------------------------------------------------------------ candidates
    def candidates(self, chunks: Sequence[EvidenceChunk]) -> list[Candidate]:
        """Quotable sentences of the evidence (kept: a quote takes in its sentence's
        neighbours, scored or not)."""
        self.pool = quotable(chunks)
        # Not a paper's own name ("Neural Tangent Kernel (NTK)"): every sentence of it is on that.
        titles = " ".join(re.split(r"[\s-]+", " ".join({ch.title for ch in chunks}).lower()))
        defined = defined_acronyms(" ".join(ch.text for ch in chunks))
        self.defined = {k: v for k, v in defined.items()
                        if v.lower() not in titles and k.lower() not in titles.split()}  # fmt: skip
        return self.pool

    # ------------------------------------------------------------------ focus
    def focus(self, question: str, cands: list[Candidate], words: int) -> list[Candidate]:
        """The candidates worth embedding for `question`, within `words`: those in their
        passage's windows nearest the question (stored vectors), or sharing its rarer words."""
        if not cands:
            return []
        stats = TermStats([terms(c.text) for c in cands])
        q_terms = terms(with_acronyms(question, self.defined))
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
        own_notes = OWN_NOTES if asks_own_notes(question) else 0.0
        for i, c in enumerate(cands):
            ws = windows.get(id(c.chunk), [])
            probe = _loose(c.text)[:80]
            inside = [s for t, s in ws if probe and probe in t]
            c.prior = max(inside) if inside else max((s for _, s in ws), default=0.0) - 0.05
            lex = stats.overlap(q_terms, terms(c.text))
            mine = own_notes if c.chunk.is_note else 0.0
            cheap.append((c.prior + 0.5 * lex + mine - 0.002 * c.chunk.index, i))
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
    def prefetch(self, asks: Sequence[tuple[str, Sequence[Candidate]]],
                 extra: Sequence[str] = ()) -> None:  # fmt: skip
        """Embed in one call everything scoring these (question, candidates) pairs needs: the
        questions, their aspects, the section headings and the sentences. Each call to the
        model costs far more than its texts on a busy CPU; the scoring then reads the cache."""
        texts: list[str] = []
        for question, cands in asks:
            texts += [question, aspect(question)]
            texts += [bare_heading(h) for h in sorted({c.chunk.section for c in cands} - {""})]
            texts += [c.text for c in cands]
        texts += [t for t in extra if t]
        if texts:
            self.emb.embed(list(dict.fromkeys(texts)))

    def score(self, question: str, cands: list[Candidate], unnamed: str = "",
              named: frozenset[str] = frozenset()) -> None:  # fmt: skip
        """Meaning (embedded), words, the section heading, a stated number when asked for.

        `unnamed`: the question without the names of the papers it names (`named`, item keys).
        A paper's sentences need not repeat its name ("Why is ZooKeeper faster at reads…?" is
        answered by "Read throughput is higher … because reads do not use atomic broadcast"):
        theirs are ordered by the closer of the two, while how well they answer (`relevance`)
        stays the question's own measure."""
        if not cands:
            return
        vecs = self.emb.embed([question, *(c.text for c in cands)])
        q = vecs[0]
        for c, v in zip(cands, vecs[1:], strict=True):
            c.vec = v
        dense = _meaning(vecs[1:] @ q, _context(cands, q))
        own_notes = OWN_NOTES if asks_own_notes(question) else 0.0
        notes = np.array([c.chunk.is_note for c in cands])
        if own_notes and notes.any():  # a note answers what is asked, not "in my notes"
            qn = self.emb.embed([unframed(unnamed or question)])[0]
            dense = np.where(notes, np.maximum(dense, _meaning(vecs[1:] @ qn, _context(cands, qn))),
                             dense)  # fmt: skip
        unnamed_lift = np.zeros(len(cands))
        if unnamed and named:
            qb = self.emb.embed([unnamed])[0]
            own = np.array([c.chunk.item_key in named for c in cands])
            closer = np.maximum(_meaning(vecs[1:] @ qb, _context(cands, qb)) - dense, 0.0)
            unnamed_lift = np.where(own, closer, 0.0)
        doc_terms = [terms(c.text) for c in cands]
        stats = TermStats(doc_terms)
        q_terms = terms(with_acronyms(question, self.defined))
        rank = {i: r for r, i in enumerate(sorted({c.chunk.index for c in cands}), 1)}
        wants_number = asks_quantity(question)
        wants_choice = asks_choice(question)
        fit = self.heading_fit(question, [c.chunk.section for c in cands])
        # A note's lines stand alone (`note_lines`): the note's nearest window is each line's.
        note_prior: dict[str, float] = {}
        for c in (c for c in cands if c.chunk.is_note):
            note_prior[c.chunk.item_key] = max(c.prior, note_prior.get(c.chunk.item_key, c.prior))
        window = [note_prior.get(c.chunk.item_key, c.prior) if c.chunk.is_note else c.prior
                  for c in cands]  # fmt: skip
        mean_prior = float(np.mean(window))
        for c, d, t, up, w in zip(cands, dense, doc_terms, unnamed_lift, window, strict=True):
            lex = stats.overlap(q_terms, t)
            mine = own_notes if c.chunk.is_note else 0.0
            gives = wants_number and gives_quantity(question, c.text)
            c.lift = (PASSAGE_PRIOR / rank[c.chunk.index] + mine + 0.72 * float(up)
                      + WINDOW_PRIOR * (w - mean_prior) + LEX_ORDER * lex
                      + (NUMBER_ORDER if gives else 0.0))  # fmt: skip
            states = 0.08 if gives else 0.0
            states += CHOICE if wants_choice and states_choice(c.text) else 0.0
            c.heading = fit.get(c.chunk.section, 0.0)
            bonus = HEADING_FIT * max(c.heading - 0.45, 0.0)
            c.score = (0.72 * float(d) + 0.28 * lex + c.lift + states + bonus
                       - filler(c))  # fmt: skip

    def heading_fit(self, question: str, sections: Sequence[str]) -> dict[str, float]:
        heads = sorted({s for s in sections if s})
        if not heads:
            return {}
        sims = self.emb.similarity(aspect(question), [bare_heading(h) for h in heads])
        return {h: float(s) for h, s in zip(heads, sims, strict=True)}

    # ------------------------------------------------------------------ choice
    def select(self, question: str, cands: list[Candidate], max_sentences: int = 8,
               max_words: int = 230, per_paper: int = PER_PAPER) -> list[Unit]:  # fmt: skip
        """The sentences that answer, best first: greedy MMR over single sentences (the one
        that states the answer leads, not a run around it), at most `per_paper` from one paper
        unless a further one scores with the best, a paper nearly as relevant given a turn.
        Each is quoted in its passage (`in_passage`)."""
        if not cands:
            return []
        top = max(c.score for c in cands)
        pool = [c for c in cands if c.score >= max(HARD_FLOOR, 0.62 * top)]
        pool.sort(key=lambda c: c.score, reverse=True)
        pool = pool[:60]
        at = {_at(c): c for c in (*self.pool, *cands)}
        # A sentence another's quote took in is quoted already: it is not chosen again, and
        # the quotes, not the sentences they carry, are what the limits count.
        used: set[Position] = set()
        picked: list[Unit] = []
        chosen: list[Candidate] = []
        words = 0
        per: dict[str, int] = {}

        def take(c: Candidate) -> None:
            nonlocal words
            run = in_passage(c, at, used)
            picked.append((run, c.score))
            chosen.append(c)
            per[c.chunk.title] = per.get(c.chunk.title, 0) + 1
            words += len(c.text.split())

        # A question asking for a number is answered by the sentence that gives one, when
        # it is anywhere near the best: it leads, before sentences that only name the topic.
        number = next((c for c in pool if asks_quantity(question) and c.score >= NUMBER_SHARE * top
                       and gives_quantity(question, c.text)), None)  # fmt: skip
        if number is not None:
            take(number)
        while len(chosen) < max_sentences and words < max_words:
            best, best_v = None, -1e9
            titles = {c.chunk.title for c in chosen}
            for c in pool:
                if _at(c) in used:
                    continue  # quoted already, in the quote of a sentence chosen before
                if per.get(c.chunk.title, 0) >= per_paper and c.score < ADDS * top:
                    continue  # enough from this paper, unless it answers as well as the best
                red = max((_redundancy(c, o) for o in chosen), default=0.0)
                if red > DISTINCT:  # near-duplicate content adds nothing
                    continue
                v = 0.75 * c.score - 0.25 * red
                if chosen and c.score >= 0.85 * top and c.chunk.title not in titles:
                    v += 0.03  # cross-paper questions: the other paper gets a turn
                if v > best_v:
                    best, best_v = c, v
            if best is None:
                break
            if len(chosen) >= 2 and best.score < STOP * top:
                break  # beyond the core of the answer, only strong material
            take(best)
        floor = [([c], c.score) for c in cands if c.score >= HARD_FLOOR]
        return picked + cover_entities(question, floor, picked, used)

    def quotes(self, question: str, cands: list[Candidate], words: int, **limits: int
               ) -> list[Unit]:  # fmt: skip
        """Focus, score and choose: the quotes that answer `question` from `cands`."""
        mine = [dataclasses.replace(c) for c in self.focus(question, cands, words)]
        self.score(question, mine)
        return self.select(question, mine, **limits)


def _context(cands: Sequence[Candidate], q: np.ndarray) -> list[float]:
    """Each sentence's neighbourhood's closeness to the question: the mean vector of it and
    the sentences beside it in its paragraph. A long question is answered by a paragraph; its
    answering sentence alone may share few of its words."""
    at = {_at(c): c.vec for c in cands}
    out = []
    for c in cands:
        near = [at.get((c.chunk.index, c.paragraph, c.order + k)) for k in (-1, 0, 1)]
        vs = [v for v in near if v is not None]
        m = np.mean(vs, axis=0)
        n = float(np.linalg.norm(m))
        out.append(float(m @ q) / n if n > 0 else 0.0)
    return out


def _meaning(own: np.ndarray, context: Sequence[float]) -> np.ndarray:
    """A sentence's closeness: its own, with its neighbourhood's (`CONTEXT`)."""
    return (1 - CONTEXT) * own + CONTEXT * np.asarray(context, dtype=own.dtype)


def _cos(a: np.ndarray | None, b: np.ndarray | None) -> float:
    return float(a @ b) if a is not None and b is not None else 0.0


_NUMBER_RE = re.compile(r"\d+(?:\.\d+)?")
DISTINCT = 0.9  # the most two sentences giving different figures can repeat each other


def _redundancy(c: Candidate, chosen: Candidate) -> float:
    """How much of `c` a chosen sentence's quote already says: their closeness, and at least
    NEIGHBOUR when `c` stands next to it in its paragraph (a quote carries its neighbours)."""
    red = _cos(c.vec, chosen.vec)
    a, b = _NUMBER_RE.findall(c.text), _NUMBER_RE.findall(chosen.text)
    if a and b and set(a) != set(b):  # two rows of a table, two settings: each its own figure
        red = min(red, DISTINCT)
    near = (c.chunk.index == chosen.chunk.index and c.paragraph == chosen.paragraph
            and abs(c.order - chosen.order) <= QUOTE_AFTER + 1)  # fmt: skip
    return max(red, NEIGHBOUR) if near else red


def filler(c: Candidate) -> float:
    """How much less a sentence is evidence for where it stands and what it does: a roadmap
    or pointer, front matter, an abstract's summary."""
    kind = c.chunk.evidence.chunk_type if c.chunk.evidence is not None else ""
    return (ROADMAP_PENALTY if is_roadmap(c.text) else 0.0) + _KIND_PENALTY.get(kind, 0.0)


def in_passage(c: Candidate, at: dict[Position, Candidate], used: set[Position]
               ) -> list[Candidate]:  # fmt: skip
    """The sentence as quoted: first (the answer leads), with up to two after it in its
    paragraph and, when it leans on the one before ("It first picks …", "This ensures …"),
    that one before it; whole sentences not quoted elsewhere, no roadmap, while the quote
    stays within QUOTE_WORDS. The answer often sits just after the sentence the scorer
    prefers, the one naming the question's topic ("A straggler … lengthens the job." then
    "… the master schedules backup executions …")."""
    run = [c]
    used.add(_at(c))
    if c.chunk.is_note:  # a note's line, a list item, a table's row: each says its own thing
        return run
    words = len(c.text.split())
    room = {1: QUOTE_AFTER, -1: QUOTE_BEFORE if _ANAPHOR_RE.match(c.text) else 0}
    while any(room.values()):
        for side in (1, -1):  # after, before, after …: the quote grows around its sentence
            if not room[side]:
                continue
            edge = run[-1] if side > 0 else run[0]
            nxt = at.get((c.chunk.index, c.paragraph, edge.order + side))
            if (
                nxt is None
                or _at(nxt) in used
                or is_roadmap(nxt.text)
                or words + len(nxt.text.split()) > QUOTE_WORDS
            ):
                room[side] = 0
                continue
            room[side] -= 1
            words += len(nxt.text.split())
            used.add(_at(nxt))
            run = [*run, nxt] if side > 0 else [nxt, *run]
    return run


def cover_entities(question: str, pool: list[Unit], picked: list[Unit], used: set[Position]
                   ) -> list[Unit]:  # fmt: skip
    """For a question naming several things ("Dynamo and Spanner"), the best passage about
    each named thing the answer does not cover yet, when the evidence has one."""
    extra: list[Unit] = []
    ents = entities(question)
    if len(ents) < 2:
        return extra

    def covers(units: list[Unit], ent: str) -> bool:
        return any(mentions(f"{u[0][0].chunk.title} {' '.join(c.text for c in u[0])}", ent)
                   for u in units)  # fmt: skip

    for ent in ents:
        if covers(picked + extra, ent):
            continue
        about = [
            u for u in pool
            if not any(_at(c) in used for c in u[0])
            and (mentions(u[0][0].chunk.title, ent) or any(mentions(c.text, ent) for c in u[0]))
        ]  # fmt: skip
        if about:
            best = max(about, key=lambda u: u[1])
            extra.append(best)
            used.update(_at(c) for c in best[0])
    return extra


__all__ = ["Candidate", "EvidenceChunk", "QuoteScorer", "Unit", "chunks_of", "filler",
           "in_passage", "quotable"]  # fmt: skip
