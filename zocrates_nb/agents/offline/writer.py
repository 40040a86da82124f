"""The offline synthesizer: an extractive writer. It answers from its `WriterBrief` (the
question, the evidence as ranked, the question's parts, the search's gaps) with the evidence
sentences that best answer the question, grouped by paper and cited `[n]`, or says plainly that
the scope holds no evidence.

A question (or a part of one) that names a paper quotes that paper first; another paper's
quotes come after, under a line saying they are from other papers. A part's own heading ("Raft:
electing a new leader") stands as its own paragraph, and within a paper the passage from the
section whose heading names what is asked comes first.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.aspects import drop_name, without_names
from zocrates_nb.agents.offline.brief import WriterBrief, brief_of
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.messages import text_response
from zocrates_nb.agents.offline.notes import asks_own_notes
from zocrates_nb.agents.offline.quantity import asks_quantity, measure
from zocrates_nb.agents.offline.quotes import (
    FOCUS_WORDS,
    HARD_FLOOR,
    PART_FOCUS_WORDS,
    Candidate,
    EvidenceChunk,
    QuoteScorer,
    Unit,
    chunks_of,
)
from zocrates_nb.agents.offline.verdict import (
    APPROACHED_LEAD,
    STATES,
    Verdict,
    never_line,
    not_given,
    verdict,
)
from zocrates_nb.agents.parts import Part, core_goal
from zocrates_nb.retrieval.scope_words import scope_free
from zocrates_nb.text import (
    STOPWORDS,
    entities,
    markdown_quote,
    markdown_text,
    mentions,
)

if TYPE_CHECKING:
    from zocrates_nb.retrieval.lexicon import Lexicon

NO_LM_NOTE = (
    "_Answered by the embedded offline engine, without a language model: the sentences above "
    "are quoted from your papers, not paraphrased. Configure a model for written answers._"
)
# Calibrated on the development questions (scripts/eval_answers.py): the best evidence sentence
# of an answerable question scores well above this; off-topic questions stay below it.
RELEVANCE_FLOOR = 0.45
# When a paper outside a narrower scope answers clearly better, the scope's own best sentence
# must score this to be quoted as the answer (else: "Not in the selected papers").
SCOPE_ANSWERS = 0.6
OTHER_PAPERS = "_From other papers in your library:_"
PAPERS_TOO = "_From the papers themselves:_"  # after the researcher's notes, when those are asked
# A part naming a paper the library holds: its closest sentences are quoted down to this score,
# under PART_APPROACHED when none reaches STATES.
OWN_FLOOR = 0.2
PART_APPROACHED = "_None of its passages states this directly; the closest:_"
_COMPARING_RE = re.compile(
    r"\b(differs?|different(ly)?|difference|compared?|compares|contrasts?|versus|vs\.?|"
    r"unlike|similar(ly)?)\b", re.I)  # fmt: skip
# A name of two or more capitalised words ("Amazon Aurora", "Segregated Witness"), not opening
# the sentence: what the question is about, and it is either in the evidence or not.
_NAME_RE = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][\w-]+(?:\s+[A-Z][\w-]+)+)")


def part_query(part: Part) -> str:
    """What a part asks of its own paper: the thing itself ("how Chubby's fail-over differs"
    is answered by how its fail-over works, not by sentences about differences), without the
    names of the paper its sentences all come from (a title put in for "Smith and Waterman's"
    would outweigh what is asked of it)."""
    query = " ".join(_COMPARING_RE.sub(" ", part.text).split())
    if part.items:
        bare = query
        for title in part.titles:
            bare = bare.replace(f"“{title}”", " ")
        if part.subject:
            bare = drop_name(bare, part.subject)
        if len(re.findall(r"\w+", bare)) >= 3:
            query = " ".join(bare.split())
    return query if len(query.split()) >= 3 else part.text


def asked(brief: WriterBrief) -> str:
    """What the answer answers: the goal's own words (without those pointing at the scope:
    "this paper" is no part of what is asked), or, for a follow-up that says little by itself
    ("Why?"), the goal with the earlier question it builds on."""
    own = scope_free(core_goal(brief.goal) or core_goal(brief.question))
    return brief.follow_up.context(own) if brief.follow_up else own


def named_phrases(question: str) -> list[str]:
    """Multi-word names in a question ("How does Amazon Aurora's storage…" → Amazon Aurora);
    none in a question written in title case, where every word is capitalised."""
    words = re.findall(r"[A-Za-z][\w-]*", question)
    if sum(w[0].isupper() for w in words) > 0.5 * max(len(words), 1):
        return []
    return [m.group(1) for m in _NAME_RE.finditer(question)]


def _flat(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


class OfflineSynthesizer:
    """The synthesizer's `FunctionModel` function: the answer to its brief's question, quoted."""

    def __init__(
        self, emb: SentenceEmbeddings, lexicon: Lexicon | None = None
    ) -> None:
        self.emb = emb
        # Whether a word occurs anywhere in the library: a question whose subject the library
        # never mentions ("tungsten", "Kademlia") has no evidence, however close a sentence looks.
        self.lexicon = lexicon

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return text_response(self.answer(brief_of(WriterBrief)))

    # ------------------------------------------------------------------ deciding
    def unknown_words(self, question: str) -> tuple[list[str], int]:
        """Content words of the question that the library never uses, and how many there are."""
        ws = [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]+", question)]
        ws = list(dict.fromkeys(w for w in ws if len(w) >= 3 and w not in STOPWORDS))
        if self.lexicon is None:
            return [], len(ws)
        return [w for w in ws if not self.lexicon(w)], len(ws)

    def off_topic(self, question: str, top: float, missing: list[str], named: list[str],
                  evidence: str = "", paper: bool = False) -> bool:  # fmt: skip
        """The calibrated decision that the evidence holds nothing on the question. `paper`:
        the question names a paper the evidence holds; one word in lower case the library never
        uses is then its phrasing ("get rid of", "less fussy about"), not a subject it lacks
        (two are: "Lamport's Byzantine generals paper … traitors … oral messages")."""
        if top < HARD_FLOOR:
            return True
        flat = _flat(evidence)
        if evidence and any(_flat(p) not in flat for p in named_phrases(question)):
            return True  # the name it asks about ("Segregated Witness") is not in the evidence
        if named and len(missing) * 2 > len(named):
            return True
        # A name the library never uses ("Amazon Aurora", "RoBERTa") is what the question is
        # about: passages that share its other words ("Amazon", "quorum") do not answer it.
        if self.lexicon is not None and any(
            not self.lexicon(w.lower()) for e in missing for w in re.findall(r"[A-Za-z]+", e)
        ):
            return True
        unknown, n = self.unknown_words(question)
        lower = [w for w in unknown if re.search(rf"\b{w}\b", question)]
        if paper and len(lower) == 1:  # one odd word is phrasing; several, another subject
            unknown = [w for w in unknown if w not in lower]
        share = len(unknown) / n if n else 0.0
        if share >= 0.3:
            return True
        return share >= 0.15 and top < RELEVANCE_FLOOR and not paper

    # ------------------------------------------------------------------ answering
    def answer(self, brief: WriterBrief) -> str:
        chunks = chunks_of(brief.evidence)
        fu = brief.follow_up
        if fu is not None and fu.not_papers:  # "no, the other paper": never the one refused
            chunks = [c for c in chunks if c.title not in fu.not_papers] or chunks
        scorer = QuoteScorer(self.emb, brief.vectors)
        question = asked(brief)
        if len(brief.parts) >= 2:
            return self.answer_parts(brief, scorer, chunks)
        cands = scorer.candidates(chunks)
        mine = scorer.focus(question, cands, FOCUS_WORDS)
        unnamed = without_names(question, brief.known_names)
        scorer.prefetch([(question, mine)], extra=[unnamed])
        scorer.score(question, mine, unnamed, frozenset(brief.named))
        everything = " ".join(f"{c.title} {c.section} {c.text}" for c in chunks)
        # A name the library knows stands for its paper, which need not repeat it ("Ghemawat").
        # A correction's own words name what is not meant ("BLAST, not BLAT"): the goal says
        # what is asked.
        said = "" if fu is not None and fu.correction else scope_free(core_goal(brief.question))
        ents = [e for e in entities(f"{said} {question}")  # "Birney" of "Zerbino and Birney"
                if not any(mentions(k, e) for k in brief.known_names)]  # fmt: skip
        missing = [e for e in ents if not mentions(everything, e)]
        top = max((c.relevance for c in mine), default=0.0)
        plain = re.sub("|".join(rf"\b{re.escape(n)}\b" for n in brief.known_names) or "^$", " ",
                       question)  # fmt: skip
        named = self.named_items(brief, chunks)
        # A question naming a paper asks what that paper says: another paper's figure is not
        # its answer ("What ImageNet accuracy does the Transformer reach?").
        own = [c for c in mine if c.chunk.item_key in named] if named else mine
        own += [c for c in own_notes(question, mine, named) if all(c is not o for o in own)]
        # What a paper the question names never mentions is said by name ("… never mentions
        # “SQuAD”"), before the evidence is judged off the topic: that is why it is.
        unsaid = self.unsaid(ents, named, measure(question)) if own else []
        if not unsaid and (
            not mine
            or self.off_topic(plain, top, missing, ents, everything, paper=bool(named))
            or (brief.elsewhere and top < SCOPE_ANSWERS)
        ):
            return self.no_evidence(brief, missing)
        judged = Verdict.NOT_GIVEN if unsaid else verdict(question, own or mine, named=bool(own))
        if judged is Verdict.NOT_GIVEN:
            closest = sorted(own or mine, key=lambda c: -c.score)[:2]
            body = not_given(brief.question or question, closest, brief.scope_label,
                             never=never_line(unsaid, own))  # fmt: skip
            near = self.outside(brief)
            return "\n".join([*body, *([near.strip(), ""] if near else []), NO_LM_NOTE])
        lead = ("What the papers in your library say, in their own words:"
                if judged is Verdict.STATED else APPROACHED_LEAD)  # fmt: skip
        lines = [*follow_up_lines(brief), lead, ""]
        lines += self.attributed(scorer, question, mine, named, max_sentences=5, max_words=200)
        if missing:
            lines += [f"The evidence does not mention: {', '.join(missing)}.", ""]
        # Whether the passages answer is the writer's verdict, said above the quotes: the
        # planner's rougher "no passage … closely matches" would contradict or repeat it.
        real_gaps = [g for g in brief.gaps if not g.startswith(("passages not yet", "no passage"))]
        if real_gaps:
            lines += [gaps_line(real_gaps), ""]
        if judged is Verdict.APPROACHED and (near := self.outside(brief)):
            lines += [f"That is the closest {brief.scope_label} comes.{near}", ""]
        lines.append(NO_LM_NOTE)
        return "\n".join(lines)

    def unsaid(self, ents: Sequence[str], named: Sequence[str], measured: Sequence[str] = ()
               ) -> list[str]:  # fmt: skip
        """The named things of the question that the papers it names never mention, anywhere
        in their text: "Omniglot" of "What accuracy does MoCo reach on Omniglot?", and what a
        number asked of them measures (`measured`: "percentile", "lines of code"). What those
        papers say about something else is not its answer (another paper's figure, a near
        topic), however close it reads."""
        if self.lexicon is None or not named:
            return []
        lexicon = self.lexicon

        def never(ent: str, key: str) -> bool:
            ws = [w for w in re.findall(r"[A-Za-z]{3,}", ent) if w.lower() not in STOPWORDS]
            return bool(ws) and not all(lexicon(w.lower(), within=key) for w in ws)

        # A measure is looked up as written: "lines of code" is a phrase, not its words.
        absent = [m for m in measured if not any(lexicon(m, within=k) for k in named)]
        return [e for e in ents if all(never(e, k) for k in named)] + absent

    @staticmethod
    def named_items(brief: WriterBrief, chunks: Sequence[EvidenceChunk]) -> list[str]:
        """The papers the question names (by their titles' names), among those with evidence."""
        have = {c.item_key for c in chunks}
        return [k for k in brief.named if k in have]

    def attributed(
        self,
        scorer: QuoteScorer,
        question: str,
        cands: list[Candidate],
        named: Sequence[str],
        **limits: int,
    ) -> list[str]:
        """Quotes, the named papers' first (the researcher's notes on them, when what they
        wrote is asked: a paper cannot say what they said of it); another's only under a line
        saying so."""
        on_named = [c for c in cands if not named or c.chunk.item_key in named]
        notes = own_notes(question, cands, named)
        if not named and not notes:
            return quote_groups(scorer.select(question, cands, **limits))
        own = notes or on_named
        first = {id(c) for c in own}
        rest = [c for c in cands if id(c) not in first]
        picked = scorer.select(question, own, **limits) if own else []
        lines = quote_groups(picked)
        best_own = max((u[1] for u in picked), default=0.0)
        if rest:
            extra = scorer.select(question, rest, max_sentences=2, max_words=80)
            # Another paper earns a place when the named one says little (or nothing) on it.
            extra = [u for u in extra if u[1] >= max(HARD_FLOOR, best_own - 0.05)][:1]
            if extra:
                lines += [PAPERS_TOO if notes else OTHER_PAPERS, "", *quote_groups(extra)]
        return lines

    def answer_parts(
        self, brief: WriterBrief, scorer: QuoteScorer, chunks: list[EvidenceChunk]
    ) -> str:
        """A compound question: a short quoted paragraph per part that has evidence (from the
        paper the part names), and the parts without evidence named at the end."""
        cands = scorer.candidates(chunks)
        # Every part's sentences embedded in one call (the parts below read them from the cache).
        scorer.prefetch([
            (q, scorer.focus(q, self.part_pool(part, cands), PART_FOCUS_WORDS))
            for part in brief.parts for q in [part_query(part)]
        ])  # fmt: skip
        lines = [
            *follow_up_lines(brief),
            "What the papers in your library say about each part, in their own words:",
            "",
        ]
        uncovered: list[Part] = []
        used: set[str] = set()
        cited = False
        for part in brief.parts:
            head = part.heading or part.text
            pool = [c for c in cands if c.text not in used]
            body, quoted = self.part_quotes(scorer, part, pool, bool(brief.elsewhere))
            if not body:
                uncovered.append(part)
                continue
            used |= quoted
            cited = cited or bool(quoted)
            lines += [f"**{head}**", "", *body]
        if len(uncovered) == len(brief.parts):
            closest = self.closest_own(scorer, uncovered, cands)
            if not closest:
                return self.no_evidence(brief, [])
            # The papers the parts name are in the evidence: the library bears on the question,
            # and saying it holds nothing would be untrue; their nearest sentences, uncited.
            body = not_given(brief.question, closest, brief.scope_label)
            return "\n".join([*follow_up_lines(brief), *body, NO_LM_NOTE])
        if not cited:  # no part is answered: said plainly, nothing cited
            lines[len(follow_up_lines(brief))] = (
                "Your papers do not give this: none of the passages found answers any part of it."
            )
            lines.append(NO_LM_NOTE)
            return "\n".join(lines)
        lines += uncovered_lines(brief.parts, uncovered)
        real_gaps = [
            g for g in brief.gaps
            if not g.startswith(("passages not yet", "nothing found about", "no passage"))
        ]  # fmt: skip
        if real_gaps:
            lines += [gaps_line(real_gaps), ""]
        lines.append(NO_LM_NOTE)
        return "\n".join(lines)

    def part_quotes(
        self, scorer: QuoteScorer, part: Part, pool: list[Candidate], elsewhere: bool = False
    ) -> tuple[list[str], set[str]]:
        """A part's quoted lines and the sentences they quote: from the paper the part names
        when it holds any; from other papers under a line saying so when it holds none."""
        own = self.part_pool(part, pool, own_only=True)
        if own and (lines := self.not_given_by(scorer, part, own)):
            return lines, set()
        picked = self.quotes_for(scorer, part, own or pool, elsewhere, own=bool(own))
        if not picked:
            return [], set()
        quoted = {c.text for run, _ in picked for c in run}
        if own and self.approaches(picked):
            return [PART_APPROACHED, "", *quote_groups(picked)], quoted
        if part.items and not own:
            names = (
                " and ".join(f"*{markdown_text(t)}*" for t in part.titles) or "The paper it names"
            )
            note = (f"_{names} has nothing on this in the evidence gathered; "
                    "from other papers in your library:_")  # fmt: skip
            return [note, "", *quote_groups(picked)], quoted
        return quote_groups(picked), quoted

    def closest_own(self, scorer: QuoteScorer, parts: Sequence[Part], cands: list[Candidate]
                    ) -> list[Candidate]:  # fmt: skip
        """Each part's nearest sentence from the paper it names, when that paper has evidence."""
        out: list[Candidate] = []
        for part in parts:
            own = self.part_pool(part, cands, own_only=True)
            query = part_query(part)
            mine = scorer.focus(query, own, PART_FOCUS_WORDS) if own else []
            scorer.score(query, mine)
            best = max(mine, key=lambda c: c.score, default=None)
            if best is not None and best.score >= OWN_FLOOR and best not in out:
                out.append(best)
        return out

    @staticmethod
    def not_given_by(scorer: QuoteScorer, part: Part, own: list[Candidate]) -> list[str]:
        """A part asking its paper for a figure it never gives: said plainly, with the closest
        sentence shown uncited; [] when the paper gives one or comes near. Only a number
        asked for decides it: a part's few words score lower than a whole question, and a
        low score alone would deny the researcher a paper that does answer."""
        query = part_query(part)
        if not asks_quantity(query):
            return []
        mine = scorer.focus(query, own, PART_FOCUS_WORDS)
        scorer.score(query, mine)
        if not mine or verdict(query, mine) is not Verdict.NOT_GIVEN:
            return []
        best = max(mine, key=lambda c: c.score)
        title = markdown_text(best.chunk.title)
        quote = markdown_quote(best.text)
        return [f"_*{title}* does not give this. Its closest passage, which does not answer "
                "it:_", "", f"- “{quote}” _(closest, not cited)_", ""]  # fmt: skip

    @staticmethod
    def part_pool(part: Part, cands: list[Candidate], own_only: bool = False
                  ) -> list[Candidate]:  # fmt: skip
        """A part's candidates: those of the papers it names (all, when it names none)."""
        own = [c for c in cands if c.chunk.item_key in part.items] if part.items else []
        return own if own or own_only else cands

    def quotes_for(
        self,
        scorer: QuoteScorer,
        part: Part,
        cands: list[Candidate],
        elsewhere: bool = False,
        own: bool = False,
    ) -> list[Unit]:
        """The part's quotes, or none when its evidence does not answer it. From the paper the
        part names (`own`), its closest sentences down to OWN_FLOOR: the researcher named
        it, and its nearest passages say more than "nothing answers" (labelled when they only
        come near: `approaches`)."""
        query = part_query(part)
        mine = scorer.focus(query, cands, PART_FOCUS_WORDS)
        scorer.score(query, mine)
        text = " ".join(f"{c.chunk.title} {c.chunk.section} {c.text}" for c in mine)
        # A name the library knows stands for its paper, which need not repeat it ("FLP",
        # "Lamport's paper"); a name it lacks must be in what is quoted under it.
        named = [] if part.items else [part.subject] if part.subject else entities(part.text)
        missing = [e for e in named if not mentions(text, e)]
        top = max((c.relevance for c in mine), default=0.0)
        floor = OWN_FLOOR if own else HARD_FLOOR
        if not mine or top < floor or self.off_topic(part.text, max(top, HARD_FLOOR), missing,
                                                     named, text, paper=own):  # fmt: skip
            return []
        if elsewhere and top < SCOPE_ANSWERS:
            return []
        picked = scorer.select(query, mine, max_sentences=3, max_words=110)
        return [u for u in picked if u[1] >= floor]

    @staticmethod
    def approaches(picked: list[Unit]) -> bool:
        """Whether a part's quotes only come near what it asks."""
        return max((u[0][0].relevance for u in picked), default=0.0) < STATES

    @staticmethod
    def outside(brief: WriterBrief) -> str:
        """Where else to look when the scope does not answer: the closest papers outside it
        (unless the pipeline names papers that answer clearly better, `elsewhere`)."""
        if not brief.scope_label or not brief.nearest or brief.elsewhere:
            return ""
        titles = " and ".join(f"*{markdown_text(t)}*" for t in brief.nearest)
        many = len(brief.nearest) > 1
        return (f" Outside it, the closest {'papers' if many else 'paper'} in your library "
                f"{'are' if many else 'is'} {titles}: search the whole library to read "
                f"{'them' if many else 'it'}.")  # fmt: skip

    def no_evidence(self, brief: WriterBrief, missing: list[str]) -> str:
        about = f" (nothing in it mentions {', '.join(missing)})" if missing else ""
        if brief.scope_label:
            near = self.outside(brief)
            return (
                f"Not in {brief.scope_label}. None of the passages found there addresses this "
                f"question{about}, so there is nothing I can cite from them.{near}\n\n"
                "_Answered by the embedded offline engine, without a language model._"
            )
        return (
            "The library holds no evidence on this question: none of the passages found "
            f"addresses it{about}, so there is nothing I can cite.\n\n"
            "_Answered by the embedded offline engine, without a language model._"
        )


def own_notes(question: str, cands: Sequence[Candidate], named: Sequence[str]) -> list[Candidate]:
    """The researcher's notes when what they wrote is asked: those on the named papers, else
    any ("the reading order I set myself … after Lamport's paper" is a standalone list)."""
    if not asks_own_notes(question):
        return []
    notes = [c for c in cands if c.chunk.is_note]
    return [c for c in notes if c.chunk.item_key in named] or notes


def uncovered_lines(parts: Sequence[Part], uncovered: Sequence[Part]) -> list[str]:
    """The parts no quote answers, by the same names as their headings: a name the library
    lacks is said to be missing; a paper it holds is said to have nothing on the question in
    the evidence gathered (never "not covered by the library")."""
    lines: list[str] = []
    lacks = [p.name or p.subject for p in uncovered if not p.items and (p.name or p.subject)]
    silent = [p for p in uncovered if p.items or not (p.name or p.subject)]
    if lacks:
        lines += ["Not in your library: " + "; ".join(lacks) + " (no paper by that name).", ""]
    if silent:
        said = "; ".join(
            (p.heading or p.text) + (f" (in {', '.join(f'*{t}*' for t in p.titles)})"
                                     if p.titles and not p.name.endswith(")") else "")
            for p in silent
        )  # fmt: skip
        lines += ["Nothing in the evidence gathered answers: " + said + ".", ""]
    return lines


def follow_up_lines(brief: WriterBrief) -> list[str]:
    """What a follow-up's answer says first: that it takes the researcher's correction, or the
    earlier side of a contrast in one line (its first answering sentence, whole)."""
    fu = brief.follow_up
    if fu is None:
        return []
    if fu.correction and fu.not_papers:
        refused = " and ".join(f"*{t}*" for t in fu.not_papers)
        return [f"_You meant another paper than {refused}: here is what the others say._", ""]
    if fu.correction:
        about = f" about {fu.subject}" if fu.subject else ""
        return [f"_Taking your correction: not the earlier question{about}, but “{brief.goal}”._",
                ""]  # fmt: skip
    if fu.answer:
        on = f", on {fu.subject}" if fu.subject else ""
        return [f"_Earlier{on}: {fu.answer}_", ""]
    return []


def gaps_line(gaps: Sequence[str]) -> str:
    """What the search left uncovered, one sentence ("… the question: What did I say …?", not
    "…?.")."""
    text = "Not covered by the evidence gathered: " + "; ".join(gaps)
    return text if re.search(r"[.?!][”’\"')]*$", text) else text + "."


def quote_groups(picked: list[Unit]) -> list[str]:
    """Quotes grouped by paper, in the order chosen (the answer first), each a bullet with its
    citation; the paper's line and its bullets are separate Markdown blocks."""
    lines: list[str] = []
    groups: dict[str, list[Unit]] = {}
    for run, score in picked:
        groups.setdefault(run[0].chunk.title, []).append((run, score))
    for runs in groups.values():
        lines += [runs[0][0][0].chunk.source_line(), ""]
        for run, _ in runs:
            # Whole sentences, as the paper has them. Quoted paper text is text: no stray
            # backtick or tag opens a span or markup.
            sents = [markdown_quote(c.text.strip()) for c in run]
            first = run[0].chunk
            section = (f" _(§ {markdown_text(first.section)})_"
                       if first.section and not first.is_note else "")  # fmt: skip
            lines.append(f"- {' '.join(sents)} [{first.index}]{section}")
        lines.append("")
    return lines


__all__ = ["NO_LM_NOTE", "OTHER_PAPERS", "OfflineSynthesizer", "quote_groups"]
