"""The offline search agent's policy: which tool to call next, judged by how close each passage's
stored window vectors come to the goal (the index's own vectors: nothing the tools returned is
embedded again), concluding with the gaps when the plan outgrows the budget.

Plan: (the researcher's notes first, when the question asks what they wrote) passage search for
the goal → survey candidate papers (frontmatter) → for the best one to three papers: a focused
search inside the paper, its outline, and a read of the one or two sections the passages and
headings point to → conclude. A question in parts searches and reads
for each part, inside the paper it names. Guidance from a checkpoint goes first in the next
pass: the papers and sections it names are opened before anything else.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Collection
from typing import Any

from pydantic_ai import ModelResponse, ToolCallPart
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.aspects import aspect, bare_heading
from zocrates_nb.agents.offline.brief import SearchBrief, brief_of
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.guidance import Guidance, read_guidance
from zocrates_nb.agents.offline.messages import tool_call
from zocrates_nb.agents.offline.quotes import EvidenceChunk, quotable
from zocrates_nb.agents.offline.search_state import (
    Outline,
    Passage,
    SearchPlanState,
    inside_query,
    part_key,
    part_queries,
    read_plan_state,
)
from zocrates_nb.agents.own_notes import asks_own_notes
from zocrates_nb.agents.parts import Part
from zocrates_nb.text import entities, mentions

# How well the best passage found answers the goal: 0.4 × its best stored window's cosine +
# 0.6 × its best sentence's (all-MiniLM-L6-v2), the sentences of the few best passages only
# (the writer embeds the same sentences: cached). Calibrated on the dev sets.
WEAK_EVIDENCE = 0.38  # below: the passage is weak evidence (a gap is reported)
STRONG_EVIDENCE = 0.6  # above: it reads as answering the goal
NOTHING_RELEVANT = 0.30  # the best passage below this: the library has nothing close
REFINED = 3  # passages whose sentences are embedded to judge the best match
MIN_READ_WORDS = 300  # words left below which no section is opened
# A heading this similar to the question's aspect heads the section that answers it.
ASPECT_HEADING = 0.62
_SKIP_RE = re.compile(r"\b(references|bibliography|acknowledg|appendix)", re.I)
def _norm_heading(h: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", h.lower()).strip()


def _weight(rank: int) -> float:
    return 1.0 / (2 + rank)


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _search(query: str, key: Any, chunk_type: str | None = None, limit: int = 8) -> ModelResponse:
    args: dict[str, Any] = {"query": query, "limit": limit}
    if key:
        args["item_key"] = key
    if chunk_type:
        args["chunk_type"] = chunk_type
    return tool_call("search_corpus", args)


class OfflineSearch:
    """The search agent's policy, recomputed from its brief and messages at each step."""

    def __init__(self, emb: SentenceEmbeddings) -> None:
        self.emb = emb  # headings against the question's aspect (short texts, cached)

    # -------------------------------------------------------------- judging what was found
    def passage_scores(
        self, st: SearchPlanState, query: str | None = None,
        only: Collection[str] | None = None,
    ) -> dict[str, float]:  # fmt: skip
        """How close each passage (by chunk id) comes to the goal (or `query`; `only`: the
        passages these queries found): its best stored window's cosine."""
        query = query or st.goal
        ps = [p for p in st.passages if p.text and (only is None or p.query in only)]
        return self._similarity(st, query, ps)

    def _similarity(self, st: SearchPlanState, query: str, ps: list[Passage]) -> dict[str, float]:
        if not ps:
            return {}
        sims = st.vectors.similarity(query, [p.evidence for p in ps])
        missing = [i for i, s in enumerate(sims) if s is None]
        if missing:  # passages the index holds no vector for: embedded here, once
            local = self.emb.similarity(query, [ps[i].text[:1500] for i in missing])
            for i, v in zip(missing, local, strict=True):
                sims[i] = float(v)
        return {p.chunk_id: float(s or 0.0) for p, s in zip(ps, sims, strict=True)}

    def best_match(
        self,
        st: SearchPlanState,
        sims: dict[str, float],
        query: str | None = None,
        enough: float = WEAK_EVIDENCE,
    ) -> float:
        """How well the best passage answers the query: its stored window, and when that
        alone stays below `enough`, its best sentence (the few passages nearest by window are
        read sentence by sentence; a window holds several, and one of them states the answer)."""
        if not sims:
            return 0.0
        best = max(sims.values())
        if best >= enough:
            return best
        query = query or st.goal
        by_id = {p.chunk_id: p for p in st.passages}
        top = sorted((c for c in sims if c in by_id), key=lambda c: sims[c], reverse=True)
        for cid in top[:REFINED]:
            chunk = EvidenceChunk(0, by_id[cid].title, "", "", by_id[cid].section,
                                  by_id[cid].text)  # fmt: skip
            sents = [c.text for c in quotable([chunk])][:40]
            if sents:
                s = float(self.emb.similarity(query, sents).max())
                best = max(best, 0.4 * sims[cid] + 0.6 * s)
        return best

    def paper_ranking(self, st: SearchPlanState, sims: dict[str, float]) -> list[tuple[str, float]]:
        """Candidate papers (parent keys): their passages (many good hits add up) and the survey."""
        score: dict[str, float] = {}
        for p in st.passages:
            if p.query not in (st.goal, self._guided(st)):
                continue  # focused searches inside a paper say nothing about other papers
            s = sims.get(p.chunk_id, 0.0)
            score[p.item_key] = score.get(p.item_key, 0.0) + _weight(p.rank) * (0.5 + s)
        if st.survey:
            sv = self._similarity(st, st.goal, st.survey)
            for p in st.survey:
                w = 0.6 * _weight(p.rank) * (0.5 + sv.get(p.chunk_id, 0.0))
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
        fu = st.brief.state.follow_up
        if fu is not None and fu.not_papers:  # "no, the other paper": the others are read
            refused = {p.item_key for p in [*st.passages, *st.survey] if p.title in fu.not_papers}
            ranking = [kv for kv in ranking if kv[0] not in refused] or ranking
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
        for ent in entities(st.question):
            named = [k for k, _ in ranking if mentions(titles.get(k, ""), ent)]
            if named and not any(k in chosen for k in named):
                chosen.append(named[0])
        # A paper the question names by a name its text may never use ("the FLP paper",
        # "Lamport's paper") is read first, found or not by the passage search.
        first = [k for k in self.named_papers(st) if k not in chosen or k != chosen[0]]
        return list(dict.fromkeys([*first, *chosen]))[:3]

    @staticmethod
    def named_papers(st: SearchPlanState) -> list[str]:
        """The items the question names through the library's names, within the scope."""
        cat = st.brief.catalogue
        if cat is None:
            return []
        allowed = set(st.brief.state.allowed_keys)
        keys = [k for m in cat.mentions(st.question) if len(m.keys) == 1 for k in m.keys]
        return [k for k in dict.fromkeys(keys) if not allowed or k in allowed]

    @staticmethod
    def _guided(st: SearchPlanState) -> str:
        """The question steered by the researcher's guidance (after an extension), or ""."""
        return f"{st.guidance} {st.question}" if st.guidance else ""

    def _focused_query(self, st: SearchPlanState) -> str:
        """Inside one paper the question itself ranks best (the paper's own terms are already
        in play); researcher guidance joins it after an extension."""
        return f"{st.question} {st.guidance}".strip() if st.guidance else st.question

    def _focused_done(self, st: SearchPlanState, key: str) -> bool:
        return (self._focused_query(st), "", key) in st.searched_queries

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

    def heading_fit(self, query: str, outline: Outline) -> dict[str, float]:
        """How well each section's heading names the question's aspect."""
        entries = [e for e in outline.entries if e.id != "abstract" and not _SKIP_RE.search(
            e.heading)]  # fmt: skip
        if not entries:
            return {}
        hs = self.emb.similarity(aspect(query), [bare_heading(e.heading) for e in entries])
        return {e.id: float(h) for e, h in zip(entries, hs, strict=True)}

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
        weighs more than any passage: the section it heads is where the answer is stated."""
        query = query or st.question
        entries = {
            e.id: e
            for e in outline.entries
            if e.id not in ("s0", "abstract") and not _SKIP_RE.search(e.heading)
        }
        by_norm = {_norm_heading(e.heading): e for e in entries.values()}
        score: dict[str, float] = {}
        peak: dict[str, float] = {}
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
            if sid == "s0" or _SKIP_RE.search(p.section):
                continue
            sim = sims.get(p.chunk_id, 0.0)
            score[sid] = score.get(sid, 0.0) + _weight(p.rank) * (0.5 + sim)
            peak[sid] = max(peak.get(sid, 0.0), sim)
            words.setdefault(sid, 0)
        for sid, sim in peak.items():
            score[sid] += 0.5 * sim
        fit = self.heading_fit(query, outline)
        named: str | None = None
        for i, h in fit.items():
            if i in score or h >= 0.5:
                score[i] = score.get(i, 0.0) + 0.3 * max(h, 0.0)
        if fit:
            best_i = max(fit, key=lambda i: (fit[i], -entries[i].depth if i in entries else 0))
            if fit[best_i] >= ASPECT_HEADING:
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

    # -------------------------------------------------------------- guidance
    def guided_step(self, st: SearchPlanState) -> ModelResponse | None:
        """The first calls of a pass the researcher guided: the papers it names are searched,
        outlined and read (the sections it names first); guidance naming no paper is searched
        over the scope."""
        g = self.guidance(st)
        if not g.text:
            return None
        in_scope = [k for k in g.papers if not st.active_keys or st.scope != "selection"
                    or k in st.active_keys]  # fmt: skip
        if not in_scope:
            return None  # the guided search in the plan takes it
        query = self._focused_query(st)
        for key in in_scope:
            if (query, "", key) not in st.searched_queries and key not in st.read_now:
                return _search(query, key, limit=6)
            outline = self._outline(st, key)
            if outline is None:
                if key in st.toc_fetched:
                    continue
                return tool_call("get_document_toc", {"item_key": key})
            if key in st.read_now:
                continue
            ids = self.named_sections(g, outline) or self.sections_to_read(
                st, outline, key, self.passage_scores(st, query), f"{st.guidance} {st.question}"
            )
            if ids:
                return tool_call("read_document", {"item_key": key, "asset_id": ", ".join(ids)})
        return None

    def guidance(self, st: SearchPlanState) -> Guidance:
        return read_guidance(st.guidance, st.brief.catalogue)

    def named_sections(self, g: Guidance, outline: Outline) -> list[str]:
        """Sections the guidance names by number or heading, not yet excluded."""
        out: list[str] = []
        for e in outline.entries:
            number = e.heading.split(" ", 1)[0].rstrip(".")
            heading = _norm_heading(bare_heading(e.heading))
            if number in g.numbers or any(_norm_heading(h) in heading for h in g.headings if h):
                out.append(e.id)
        return out[:2]

    # -------------------------------------------------------------- a question in parts
    def part_step(self, st: SearchPlanState) -> ModelResponse | None:
        """The next call for a question in parts: first a search for every part (inside the
        papers it names when the scope allows, without their names, then with them), then for
        each part its paper's outline and the sections that answer it. None: all covered."""
        scope_key: Any = "active" if st.scope == "selection" else None
        attempted = {(q, k) for q, t, k in st.searched_queries if t == ""}
        found = {p.query for p in st.passages}
        # Every part's search must fit the word ceiling: the more parts, the fewer passages.
        limit = {1: 6, 2: 6, 3: 4, 4: 3}.get(len(st.parts), 2)
        for part in st.parts:
            key = part_key(st, part)
            query = inside_query(st, part.text, key)
            if (query, str(key)) not in attempted:
                return _search(query, key, limit=limit)
            if not found & part_queries(st, part) and (
                part.text, str(scope_key)) not in attempted:  # fmt: skip
                # The named paper was out of scope (or held nothing): the whole scope.
                return _search(part.text, scope_key, limit=limit)
        # Then with the name, which a paper's statements of its own design often repeat ("In
        # ZooKeeper, servers process read operations locally"): its few best passages, while
        # most of the words are left for reading the sections that answer.
        for part in st.parts:
            key = part_key(st, part)
            if (part.text, str(key)) not in attempted and self.words_left(st) > 2 * MIN_READ_WORDS:
                return _search(part.text, key, limit=2)
        if self.words_left(st) < MIN_READ_WORDS:
            return None  # no room left to read a section: opening outlines would be wasted
        for part in st.parts:
            sims = self.passage_scores(st, part.text, only=part_queries(st, part))
            if not sims or self.best_match(st, sims, part.text, NOTHING_RELEVANT) < (
                NOTHING_RELEVANT
            ):
                continue
            for key in self.part_papers(st, part, sims):
                outline = self._outline(st, key)
                if outline is None:
                    if key in st.toc_fetched:
                        continue
                    return tool_call("get_document_toc", {"item_key": key})
                best = self.sections_to_read(st, outline, key, sims, part.text, fresh=False)
                read = st.read.get(key, set()) | st.read.get(outline.doc_key, set())
                read |= st.read.get(outline.parent_key, set())
                if best and best[0] not in read:
                    ids = [i for i in best if i not in read]
                    return tool_call("read_document", {"item_key": key,
                                                       "asset_id": ", ".join(ids)})  # fmt: skip
        return None

    def part_papers(self, st: SearchPlanState, part: Part, sims: dict[str, float]) -> list[str]:
        """The papers that answer a part: every paper it names that the search found, else its
        passages' best paper."""
        score: dict[str, float] = {}
        queries = part_queries(st, part)
        for p in st.passages:
            if p.query in queries:
                s = _weight(p.rank) * (0.5 + sims.get(p.chunk_id, 0.0))
                score[p.item_key] = score.get(p.item_key, 0.0) + s
        named = [k for k in part.items if k in score]
        if named:
            return sorted(named, key=lambda k: score[k], reverse=True)[:2]
        return [max(score, key=lambda k: score[k])] if score else []

    def part_gaps(self, st: SearchPlanState) -> list[str]:
        """The parts no passage found closely matches."""
        gaps = []
        for part in st.parts:
            sims = self.passage_scores(st, part.text, only=part_queries(st, part))
            if self.best_match(st, sims, part.text) < WEAK_EVIDENCE:
                gaps.append(f"nothing found about {part.heading or part.text}")
        return gaps

    # -------------------------------------------------------------- the next step
    def prefetch(self, st: SearchPlanState) -> None:
        """The aspects of the question (and its parts) and the headings of every outline open,
        embedded in one call: a new outline costs one call, not one per decision."""
        queries = [st.question, *(p.text for p in st.parts)]
        if st.guidance:
            queries.append(self._guided(st))
        outlines = {id(o): o for o in st.outlines.values()}.values()
        texts = [aspect(q) for q in queries]
        texts += [bare_heading(e.heading) for o in outlines for e in o.entries]
        self.emb.embed(list(dict.fromkeys(texts)))

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        brief = brief_of(SearchBrief)
        st = read_plan_state(brief, messages)
        self.prefetch(st)
        if not st.exhausted and (action := self.guided_step(st)) is not None:
            return action
        if len(st.parts) >= 2:
            action = None if st.exhausted else self.part_step(st)
            if action is not None:
                return action
            return self.conclude(st, self.passage_scores(st), self.part_gaps(st))
        return self.plan(st)

    def plan(self, st: SearchPlanState) -> ModelResponse:
        sims = self.passage_scores(st)
        remaining = max(st.budget - st.used, 0)
        scope_key: Any = "active" if st.scope == "selection" else None

        def passage_search() -> ModelResponse | None:
            if (st.goal, "", str(scope_key)) in st.searched_queries:
                return None
            return _search(st.goal, scope_key, limit=8)

        def survey() -> ModelResponse | None:
            if st.scope == "selection" or (st.goal, "frontmatter", "None") in st.searched_queries:
                return None
            return _search(st.goal, None, chunk_type="frontmatter", limit=5)

        def paper_step(key: str) -> ModelResponse | None:
            # A selected paper whose outline came with the input is read directly.
            if key not in st.injected and not self._focused_done(st, key):
                return _search(self._focused_query(st), key, limit=6)
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

        def own_notes() -> ModelResponse | None:
            # The researcher's few notes are searched on their own: among a paper's passages
            # a short note ranks below the paper it is on, whose words it shares.
            if not asks_own_notes(st.question) or (st.goal, "note", str(scope_key)) in (
                st.searched_queries
            ):
                return None
            return _search(st.goal, scope_key, chunk_type="note", limit=5)

        def guided_search() -> ModelResponse | None:
            guided = self._guided(st)
            if not guided or (guided, "", str(scope_key)) in st.searched_queries:
                return None
            return _search(guided, scope_key, limit=8)

        plan: list[tuple[str, Callable[[], ModelResponse | None]]] = [
            ("notes", own_notes),
            ("passages", passage_search),
            ("guided", guided_search),
        ]
        searched = (st.goal, "", str(scope_key)) in st.searched_queries
        if searched and self.best_match(st, sims, enough=NOTHING_RELEVANT) < NOTHING_RELEVANT:
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
                    name not in ("notes", "passages", "survey", "guided")
                    and isinstance(part, ToolCallPart)
                    and self.calls_for(st, name) > remaining
                    and st.read
                ):
                    gaps.append(self._unopened(st, name))
                    continue
                return action
            # Out of budget: what the plan still wanted to do is the gap to report.
            if name == "passages":
                gaps.append(f"passages not yet searched for: {st.question}")
            elif name not in ("notes", "survey", "guided"):
                gaps.append(self._unopened(st, name))
        return self.conclude(st, sims, gaps)

    def _unopened(self, st: SearchPlanState, key: str) -> str:
        """What the plan could not read of a paper. A paper with passages is covered (the card
        lists it so): its gap is the section it meant to read, never the paper itself."""
        if not any(p.item_key == key for p in st.passages):
            return f"{self._title(st, key)}: not opened yet (the budget ran out)"
        outline = self._outline(st, key)
        ids = self.sections_to_read(st, outline, key, self.passage_scores(st)) if outline else []
        heads = {e.id: e.heading for e in outline.entries} if outline else {}
        if ids and ids[0] in heads:
            return f"§ {heads[ids[0]]}: not read in full yet (the budget ran out)"
        return "the sections that state the answer: not read in full yet (the budget ran out)"

    def _title(self, st: SearchPlanState, key: str) -> str:
        for p in [*st.passages, *st.survey]:
            if key in (p.item_key, p.doc_key) and p.title:
                return f'"{p.title}"'
        o = st.outlines.get(key)
        return f'"{o.title}"' if o and o.title else "a candidate paper"

    def conclude(
        self, st: SearchPlanState, sims: dict[str, float], plan_gaps: list[str]
    ) -> ModelResponse:
        best = self.best_match(st, sims)
        gaps = [g for g in dict.fromkeys(plan_gaps) if g]
        if best < WEAK_EVIDENCE and not st.parts:
            gaps.append(f"no passage in the library closely matches the question: {st.question}")
        evidence_text = " ".join(
            f"{p.title} {p.section} {p.text}" for p in [*st.passages, *st.survey]
        )
        cat = st.brief.catalogue  # a name the library knows stands for its paper
        known = {m.surface for m in cat.mentions(st.question) if m.keys} if cat else set()
        ents = [] if st.parts else [e for e in entities(st.question) if e not in known]
        missing = [e for e in ents if not mentions(evidence_text, e)]
        if missing and len(missing) * 2 > len(ents):
            gaps.append("nothing found about " + ", ".join(missing))
        papers = {p.item_key for p in st.passages}
        read = sum(len(v) for v in st.read.values())
        # Plain words for the researcher's checkpoint card (the number stays in the notes).
        match = ("a close match" if best >= STRONG_EVIDENCE else
                 "a partial match" if best >= WEAK_EVIDENCE else "a weak match")  # fmt: skip
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


__all__ = ["OfflineSearch", "aspect", "bare_heading"]
