"""What the offline search planner knows at a step: what it was told (its `SearchBrief`: goal,
scope, the run's live budgets, the question's parts, the researcher's guidance) and what its
tools returned (the passages of each search, the outlines it opened, the sections it read).

Outlines are the papers' typed tables of contents, read from the index; the tool results are
the typed dicts the tools returned. Nothing is parsed out of a prompt, and the planner keeps no
state of its own: a run resumes anywhere (after a checkpoint, in another process) from its run
state and its messages.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage

from zocrates_nb.agents.offline.aspects import without_names
from zocrates_nb.agents.offline.brief import SearchBrief
from zocrates_nb.agents.offline.messages import exchanges, refused, result_dict
from zocrates_nb.agents.parts import Part
from zocrates_nb.retrieval.assets import section_heading, section_words
from zocrates_nb.retrieval.results import Refusal, succeeded
from zocrates_nb.retrieval.scope_words import scope_free
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.retrieval.tools import Toolkit
from zocrates_nb.retrieval.vectors import PassageVectors

_RETRIEVAL = ("search_corpus", "get_document_toc", "read_document")


@dataclass
class OutlineEntry:
    id: str
    heading: str
    words: int
    depth: int


@dataclass
class Outline:
    doc_key: str
    parent_key: str
    title: str
    entries: list[OutlineEntry] = field(default_factory=list)


@dataclass
class Passage:
    """One passage a search returned, remembering the query that found it."""

    chunk_id: str
    item_key: str
    doc_key: str
    title: str
    section: str
    section_id: str
    chunk_type: str
    text: str
    rank: int
    query: str
    evidence: Evidence  # as the run state holds it (line range and all), for its vectors


def passages_of(result: Any, query: str, held: dict[str, Evidence]) -> list[Passage]:
    """The passages of a `search_corpus` result (the run state's record of each, when it
    still holds one: a section read since replaces its passages)."""
    rows = result_dict(result).get("results") or []
    out = []
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            continue
        cid = str(r.get("chunk_id", ""))
        item = str(r.get("item_key", ""))
        doc = str(r.get("attachment_key") or item)
        ev = held.get(cid) or Evidence(
            chunk_id=cid, item_key=item, attachment_key=doc, text=str(r.get("text", "")),
            chunk_type=str(r.get("chunk_type", "body")),
        )  # fmt: skip
        out.append(
            Passage(
                chunk_id=cid,
                item_key=item,
                doc_key=doc,
                title=str(r.get("title", "")),
                section=str(r.get("section", "")),
                section_id=str(r.get("section_id", "")),
                chunk_type=str(r.get("chunk_type", "body")),
                text=str(r.get("text", "")),
                rank=int(r.get("rank") or i),
                query=query,
                evidence=ev,
            )
        )
    return out


@dataclass
class SearchPlanState:
    """The run as the planner sees it at one step."""

    goal: str  # the goal as searched (a thin follow-up's earlier question beside it)
    scope: str  # library | selection | collection
    active_keys: list[str]
    budget: int
    ceiling: int
    used: int
    words: int
    brief: SearchBrief
    outlines: dict[str, Outline] = field(default_factory=dict)  # by doc key and parent key
    injected: set[str] = field(default_factory=set)
    guidance: str = ""
    parts: list[Part] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    survey: list[Passage] = field(default_factory=list)
    searched_queries: set[tuple[str, str, str]] = field(default_factory=set)  # (q, type, key)
    toc_fetched: set[str] = field(default_factory=set)
    read: dict[str, set[str]] = field(default_factory=dict)  # key → asset ids read
    read_now: set[str] = field(default_factory=set)  # keys read in this pass
    read_sections: set[tuple[str, str]] = field(default_factory=set)  # (doc key, asset id)
    read_words: int = 0

    @property
    def question(self) -> str:
        """What headings and aspects are matched with: the goal as searched."""
        return self.goal

    @property
    def exhausted(self) -> bool:
        return self.used >= self.budget or self.words >= self.ceiling

    @property
    def vectors(self) -> PassageVectors:
        return self.brief.vectors


def _outline(brief: SearchBrief, key: str) -> Outline | None:
    """A paper's outline from its typed table of contents (None: not readable in this run)."""
    toolkit = Toolkit(brief.index, brief.state)
    doc = toolkit.resolve_document(key)
    if isinstance(doc, Refusal):
        return None
    try:
        toc = toolkit.bundle(doc.doc_key).toc
    except Exception:  # a broken bundle: the paper is searched, not read
        return None
    top = min((s.level for s in toc.sections if s.id != "s0"), default=1)
    entries = [
        OutlineEntry(s.id, section_heading(s), section_words(toc, s), max(s.level - top, 0))
        for s in toc.sections
        if s.id != "s0"
    ]
    return Outline(doc.doc_key, doc.parent_key, doc.title, entries)


