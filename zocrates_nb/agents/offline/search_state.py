"""What the offline search planner knows, rebuilt from the messages at each step: the outlines
and passages the tools returned, what was searched and read, and the budgets left.

The planner keeps no state of its own, so a run resumes anywhere (after a checkpoint, in
another process) from its messages alone."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from zocrates_nb.agents.offline.messages import (
    Exchange,
    exchanges,
    refused,
    result_dict,
    sections_of,
    user_prompts,
)
from zocrates_nb.agents.parts import PARTS_HEADING, Part, parse_parts


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


_OUTLINE_HEADER_RE = re.compile(
    r"^###\s*\[Key:\s*([^,\]]+)(?:,\s*Parent Key:\s*([^\]]+))?\]\s*\"?(.*?)\"?\s*$", re.M
)
_OUTLINE_LINE_RE = re.compile(r"^(\s*)- \[([a-z]+\d*)\]\s*(.*?)\s*(?:\(~(\d+) words\))?\s*$")


def parse_outlines(text: str) -> list[Outline]:
    """The outlines in a tool result or prompt (as `retrieval.outline` renders them)."""
    out: list[Outline] = []
    cur: Outline | None = None
    for line in text.splitlines():
        m = _OUTLINE_HEADER_RE.match(line)
        if m:
            doc, parent = m.group(1).strip(), (m.group(2) or m.group(1)).strip()
            cur = Outline(doc, parent, m.group(3).strip())
            out.append(cur)
            continue
        if cur is None:
            continue
        lm = _OUTLINE_LINE_RE.match(line)
        if lm and re.fullmatch(r"s\d+|abstract", lm.group(2)):
            cur.entries.append(
                OutlineEntry(lm.group(2), lm.group(3), int(lm.group(4) or 0), len(lm.group(1)) // 2)
            )
    return out


@dataclass
class Passage:
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


def passages_of(result: Any, query: str) -> list[Passage]:
    """The passages a `search_corpus` result holds, each remembering the query that found it."""
    d = result_dict(result)
    rows = d.get("results") or d.get("hits") or d.get("chunks") or []
    out = []
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict):
            continue
        out.append(
            Passage(
                chunk_id=str(r.get("chunk_id", "")),
                item_key=str(r.get("item_key", "")),
                doc_key=str(r.get("attachment_key") or r.get("doc_key") or r.get("item_key", "")),
                title=str(r.get("title", "")),
                section=str(r.get("section", "")),
                section_id=str(r.get("section_id", "")),
                chunk_type=str(r.get("chunk_type", "body")),
                text=str(r.get("text", "")),
                rank=int(r.get("rank") or i),
                query=query,
            )
        )
    return out


@dataclass
class SearchPlanState:
    """What the messages so far say about the run (rebuilt from them at each step)."""

    goal: str
    scope: str  # library | selection | collection
    active_keys: list[str]
    budget: int
    ceiling: int
    outlines: dict[str, Outline]  # by doc key and by parent key
    injected: set[str]
    guidance: str = ""
    parts: list[Part] = field(default_factory=list)  # a compound question's parts
    passages: list[Passage] = field(default_factory=list)
    survey: list[Passage] = field(default_factory=list)
    searched_queries: set[tuple[str, str, str]] = field(default_factory=set)  # (q, type, key)
    toc_fetched: set[str] = field(default_factory=set)
    read: dict[str, set[str]] = field(default_factory=dict)  # key → asset ids read
    read_now: set[str] = field(default_factory=set)  # keys read since the latest prompt
    read_sections: set[tuple[str, str]] = field(default_factory=set)  # (doc key, asset id)
    read_words: int = 0
    used: int = 0
    exhausted: bool = False


def read_plan_state(messages: Sequence[ModelMessage]) -> SearchPlanState:
    """The run as the messages tell it: goal, scope, budgets and guidance from the prompts;
    passages, outlines and reads from the tool results."""
    prompts = user_prompts(messages)
    first = prompts[0] if prompts else ""
    secs = sections_of(first)
    goal = secs.get("Target Search Goal", "").strip() or first.strip()
    scope_text = secs.get("Scope", "").lower()
    scope = "library"
    if "selected" in scope_text or "active" in scope_text:
        scope = "selection"
    elif "collection" in scope_text:
        scope = "collection"
    context = secs.get("Context: Active Items Selected in Zotero", "")
    active = re.findall(r"\[Key:\s*([A-Za-z0-9]+)\]", context)
    budget = 10
    ceiling = 7500
    guidance = ""
    for p in prompts:
        m = re.search(r"(\d+) retrieval tool calls", p)
        if m:
            budget = int(m.group(1))
        m = re.search(r"([\d,]+) words of evidence", p)
        if m:
            ceiling = int(m.group(1).replace(",", ""))
        g = sections_of(p).get("Researcher's Guidance")
        if g:
            guidance = g.split("\n(Follow this guidance", 1)[0].strip()
    outlines: dict[str, Outline] = {}
    injected: set[str] = set()
    for o in parse_outlines(first):
        outlines[o.doc_key] = outlines[o.parent_key] = o
        injected |= {o.doc_key, o.parent_key}
    st = SearchPlanState(
        goal=goal,
        scope=scope,
        active_keys=active,
        budget=budget,
        ceiling=ceiling,
        outlines=outlines,
        injected=injected,
        guidance=guidance,
        parts=parse_parts(secs.get(PARTS_HEADING, "")),
    )
    # Only refusals and notices since the latest prompt count: an extension lifts them.
    last_prompt = max(
        (
            i
            for i, m in enumerate(messages)
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
        ),
        default=0,
    )
    for ex in exchanges(messages):
        if ex.tool not in ("search_corpus", "get_document_toc", "read_document"):
            continue
        _note_attempt(st, ex)
        current = ex.position > last_prompt
        if refused(ex.result):
            if current and result_dict(ex.result).get("status") == "budget_exhausted":
                st.exhausted = True
            continue
        st.used += 1
        d = result_dict(ex.result)
        notice = str(d.get("notice", "")).lower()
        if current and ("exhausted" in notice or "ceiling reached" in notice):
            st.exhausted = True
        if ex.tool == "search_corpus":
            q = str(ex.args.get("query", ""))
            ps = passages_of(ex.result, q)
            if ex.args.get("chunk_type") == "frontmatter":
                st.survey.extend(ps)
            else:
                st.passages.extend(p for p in ps if p.chunk_type != "frontmatter")
        elif ex.tool == "get_document_toc":
            for o in parse_outlines(str(d.get("outline") or "")):
                outlines[o.doc_key] = outlines[o.parent_key] = o
                key = str(ex.args.get("item_key", ""))
                if key:
                    outlines[key] = o
        elif ex.tool == "read_document":
            if current:
                st.read_now.add(str(ex.args.get("item_key", "")))
            doc = str(d.get("doc_key") or d.get("item_key") or "")
            for a in d.get("assets") or []:
                if isinstance(a, dict):
                    st.read_words += int(a.get("words") or len(str(a.get("text", "")).split()))
                    st.read_sections.add((doc, str(a.get("asset_id", ""))))
    if st.used >= budget:
        st.exhausted = True
    return st


def _note_attempt(st: SearchPlanState, ex: Exchange) -> None:
    """What was tried (even when refused): the planner never asks twice."""
    if ex.tool == "search_corpus":
        key = ex.args.get("item_key")
        st.searched_queries.add(
            (str(ex.args.get("query", "")), str(ex.args.get("chunk_type") or ""), str(key))
        )
    elif ex.tool == "get_document_toc":
        st.toc_fetched.add(str(ex.args.get("item_key", "")))
    elif ex.tool == "read_document":
        key = str(ex.args.get("item_key", ""))
        ids = ex.args.get("asset_id", "")
        id_list = ids if isinstance(ids, list) else re.findall(r"[a-z]+\d*", str(ids).lower())
        st.read.setdefault(key, set()).update(str(i) for i in id_list)
