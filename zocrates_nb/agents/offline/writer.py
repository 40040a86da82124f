"""The offline synthesizer: an extractive writer. It answers with the evidence sentences that
best answer the question (embedding similarity + lexical overlap, MMR for diversity), grouped by
paper and cited `[n]`, or says plainly that the library holds no evidence."""

from __future__ import annotations

import dataclasses
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.messages import sections_of, text_response, user_prompts
from zocrates_nb.agents.offline.search import aspect, bare_heading
from zocrates_nb.agents.parts import PARTS_HEADING, Part, parse_parts
from zocrates_nb.text import (
    STOPWORDS,
    TermStats,
    clean_passage,
    entities,
    mentions,
    split_sentences,
    strip_reference_markers,
    terms,
)

NO_LM_NOTE = (
    "_Answered by the embedded offline engine, without a language model: the sentences above "
    "are quoted from your papers, not paraphrased. Configure a model for written answers._"
)
# Calibrated on the development questions (scripts/eval_answers.py): the best evidence sentence
# of an answerable question scores well above this; off-topic questions stay below it.
RELEVANCE_FLOOR = 0.45
HARD_FLOOR = 0.30
MAX_ANSWER_SENTENCES = 8
MAX_ANSWER_WORDS = 230


@dataclass
class EvidenceChunk:
    index: int
    title: str
    authors: str
    year: str
    section: str
    text: str


_QUANTITY_RE = re.compile(
    r"\bhow (many|much|long|large|big|small|often|fast|deep|wide)\b|"
    r"\b(rate|percentage|percent|proportion|fraction|ratio|size|number|amount|count|value|"
    r"dimension(ality)?|threshold|length|duration|depth|width)s?\b",
    re.I,
)
# A number that states something: not a year, nor a pointer to a section, figure or table.
_QUANTITY_IN_TEXT_RE = re.compile(r"(?<![\w.])(?!(?:1[89]|20)\d\d[a-z]?\b)\d[\d,.]*(\s?%|\b)", re.I)
_POINTER_RE = re.compile(
    r"\b(section|sec\.|table|figure|fig\.|eq\.|equation|appendix|§)\s*[A-Z]?\d[\d.]*", re.I
)


def states_quantity(sentence: str) -> bool:
    return bool(_QUANTITY_IN_TEXT_RE.search(_POINTER_RE.sub(" ", sentence)))


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


def _text_of(el: ET.Element) -> str:
    parts = [el.text or ""]
    for child in el:
        if child.tag != "table_csv":
            parts.append(_text_of(child))
        parts.append(child.tail or "")
    return "".join(parts)


def parse_evidence(prompt: str) -> list[EvidenceChunk]:
    m = re.search(r"<retrieved_evidence>.*?</retrieved_evidence>", prompt, re.S)
    if not m:
        return []
    try:
        root = ET.fromstring(m.group(0))
    except ET.ParseError:
        return []
    out = []
    for el in root.iter("chunk"):
        text_parts = [_text_of(el)]
        out.append(
            EvidenceChunk(
                index=int(el.get("index", "0") or 0),
                title=el.get("title", ""),
                authors=el.get("authors", ""),
                year=el.get("year", ""),
                section=el.get("section", ""),
                text="".join(text_parts).strip(),
            )
        )
    return out


@dataclass
class Candidate:
    chunk: EvidenceChunk
    order: int  # position of the sentence within its chunk
    text: str
    score: float = 0.0
    paragraph: int = 0  # paragraph of the chunk the sentence is in
    heading: float = 0.0  # how well its section's heading names the question's aspect