def _add_outline(st: SearchPlanState, key: str) -> None:
    if key in st.outlines:
        return
    o = _outline(st.brief, key)
    if o is not None:
        for k in (key, o.doc_key, o.parent_key):
            st.outlines[k] = o


def part_key(st: SearchPlanState, part: Part) -> Any:
    """Where a part is searched: the papers it names (within a selection), else the scope."""
    items = part.items
    if st.scope == "selection":
        items = [k for k in items if k in st.active_keys]
    if items:
        return items[0] if len(items) == 1 else items
    return "active" if st.scope == "selection" else None


def inside_query(st: SearchPlanState, text: str, key: Any) -> str:
    """A search inside the papers `key` names asks what `text` asks of them, without the
    names it gives them: every passage of a paper is about it, and a name's words rank the
    passages that repeat it (an introduction, the conclusions) over the one that answers
    ("How do ZooKeeper keep reads fast?" inside ZooKeeper: "keep reads fast")."""
    inside = {key} if isinstance(key, str) else set(key or ())
    cat = st.brief.catalogue
    if cat is None or not inside or key == "active":
        return text
    names = [m.surface for m in cat.mentions(text) if m.keys and set(m.keys) <= inside]
    return without_names(text, names) or text


def part_queries(st: SearchPlanState, part: Part) -> set[str]:
    """The searches a part's passages came from: inside its papers, or the whole scope."""
    return {part.text, inside_query(st, part.text, part_key(st, part))}


def read_plan_state(brief: SearchBrief, messages: Sequence[ModelMessage]) -> SearchPlanState:
    """The run as its brief and its tool results tell it."""
    run = brief.state
    st = SearchPlanState(
        goal=scope_free(run.follow_up.context(run.goal) if run.follow_up else run.goal),
        scope=run.scope.kind,
        active_keys=list(run.active_keys),
        budget=run.budget,
        ceiling=run.word_ceiling,
        used=run.tool_count,
        words=run.words,
        brief=brief,
        injected=set(brief.injected),
        guidance=brief.guidance,
        parts=list(brief.parts),
    )
    for key in brief.injected:
        _add_outline(st, key)
    for i, entry in enumerate(run.tool_log):
        _note_attempt(st, entry.get("tool", ""), entry.get("args") or {}, i >= brief.pass_start)
    held = {e.chunk_id: e for e in run.evidence}
    for ex in exchanges(messages):
        if ex.tool not in _RETRIEVAL or refused(ex.result):
            continue
        d = result_dict(ex.result)
        if ex.tool == "search_corpus":
            ps = passages_of(ex.result, str(ex.args.get("query", "")), held)
            if ex.args.get("chunk_type") == "frontmatter":
                st.survey.extend(ps)
            else:
                st.passages.extend(p for p in ps if p.chunk_type != "frontmatter")
        elif ex.tool == "get_document_toc" and succeeded(d):
            _add_outline(st, str(ex.args.get("item_key", "")))
        elif ex.tool == "read_document":
            doc = str(d.get("doc_key") or d.get("item_key") or "")
            for a in d.get("assets") or []:
                if isinstance(a, dict):
                    st.read_words += int(a.get("words") or len(str(a.get("text", "")).split()))
                    st.read_sections.add((doc, str(a.get("asset_id", ""))))
    return st


def _note_attempt(st: SearchPlanState, tool: str, args: dict[str, Any], this_pass: bool) -> None:
    """What was tried (refused calls too): the planner never asks twice."""
    if tool == "search_corpus":
        key = args.get("item_key")
        st.searched_queries.add(
            (str(args.get("query", "")), str(args.get("chunk_type") or ""), str(key))
        )
    elif tool == "get_document_toc":
        st.toc_fetched.add(str(args.get("item_key", "")))
    elif tool == "read_document":
        key = str(args.get("item_key", ""))
        ids = args.get("asset_id") or ""
        id_list = ids if isinstance(ids, list) else re.findall(r"[a-z]+\d*", str(ids).lower())
        st.read.setdefault(key, set()).update(str(i) for i in id_list)
        if this_pass:
            st.read_now.add(key)


__all__ = [
    "Outline",
    "OutlineEntry",
    "Passage",
    "SearchPlanState",
    "inside_query",
    "part_key",
    "part_queries",
    "passages_of",
    "read_plan_state",
]
