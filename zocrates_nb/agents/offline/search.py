"""The offline search agent's policy: which tool to call next, judged by embedding similarity
over what the tools returned; concluding with the gaps when the plan outgrows the budget."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.messages import tool_call
from zocrates_nb.agents.offline.search_state import Outline, SearchPlanState, read_plan_state
from zocrates_nb.agents.parts import Part
from zocrates_nb.text import entities, mentions, split_sentences, strip_reference_markers

# A passage whose similarity to the goal is below this counts as weak evidence.
WEAK_EVIDENCE = 0.38
STRONG_EVIDENCE = 0.6  # a passage this similar to the goal reads as answering it
# A heading this similar to the question's aspect heads the section that answers it.
ASPECT_HEADING = 0.62
NOTHING_RELEVANT = 0.30


_ASPECT_DROP_RE = re.compile(
    r"\(Follow-up.*$|\b(how|what|which|why|when|where|who|does|do|did|is|are|was|were|the|a|an|"
    r"in|of|this|these|paper|papers)\b",
    re.I | re.S,
)


def aspect(query: str) -> str:
    """What a question asks about, for matching headings: without question words and the
    names of what it is about ("how does Raft elect a leader?" → "elect leader")."""
    text = _ASPECT_DROP_RE.sub(" ", query)
    for name in entities(query):
        text = re.sub(rf"\b{re.escape(name)}(['’]s)?\b", " ", text)
    out = " ".join(text.split()).strip(" ?.,")
    return out if len(out.split()) >= 1 and len(out) >= 4 else query


def bare_heading(heading: str) -> str:
    """A heading without its numbering ("5.2 Leader election" → "Leader election")."""
    return re.sub(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+(?=[A-Za-z])", "", heading) or heading


def _norm_heading(h: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", h.lower()).strip()


class OfflineSearch:
    """The search agent's policy, recomputed from the messages at each step (resumes anywhere).

    Plan: passage search for the goal → survey candidate papers (frontmatter) → for the best
    one to three papers: a focused keyword search inside the paper, its outline, and a read of
    the one or two sections that the passages and headings point to → conclude. A plan that
    does not fit the budget ends with what is left as gaps (the researcher may extend).
    """

    def __init__(self, emb: SentenceEmbeddings) -> None:
        self.emb = emb

    # -------------------------------------------------------------- judging what was found
    def passage_scores(
        self, st: SearchPlanState, query: str | None = None, only: str | None = None
    ) -> dict[str, float]:
        """How well each passage (by chunk id) matches the goal (or `query`; `only`: the
        passages that query found): its best sentence counts most, since a long passage's
        single embedding dilutes the one sentence that answers."""
        query = query or st.goal
        ps = [p for p in st.passages if p.text and (only is None or p.query == only)]
        if not ps:
            return {}
        whole = self.emb.similarity(query, [p.text[:1500] for p in ps])
        sents: list[str] = []
        owner: list[int] = []
        for i, p in enumerate(ps):
            for sent in split_sentences(strip_reference_markers(p.text)):
                if len(sent.split()) >= 5:
                    sents.append(sent)
                    owner.append(i)
        best = [float(w) for w in whole]
        if sents:
            ss = self.emb.similarity(query, sents)
            top = [-1.0] * len(ps)
            for i, v in zip(owner, ss, strict=True):
                top[i] = max(top[i], float(v))
            best = [0.4 * w + 0.6 * t if t > -1 else w for w, t in zip(best, top, strict=True)]
        return {p.chunk_id: s for p, s in zip(ps, best, strict=True)}

    @staticmethod
    def _weight(rank: int) -> float:
        return 1.0 / (2 + rank)

    def paper_ranking(self, st: SearchPlanState, sims: dict[str, float]) -> list[tuple[str, float]]:
        """Candidate papers (parent keys): their passages (many good hits add up) and the survey."""
        score: dict[str, float] = {}
        for p in st.passages:
            if p.query not in (st.goal, self._guided(st)):
                continue  # focused searches inside a paper say nothing about other papers
            s = sims.get(p.chunk_id, 0.0)
            score[p.item_key] = score.get(p.item_key, 0.0) + self._weight(p.rank) * (0.5 + s)
        if st.survey:
            sv = self.emb.similarity(st.goal, [p.text[:1200] for p in st.survey])
            for p, s in zip(st.survey, sv, strict=True):
                w = 0.6 * self._weight(p.rank) * (0.5 + float(s))
                score[p.item_key] = score.get(p.item_key, 0.0) + w
        if st.scope == "selection":
            for k in st.active_keys:
                score.setdefault(k, 0.0)
        return sorted(score.items(), key=lambda kv: kv[1], reverse=True)

    def calls_for(self, st: SearchPlanState, key: str) -> int:
        """Retrieval calls still needed to cover one paper (focused search, outline, read)."""
        n = 0 if key in st.injected or self._focused_done(st, key) else 1
        n += 0 if self._outline(st, key) is not None else 1
        return n + (0 if st.read.get(key) else 1)

    def chosen_papers(self, st: SearchPlanState, sims: dict[str, float]) -> list[str]:
        ranking = self.paper_ranking(st, sims)
        if not ranking:
            return []
        if st.scope == "selection" and st.active_keys:
            active = [k for k, _ in ranking if k in st.active_keys]
            active += [k for k in st.active_keys if k not in active]
            return active[:3]
        top = ranking[0][1]
        chosen = [ranking[0][0]]
        for k, s in ranking[1:3]:
            if s >= 0.45 * top:
                chosen.append(k)
        # A paper the goal names ("Compare Raft with Zab") is read even when another paper
        # dominates the passages: its title carries the name.
        titles: dict[str, str] = {}
        for p in [*st.passages, *st.survey]:
            titles.setdefault(p.item_key, p.title)
        for ent in entities(st.goal):
            named = [k for k, _ in ranking if mentions(titles.get(k, ""), ent)]
            if named and not any(k in chosen for k in named):
                chosen.append(named[0])
        return chosen[:3]

    @staticmethod
    def _guided(st: SearchPlanState) -> str:
        """The goal steered by the researcher's guidance (after an extension), or ""."""
        goal = st.goal.split("(Follow-up", 1)[0].strip() or st.goal
        return f"{st.guidance} {goal}" if st.guidance else ""

    def _focused_query(self, st: SearchPlanState) -> str:
        """Inside one paper the goal itself ranks best (the paper's own terms are already in
        play); researcher guidance joins it after an extension."""
        goal = st.goal.split("(Follow-up", 1)[0].strip() or st.goal
        return f"{goal} {st.guidance}".strip() if st.guidance else goal

    def _focused_done(self, st: SearchPlanState, key: str) -> bool:
        q = self._focused_query(st)
        return (q, "", key) in st.searched_queries

    def _outline(self, st: SearchPlanState, key: str) -> Outline | None:
        o = st.outlines.get(key)
        if o is None:
            for p in st.passages:
                if p.item_key == key and p.doc_key in st.outlines:
                    return st.outlines[p.doc_key]
        return o

    def words_left(self, st: SearchPlanState) -> int:
        read = st.read_sections
        kept = sum(
            len(p.text.split()) for p in st.passages if (p.doc_key, p.section_id) not in read
        )
        gathered = kept + sum(len(p.text.split()) for p in st.survey) + st.read_words
        return int(0.85 * st.ceiling) - gathered

    def sections_to_read(
        self,
        st: SearchPlanState,
        outline: Outline,
        key: str,
        sims: dict[str, float],
        query: str | None = None,
        fresh: bool = True,
    ) -> list[str]:
        """The one or two sections the passages (and headings) point to. A heading that
        names the question's aspect ("Leader election" for "how does Raft elect a leader?")
        weighs as much as a good passage: the section it heads is where the answer is stated."""
        query = query or st.goal
        skip = re.compile(r"\b(references|bibliography|acknowledg|appendix)", re.I)
        entries = {
            e.id: e
            for e in outline.entries
            if e.id not in ("s0", "abstract") and not skip.search(e.heading)
        }
        by_norm = {_norm_heading(e.heading): e for e in entries.values()}
        score: dict[str, float] = {}
        peak: dict[str, float] = {}
        named: str | None = None
        words: dict[str, int] = {k: e.words for k, e in entries.items()}
        for p in st.passages:
            if key not in (p.item_key, p.doc_key) and outline.doc_key != p.doc_key:
                continue
            if p.chunk_id not in sims:
                continue  # found for another part of the question
            sid = p.section_id
            if not re.fullmatch(r"s\d+", sid or ""):
                e = by_norm.get(_norm_heading(p.section))
                if e is None:
                    continue
                sid = e.id
            if sid == "s0" or skip.search(p.section):
                continue
            sim = sims.get(p.chunk_id, 0.0)
            score[sid] = score.get(sid, 0.0) + self._weight(p.rank) * (0.5 + sim)
            peak[sid] = max(peak.get(sid, 0.0), sim)
            words.setdefault(sid, 0)
        for sid, sim in peak.items():
            score[sid] += 0.5 * sim
        if entries:
            ids = list(entries)
            hs = self.emb.similarity(aspect(query), [bare_heading(entries[i].heading) for i in ids])
            for i, h in zip(ids, hs, strict=True):
                if i in score or float(h) >= 0.5:
                    score[i] = score.get(i, 0.0) + 0.3 * max(float(h), 0.0)
            best_i, best_h = max(zip(ids, hs, strict=True), key=lambda x: float(x[1]))
            if float(best_h) >= ASPECT_HEADING:
                named = best_i  # the heading names the aspect: read it first
        if not score:
            return []
        if named is not None:
            score[named] = max(score.values()) + 1.0
        already = st.read.get(key, set()) | st.read.get(outline.doc_key, set())
        already |= st.read.get(outline.parent_key, set())
        if not fresh:
            already = set()
        ranked = sorted(score, key=lambda i: score[i], reverse=True)
        best = score[ranked[0]]
        left = self.words_left(st)
        picked: list[str] = []
        total = 0
        for sid in ranked[:4]:
            if sid in already:
                continue
            if picked and score[sid] < 0.6 * best:
                break
            w = words.get(sid) or 800
            if w > max(left - total, 0) and (picked or w > 2.5 * max(left, 1)):
                continue
            picked.append(sid)
            total += w
            if len(picked) >= 2:
                break
        return picked

    # -------------------------------------------------------------- a question in parts
    def part_step(self, st: SearchPlanState) -> ModelResponse | None:
        """The next call for a question in parts: first a search for every part (inside the
        papers it names when the scope allows), then for each part its best paper's outline
        and the sections that answer that part. None: every part is covered."""
        scope_key: Any = "active" if st.scope == "selection" else None
        attempted = {(q, k) for q, t, k in st.searched_queries if t == ""}
        found = {p.query for p in st.passages}

        def key_for(part: Part) -> Any:
            items = part.items
            if st.scope == "selection":
                items = [k for k in items if k in st.active_keys]
            return (items[0] if len(items) == 1 else items) if items else scope_key

        for part in st.parts:
            key = key_for(part)
            if (part.text, str(key)) not in attempted:
                return tool_call("search_corpus", self._search_args(part.text, key, 6))
            if part.text not in found and (part.text, str(scope_key)) not in attempted:
                # The named paper was out of scope (or held nothing): the whole scope.
                return tool_call("search_corpus", self._search_args(part.text, scope_key, 6))
        for part in st.parts:
            sims = self.passage_scores(st, part.text, only=part.text)
            if not sims or max(sims.values()) < NOTHING_RELEVANT:
                continue
            key = self.part_paper(st, part, sims)
            outline = self._outline(st, key)
            if outline is None:
                if key in st.toc_fetched:
                    continue
                return tool_call("get_document_toc", {"item_key": key})
            best = self.sections_to_read(st, outline, key, sims, part.text, fresh=False)
            read = st.read.get(key, set()) | st.read.get(outline.doc_key, set())
            if best and best[0] not in read | st.read.get(outline.parent_key, set()):
                ids = [i for i in best if i not in read]
                return tool_call("read_document", {"item_key": key, "asset_id": ", ".join(ids)})
        return None

    @staticmethod
    def _search_args(query: str, key: Any, limit: int) -> dict[str, Any]:
        args: dict[str, Any] = {"query": query, "limit": limit}
        if key:
            args["item_key"] = key
        return args

    def part_paper(self, st: SearchPlanState, part: Part, sims: dict[str, float]) -> str:
        """The paper that answers a part: the one it names, else its passages' best paper."""
        score: dict[str, float] = {}
        for p in st.passages:
            if p.query == part.text:
                s = self._weight(p.rank) * (0.5 + sims.get(p.chunk_id, 0.0))
                score[p.item_key] = score.get(p.item_key, 0.0) + s
        named = [k for k in part.items if k in score]
        pool = named or list(score)
        return max(pool, key=lambda k: score[k])

    def part_gaps(self, st: SearchPlanState) -> list[str]:
        """The parts no passage found closely matches."""
        gaps = []
        for part in st.parts:
            sims = self.passage_scores(st, part.text, only=part.text)
            if max(sims.values(), default=0.0) < WEAK_EVIDENCE:
                gaps.append(f"nothing found about: {part.text}")
        return gaps

    # -------------------------------------------------------------- the next step
    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        st = read_plan_state(messages)
        if len(st.parts) >= 2:
            action = None if st.exhausted or st.used >= st.budget else self.part_step(st)
            if action is not None:
                return action
            return self.conclude(st, self.passage_scores(st), self.part_gaps(st))
        sims = self.passage_scores(st)
        remaining = max(st.budget - st.used, 0)
        scope_key: Any = "active" if st.scope == "selection" else None

        def search(
            query: str, key: Any, chunk_type: str | None = None, limit: int = 8
        ) -> ModelResponse:
            args: dict[str, Any] = {"query": query, "limit": limit}
            if key:
                args["item_key"] = key
            if chunk_type:
                args["chunk_type"] = chunk_type
            return tool_call("search_corpus", args)

        plan: list[tuple[str, Callable[[], ModelResponse | None]]] = []

        def passage_search() -> ModelResponse | None:
            if (st.goal, "", str(scope_key)) in st.searched_queries:
                return None
            return search(st.goal, scope_key, limit=8)

        def survey() -> ModelResponse | None:
            if st.scope == "selection" or (st.goal, "frontmatter", "None") in st.searched_queries:
                return None
            return search(st.goal, None, chunk_type="frontmatter", limit=5)

        def paper_step(key: str) -> ModelResponse | None:
            # A selected paper whose outline came with the prompt is read directly.
            if key not in st.injected and not self._focused_done(st, key):
                return search(self._focused_query(st), key, limit=6)
            outline = self._outline(st, key)
            if outline is None:
                if key in st.toc_fetched:
                    return None
                return tool_call("get_document_toc", {"item_key": key})
            ids = self.sections_to_read(st, outline, key, sims, self._guided(st) or None)
            # Guidance from the researcher earns each paper one more read, chosen by it.
            if ids and (not st.read.get(key) or (st.guidance and key not in st.read_now)):
                return tool_call("read_document", {"item_key": key, "asset_id": ", ".join(ids)})
            return None

        def guided_search() -> ModelResponse | None:
            guided = self._guided(st)
            if not guided or (guided, "", str(scope_key)) in st.searched_queries:
                return None
            return search(guided, scope_key, limit=8)

        plan.append(("passages", passage_search))
        plan.append(("guided", guided_search))
        searched = (st.goal, "", str(scope_key)) in st.searched_queries
        if searched and max(sims.values(), default=0.0) < NOTHING_RELEVANT:
            # Negative-evidence early exit: the library has nothing close; do not burn calls.
            return self.conclude(st, sims, [])
        if st.passages or st.used:
            papers = self.chosen_papers(st, sims)
            # Survey only when there is budget for it and for reading the chosen papers.
            need = sum(self.calls_for(st, k) for k in papers[:2])
            if remaining >= need + 2 or (st.goal, "frontmatter", "None") in st.searched_queries:
                plan.append(("survey", survey))
                papers = self.chosen_papers(st, sims)
            for key in papers:
                plan.append((key, functools.partial(paper_step, key)))

        gaps: list[str] = []
        for name, step in plan:
            action = step()
            if action is None:
                continue
            if not st.exhausted and remaining > 0:
                part = action.parts[0]
                if (
                    name not in ("passages", "survey", "guided")
                    and isinstance(part, ToolCallPart)
                    and self.calls_for(st, name) > remaining
                    and st.read
                ):
                    gaps.append(f"{self._title(st, name)} not read (budget)")
                    continue
                return action
            # Out of budget: what the plan still wanted to do is the gap to report.
            if name == "passages":
                gaps.append(f"passages not yet searched for: {st.goal}")
            elif name in ("survey", "guided"):
                continue
            else:
                gaps.append(f"{self._title(st, name)}: relevant sections not read yet")
        return self.conclude(st, sims, gaps)

    def _title(self, st: SearchPlanState, key: str) -> str:
        for p in [*st.passages, *st.survey]:
            if key in (p.item_key, p.doc_key) and p.title:
                return f'"{p.title}"'
        o = st.outlines.get(key)
        return f'"{o.title}"' if o and o.title else "a candidate paper"

    def conclude(
        self, st: SearchPlanState, sims: dict[str, float], plan_gaps: list[str]
    ) -> ModelResponse:
        best = max(sims.values(), default=0.0)
        gaps = list(dict.fromkeys(plan_gaps))
        if best < WEAK_EVIDENCE:
            gaps.append(f"no passage in the library closely matches the goal: {st.goal}")
        evidence_text = " ".join(
            f"{p.title} {p.section} {p.text}" for p in [*st.passages, *st.survey]
        )
        ents = [] if st.parts else entities(st.goal)
        missing = [e for e in ents if not mentions(evidence_text, e)]
        if missing and len(missing) * 2 > len(ents):
            gaps.append("nothing found about " + ", ".join(missing))
        papers = {p.item_key for p in st.passages}
        read = sum(len(v) for v in st.read.values())
        # Plain words for the researcher's checkpoint card (the number stays in the notes).
        match = ("a close match" if best >= STRONG_EVIDENCE else
                 "a partial match" if best >= WEAK_EVIDENCE else "a weak match")
        summary = (
            f"{_plural(len(st.passages), 'passage')} from {_plural(len(papers), 'paper')}"
            + (f" and {_plural(read, 'section')} read in full" if read else "")
            + f"; the closest passage is {match} for the question."
        )
        notes = (
            "Offline search (no language model): passages chosen by hybrid search, "
            f"sections by outline; best match similarity {best:.2f}."
        )
        return tool_call("conclude_search", {"summary": summary, "notes": notes, "gaps": gaps})


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