class OfflineSynthesizer:
    """The synthesizer's `FunctionModel` function: the answer to the prompt's question, quoted."""

    def __init__(
        self, emb: SentenceEmbeddings, lexicon: Callable[[str], bool] | None = None
    ) -> None:
        self.emb = emb
        # Whether a word occurs anywhere in the library: a question whose subject the library
        # never mentions ("tungsten", "Kademlia") has no evidence, however close a sentence looks.
        self.lexicon = lexicon

    def unknown_words(self, question: str) -> tuple[list[str], int]:
        """Content words of the question that the library never uses, and how many there are."""
        ws = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", question)]
        ws = list(dict.fromkeys(w for w in ws if len(w) >= 3 and w not in STOPWORDS))
        if self.lexicon is None:
            return [], len(ws)
        return [w for w in ws if not self.lexicon(w)], len(ws)

    def off_topic(self, question: str, top: float, missing: list[str], named: list[str]) -> bool:
        """The calibrated decision that the library holds no evidence on the question."""
        if top < HARD_FLOOR:
            return True
        if named and len(missing) * 2 > len(named):
            return True
        # A name the library never uses ("Amazon Aurora", "RoBERTa") is what the question is
        # about: passages that share its other words ("Amazon", "quorum") do not answer it.
        if self.lexicon is not None and any(
            not self.lexicon(w.lower()) for e in missing for w in re.findall(r"[A-Za-z]+", e)
        ):
            return True
        unknown, n = self.unknown_words(question)
        share = len(unknown) / n if n else 0.0
        if share >= 0.3:
            return True
        return share >= 0.15 and top < RELEVANCE_FLOOR

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = user_prompts(messages)
        prompt = prompts[-1] if prompts else ""
        return text_response(self.answer(prompt))

    def candidates(self, chunks: Sequence[EvidenceChunk]) -> list[Candidate]:
        """Quotable sentences of the evidence, with their paragraph and position."""
        out: list[Candidate] = []
        seen: set[str] = set()
        for ch in chunks:
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

    def score(self, question: str, cands: list[Candidate]) -> None:
        if not cands:
            return
        dense = self.emb.similarity(question, [c.text for c in cands])
        doc_terms = [terms(c.text) for c in cands]
        stats = TermStats(doc_terms)
        q_terms = terms(question)
        n_chunks = max(c.chunk.index for c in cands)
        # "How many…", "what rate…": the sentence that states a number is the answer; a
        # sentence that only talks about the topic is not.
        wants_number = bool(_QUANTITY_RE.search(question))
        # A section whose heading names the question's aspect ("Leader election" for "how does
        # Raft elect a leader?") is where the answer is stated; its sentences come first.
        heads = sorted({c.chunk.section for c in cands if c.chunk.section})
        sims = self.emb.similarity(aspect(question), [bare_heading(h) for h in heads])
        fit = dict(zip(heads, sims, strict=True))
        for c, d, t in zip(cands, dense, doc_terms, strict=True):
            lex = stats.overlap(q_terms, t)
            prior = 0.03 * (1 - (c.chunk.index - 1) / max(n_chunks, 1))
            states = 0.05 if wants_number and states_quantity(c.text) else 0.0
            heading = 0.3 * max(float(fit.get(c.chunk.section, 0.0)) - 0.45, 0.0)
            c.heading = heading
            c.score = 0.72 * float(d) + 0.28 * lex + prior + states + heading

    def units(self, question: str, cands: list[Candidate]) -> list[tuple[list[Candidate], float]]:
        """Answer units: single sentences, and passages of up to four consecutive sentences of
        one paragraph. An answer often spans a few sentences ("… is deleted. However, it is only
        renamed … for three days …"), and a passage's embedding sees what each sentence alone
        does not."""
        if not cands:
            return []
        top = max(c.score for c in cands)
        units: list[tuple[list[Candidate], float]] = [([c], c.score) for c in cands]
        groups: dict[tuple[int, int], list[Candidate]] = {}
        for c in cands:
            groups.setdefault((c.chunk.index, c.paragraph), []).append(c)
        runs: list[list[Candidate]] = []
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
                    runs.append(run)
                start += max(len(run) - 1, 1)  # overlap by one sentence
        if runs:
            texts = [" ".join(c.text for c in run) for run in runs]
            dense = self.emb.similarity(question, texts)
            stats = TermStats([terms(c.text) for c in cands])
            q_terms = terms(question)
            for run, d, t in zip(runs, dense, texts, strict=True):
                lex = stats.overlap(q_terms, terms(t))
                best = max(c.score for c in run)
                score = 0.55 * float(d) + 0.2 * lex + 0.25 * best - 0.015 * (len(run) - 1)
                score += 0.75 * run[0].heading
                units.append((run, score))
        return units

    def select(
        self,
        question: str,
        cands: list[Candidate],
        max_sentences: int = MAX_ANSWER_SENTENCES,
        max_words: int = MAX_ANSWER_WORDS,
    ) -> list[tuple[list[Candidate], float]]:
        """Greedy MMR over answer units (no sentence twice), at most `max_sentences`
        sentences, making room for a second paper when it is nearly as relevant."""
        units = self.units(question, cands)
        if not units:
            return []
        top = max(u[1] for u in units)
        pool = [u for u in units if u[1] >= max(HARD_FLOOR, 0.62 * top)]
        pool.sort(key=lambda u: u[1], reverse=True)
        pool = pool[:60]
        vecs = self.emb.embed([" ".join(c.text for c in u[0]) for u in pool])
        chosen: list[int] = []
        used: set[int] = set()
        n_sent = 0
        lam = 0.75
        words = 0
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
                v = lam * score - (1 - lam) * red
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
                # The sentence's own passage, when nearly as relevant, says it with its context.
                wider = [
                    j
                    for j, (r, sc) in enumerate(pool)
                    if len(r) > 1
                    and run[0] in r
                    and sc >= 0.85 * pool[best_i][1]
                    and j not in chosen
                    and not any(id(c) in used for c in r)
                    and n_sent + len(r) <= max_sentences + 1
                ]
                if wider:
                    best_i = max(wider, key=lambda j: pool[j][1])
            chosen.append(best_i)
            used.update(id(c) for c in pool[best_i][0])
            n_sent += len(pool[best_i][0])
            words += sum(len(c.text.split()) for c in pool[best_i][0])
        picked = [pool[i] for i in chosen]
        floor = [u for u in units if u[1] >= HARD_FLOOR]
        return picked + self.cover_entities(question, floor, picked, used)

    def cover_entities(
        self,
        question: str,
        pool: list[tuple[list[Candidate], float]],
        picked: list[tuple[list[Candidate], float]],
        used: set[int],
    ) -> list[tuple[list[Candidate], float]]:
        """For a question naming several things ("Dynamo and Spanner"), the best passage about
        each named thing the answer does not cover yet, when the evidence has one."""
        extra: list[tuple[list[Candidate], float]] = []
        ents = entities(question.split("(Follow-up", 1)[0])
        if len(ents) < 2:
            return extra

        def covers(units: list[tuple[list[Candidate], float]], ent: str) -> bool:
            return any(
                mentions(u[0][0].chunk.title + " " + " ".join(c.text for c in u[0]), ent)
                for u in units
            )

        for ent in ents:
            if covers(picked + extra, ent):
                continue
            about = [
                u
                for u in pool
                if not any(id(c) in used for c in u[0])
                and (mentions(u[0][0].chunk.title, ent) or any(mentions(c.text, ent) for c in u[0]))
            ]
            if about:
                best = max(about, key=lambda u: u[1])
                extra.append(best)
                used.update(id(c) for c in best[0])
        return extra

    def answer(self, prompt: str) -> str:
        secs = sections_of(prompt)
        question = secs.get("Search Goal") or secs.get("User Query") or prompt[:500]
        user_query = secs.get("User Query", question)
        gaps = (
            re.findall(r"^- (.+)$", secs.get("Search Report", "").split("Gaps:", 1)[-1], re.M)
            if "Gaps:" in secs.get("Search Report", "")
            else []
        )
        chunks = parse_evidence(prompt)
        parts = parse_parts(secs.get(PARTS_HEADING, ""))
        if len(parts) >= 2:
            return self.answer_parts(question, parts, chunks, gaps)
        cands = self.candidates(chunks)
        self.score(question, cands)
        everything = " ".join(f"{c.title} {c.section} {c.text}" for c in chunks)
        ents = entities(user_query + " " + question.split("(Follow-up", 1)[0])
        missing = [e for e in ents if not mentions(everything, e)]
        top = max((c.score for c in cands), default=0.0)
        if not cands or self.off_topic(question.split("(Follow-up", 1)[0], top, missing, ents):
            about = f" (nothing in it mentions {', '.join(missing)})" if missing else ""
            return (
                "The library holds no evidence on this question: none of the passages found "
                f"addresses it{about}, so there is nothing I can cite.\n\n"
                "_Answered by the embedded offline engine, without a language model._"
            )
        picked = self.select(question, cands)
        lines = ["What the papers in your library say, in their own words:", ""]
        lines += self.quote_groups(picked)
        if missing:
            lines.append(f"The evidence does not mention: {', '.join(missing)}.")
            lines.append("")
        real_gaps = [g for g in gaps if not g.startswith("passages not yet")]
        if real_gaps:
            lines.append("Not covered by the evidence gathered: " + "; ".join(real_gaps) + ".")
            lines.append("")
        lines.append(NO_LM_NOTE)
        return "\n".join(lines)

    def answer_parts(
        self, question: str, parts: Sequence[Part], chunks: list[EvidenceChunk], gaps: list[str]
    ) -> str:
        """A compound question: a short quoted paragraph per part that has evidence (from the
        passages about that part), and the parts without evidence named at the end."""
        cands = self.candidates(chunks)
        lines = ["What the papers in your library say about each part, in their own words:", ""]
        uncovered: list[str] = []
        used: set[str] = set()
        for i, part in enumerate(parts, 1):
            mine = [c for c in cands if c.chunk.title in part.titles] if part.titles else []
            mine = [dataclasses.replace(c) for c in (mine or cands)]
            self.score(part.text, mine)
            text = " ".join(f"{c.chunk.title} {c.chunk.section} {c.text}" for c in mine)
            named = entities(part.subject or part.text)
            missing = [e for e in named if not mentions(text, e)]
            top = max((c.score for c in mine), default=0.0)
            if not mine or self.off_topic(part.text, top, missing, named):
                uncovered.append(part.text)
                continue
            mine = [c for c in mine if c.text not in used]
            picked = self.select(part.text, mine, max_sentences=3, max_words=110)
            used.update(c.text for run, _ in picked for c in run)
            lines.append(f"**{i}. {part.text}**")
            lines += self.quote_groups(picked)
        if len(uncovered) == len(parts):
            return self.no_evidence(question, [])
        if uncovered:
            lines.append("Not covered by the library: " + "; ".join(uncovered))
            lines.append("")
        real_gaps = [
            g for g in gaps
            if not g.startswith(("passages not yet", "nothing found about:", "no passage"))
        ]  # fmt: skip
        if real_gaps:
            lines.append("Not covered by the evidence gathered: " + "; ".join(real_gaps) + ".")
            lines.append("")
        lines.append(NO_LM_NOTE)
        return "\n".join(lines)

    @staticmethod
    def no_evidence(question: str, missing: list[str]) -> str:
        about = f" (nothing in it mentions {', '.join(missing)})" if missing else ""
        return (
            "The library holds no evidence on this question: none of the passages found "
            f"addresses it{about}, so there is nothing I can cite.\n\n"
            "_Answered by the embedded offline engine, without a language model._"
        )

    @staticmethod
    def quote_groups(picked: list[tuple[list[Candidate], float]]) -> list[str]:
        """Quotes grouped by paper (papers in order of their best passage), in reading order,
        each a bullet with its citation."""
        lines: list[str] = []
        groups: dict[str, list[tuple[list[Candidate], float]]] = {}
        for run, score in sorted(picked, key=lambda u: u[1], reverse=True):
            groups.setdefault(run[0].chunk.title, []).append((run, score))
        for title, runs in groups.items():
            ch = runs[0][0][0].chunk
            who = ", ".join(x for x in (ch.authors, ch.year if ch.year != "n.d." else "") if x)
            lines.append(f"**{title}**" + (f" ({who})" if who else ""))
            # The passages that state the answer first (best first), not in reading order.
            for run, _ in runs:
                sents = []
                for c in run:
                    # Quoted paper text is text: a stray backtick must not open a code span.
                    t = c.text.rstrip().replace("`", "\\`")
                    sents.append(t if t[-1:] in ".!?" else t + ".")
                first = run[0].chunk
                section = f" _(§ {first.section})_" if first.section else ""
                lines.append(f"- {' '.join(sents)} [{first.index}]{section}")
            lines.append("")
        return lines


_FILLER_RE = re.compile(
    r"(as follows[.:]?$|^(in|the) (this|next|following|remainder of this) (section|paper)|"
    r"^(table|figure|fig\.)\s*\d+\s*[:.]|\*\*|^this paper is organi[sz]ed)",
    re.I,
)


def is_prose(sentence: str) -> bool:
    """A sentence worth quoting: enough words, mostly letters, not a caption stub, a formula,
    a rhetorical question or a signpost ("The paper is organized as follows.")."""
    # A sentence ending in "?" asks, one ending in ":" introduces what follows (a formula, a
    # list) and says nothing quoted alone.
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


_DANGLING_TEXT = """a an the this that these those of to in on for with by and or but as at from
its their our which whose is are was were be"""
_DANGLING = frozenset(_DANGLING_TEXT.split())
