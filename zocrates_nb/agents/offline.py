"""The embedded default: every role played without a language model, as pydantic-ai models.

With no model configured, the coordinator, the search agent and the synthesizer still run as the
same pydantic-ai agents with the same tools; only their model is a `FunctionModel` whose
"thinking" is deterministic code over the messages it is sent:

* coordinator: answers greetings and questions about itself, routes everything else to
  `search_library` (a follow-up is rewritten to stand alone with the previous turn's goal);
* search agent: searches passages, surveys candidate papers (frontmatter), opens outlines and
  reads the sections whose headings and passages best match the goal (embedding similarity over
  what the tools returned), reports gaps when the evidence is weak, then concludes;
* synthesizer: answers extractively — the evidence sentences that best answer the question
  (embedding similarity + lexical overlap, MMR for diversity), grouped by paper and cited `[n]` —
  or says plainly that the library holds no evidence.

Everything it writes says it was made without a language model.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import re
import threading
import xml.etree.ElementTree as ET
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from zocrates_nb.agents import textutil as tu

OFFLINE_LABEL = "embedded offline engine (no language model)"
NO_LM_NOTE = (
    "_Answered by the embedded offline engine, without a language model: the sentences above "
    "are quoted from your papers, not paraphrased. Configure a model for written answers._"
)

# Calibrated on the development questions (scripts/eval_answers.py): the best evidence sentence
# of an answerable question scores well above this; off-topic questions stay below it.
RELEVANCE_FLOOR = 0.45
HARD_FLOOR = 0.30
# Search: a passage whose similarity to the goal is below this counts as weak evidence.
WEAK_EVIDENCE = 0.38
NOTHING_RELEVANT = 0.30
MAX_ANSWER_SENTENCES = 8
MAX_ANSWER_WORDS = 230


# ============================================================================ embeddings
class SentenceEmbeddings:
    """Normalised sentence embeddings with a bounded in-process cache (shared model load)."""

    def __init__(self, model_name: str | None = None, cache_size: int = 20000) -> None:
        from zocrates_nb.index.embedder import Embedder

        self._embedder = Embedder(model_name)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._size = cache_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._embedder.name

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            vecs = np.asarray(self._embedder.embed(list(missing)), dtype=np.float32)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._cache[t] = v
                    self._cache.move_to_end(t)
                while len(self._cache) > self._size:
                    self._cache.popitem(last=False)
        with self._lock:
            rows = []
            for t in texts:
                v = self._cache.get(t)
                if v is None:  # evicted between the two locks: embed again
                    v = np.asarray(self._embedder.embed([t])[0], dtype=np.float32)
                rows.append(v)
        if not rows:
            return np.zeros((0, 1), dtype=np.float32)
        return np.vstack(rows)

    def similarity(self, query: str, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float32)
        m = self.embed([query, *texts])
        return np.asarray(m[1:] @ m[0], dtype=np.float32)


# ============================================================================ message helpers
def user_prompts(messages: Sequence[ModelMessage]) -> list[str]:
    out: list[str] = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, UserPromptPart) and isinstance(p.content, str):
                    out.append(p.content)
    return out


@dataclass
class Exchange:
    tool: str
    args: dict[str, Any]
    result: Any
    position: int = 0  # index of the message holding the call


def exchanges(messages: Sequence[ModelMessage]) -> list[Exchange]:
    """Tool calls paired with their returns, in order."""
    calls: dict[str, ToolCallPart] = {}
    where: dict[str, int] = {}
    order: list[str] = []
    results: dict[str, Any] = {}
    from pydantic_ai.messages import ModelResponse as _Resp

    for i, m in enumerate(messages):
        if isinstance(m, _Resp):
            for rp in m.parts:
                if isinstance(rp, ToolCallPart):
                    calls[rp.tool_call_id] = rp
                    where[rp.tool_call_id] = i
                    order.append(rp.tool_call_id)
        elif isinstance(m, ModelRequest):
            for qp in m.parts:
                if isinstance(qp, ToolReturnPart):
                    results[qp.tool_call_id] = qp.content
    out = []
    for cid in order:
        call = calls[cid]
        out.append(Exchange(call.tool_name, call.args_as_dict(), results.get(cid), where[cid]))
    return out


def sections_of(prompt: str) -> dict[str, str]:
    """`# Heading` blocks of a prompt → {heading: body}."""
    out: dict[str, str] = {}
    parts = re.split(r"^# (.+)$", prompt, flags=re.M)
    for i in range(1, len(parts) - 1, 2):
        out[parts[i].strip()] = parts[i + 1].strip()
    return out


def _result_dict(result: Any) -> dict[str, Any]:
    if isinstance(result, dict):
        return result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except (json.JSONDecodeError, ValueError):
            return {"text": result}
        return data if isinstance(data, dict) else {"results": data}
    if isinstance(result, list):
        return {"results": result}
    return {}


def _refused(result: Any) -> bool:
    d = _result_dict(result)
    return d.get("status") in ("budget_exhausted", "refused", "error", "out_of_scope")


def _norm_heading(h: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", h.lower()).strip()


def _section_number(h: str) -> str:
    m = re.match(r"\s*((?:[A-Z]|\d+)(?:\.\d+)*)\.?\s", h)
    return m.group(1) if m else ""


# ============================================================================ streaming
def _stream_from(
    compute: Callable[[list[ModelMessage], AgentInfo], ModelResponse],
) -> Callable[[list[ModelMessage], AgentInfo], AsyncIterator[str | DeltaToolCalls]]:
    """A `stream_function` that computes the whole response off the event loop, then streams it."""

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        response = await asyncio.to_thread(compute, messages, info)
        for part in response.parts:
            if isinstance(part, TextPart):
                # Stream line by line (and long lines by sentence) so the reader sees it arrive.
                for piece in re.findall(r"[^\n]*\n|[^\n]+$", part.content):
                    for sub in re.findall(r".*?(?:[.!?]\s+|$)", piece, flags=re.S):
                        if sub:
                            yield sub
                            await asyncio.sleep(0)
            elif isinstance(part, ToolCallPart):
                yield {
                    0: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }

    stream.__name__ = getattr(compute, "__name__", "offline")
    return stream


def _model(
    name: str, compute: Callable[[list[ModelMessage], AgentInfo], ModelResponse]
) -> FunctionModel:
    return FunctionModel(compute, stream_function=_stream_from(compute), model_name=name)


def _call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def _text(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])


# ============================================================================ coordinator
_GREETING_RE = re.compile(
    r"^(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening|day)|yo|"
    r"thanks?( you)?( very much| so much| a lot)?|thank you|thx|cheers|ok(ay)?|great|cool|nice|"
    r"awesome|perfect|bye|goodbye|see you|got it|understood|sounds good)\b[\s!.,:)]*"
    r"(zocrates)?[\s!.,:)]*$",
    re.I,
)
_META_RE = re.compile(
    r"\b(who are you|what are you|what can you do|what do you do|how do you work|"
    r"are you (an? )?(ai|bot|language model|llm|human)|which (language )?model|what model|"
    r"what is zocrates|introduce yourself|your name|help me use|how (do|can) i use you|"
    r"what('s| is) (this|your) (tool|assistant))\b",
    re.I,
)
_FOLLOWUP_RE = re.compile(
    r"^(and|but|also|so|then|what about|how about|why( not)?|how come|tell me more|more on|"
    r"elaborate|explain (that|this|it|more|further)|go on|continue|what else|any other|"
    r"is that|are they|does it|do they|can it|could you expand)\b",
    re.I,
)
_ANAPHORA_RE = re.compile(
    r"\b(it|its|they|them|their|this|that|these|those|he|she|his|her)\b", re.I
)

SELF_DESCRIPTION = (
    "Hello! I'm zocrates, a research assistant for your own Zotero library. Ask me about your "
    "papers — the whole library, a collection, or the items you select — and I'll search them, "
    "read the relevant sections and answer with citations I have checked against the text.\n\n"
    "Right now no language model is configured, so I run on the embedded offline engine: I "
    "answer by quoting the sentences of your papers that best match your question, without a "
    "language model. Configure a model (see `zocrates-nb doctor`) for written answers."
)


def _previous_goal(messages: Sequence[ModelMessage]) -> str:
    for ex in reversed(exchanges(messages)):
        if ex.tool == "search_library":
            return str(ex.args.get("request", ""))
    return ""


def standalone_goal(message: str, previous_goal: str) -> str:
    """Rewrite a follow-up so it stands alone, noting what the previous turn was about."""
    msg = " ".join(message.split())
    if not previous_goal:
        return msg
    n_words = len(tu.words(msg))
    content = tu.terms(msg)
    follow = bool(_FOLLOWUP_RE.search(msg)) or (n_words <= 12 and bool(_ANAPHORA_RE.search(msg)))
    if not follow and len(content) >= 3:
        return msg
    if not follow and n_words > 6:
        return msg
    return f"{msg.rstrip('?. ')}? (Follow-up to the earlier question: {previous_goal.rstrip()})"


def coordinator_compute(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompts = user_prompts(messages)
    message = prompts[-1].strip() if prompts else ""
    if not message or _GREETING_RE.match(message) or _META_RE.search(message):
        if re.match(r"^(thanks?|thank you|thx|cheers)", message, re.I):
            return _text(
                "You're welcome! Ask me anything else about your papers.\n\n"
                "_(Embedded offline engine, no language model.)_"
            )
        if re.match(r"^(bye|goodbye|see you)", message, re.I):
            return _text(
                "Goodbye! Your conversation is saved; come back to it any time.\n\n"
                "_(Embedded offline engine, no language model.)_"
            )
        return _text(SELF_DESCRIPTION)
    goal = standalone_goal(message, _previous_goal(messages))
    tool_names = {t.name for t in (*info.output_tools, *info.function_tools)}
    if "search_library" not in tool_names:
        return _text(
            "I can only answer from your library, and searching it is not available "
            "right now. _(Embedded offline engine, no language model.)_"
        )
    return _call("search_library", {"request": goal})


# ============================================================================ search agent
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


def _passages(result: Any, query: str) -> list[Passage]:
    d = _result_dict(result)
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
    passages: list[Passage] = field(default_factory=list)
    survey: list[Passage] = field(default_factory=list)
    searched_queries: set[tuple[str, str, str]] = field(default_factory=set)  # (q, type, key)
    toc_fetched: set[str] = field(default_factory=set)
    read: dict[str, set[str]] = field(default_factory=dict)  # key → asset ids read
    read_sections: set[tuple[str, str]] = field(default_factory=set)  # (doc key, asset id)
    read_words: int = 0
    used: int = 0
    exhausted: bool = False


class OfflineSearch:
    """The search agent's policy, recomputed from the messages at each step (resumes anywhere).

    Plan: passage search for the goal → survey candidate papers (frontmatter) → for the best
    one to three papers: a focused keyword search inside the paper, its outline, and a read of
    the one or two sections that the passages and headings point to → conclude. A plan that
    does not fit the budget ends with what is left as gaps (the researcher may extend).
    """

    def __init__(self, emb: SentenceEmbeddings) -> None:
        self.emb = emb

    # -------------------------------------------------------------- reading the conversation
    def state(self, messages: Sequence[ModelMessage]) -> SearchPlanState:
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
        )
        # Only refusals and notices since the latest prompt count: an extension lifts them.
        last_prompt = max(
            (
                i
                for i, m in enumerate(messages)
                if isinstance(m, ModelRequest)
                and any(isinstance(p, UserPromptPart) for p in m.parts)
            ),
            default=0,
        )
        for ex in exchanges(messages):
            if ex.tool not in ("search_corpus", "get_document_toc", "read_document"):
                continue
            self._note_attempt(st, ex)
            current = ex.position > last_prompt
            if _refused(ex.result):
                if current and _result_dict(ex.result).get("status") == "budget_exhausted":
                    st.exhausted = True
                continue
            st.used += 1
            d = _result_dict(ex.result)
            notice = str(d.get("notice", "")).lower()
            if current and ("exhausted" in notice or "ceiling reached" in notice):
                st.exhausted = True
            if ex.tool == "search_corpus":
                q = str(ex.args.get("query", ""))
                ps = _passages(ex.result, q)
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
                doc = str(d.get("doc_key") or d.get("item_key") or "")
                for a in d.get("assets") or []:
                    if isinstance(a, dict):
                        st.read_words += int(a.get("words") or len(str(a.get("text", "")).split()))
                        st.read_sections.add((doc, str(a.get("asset_id", ""))))
        if st.used >= budget:
            st.exhausted = True
        return st

    def _note_attempt(self, st: SearchPlanState, ex: Exchange) -> None:
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

    # -------------------------------------------------------------- judging what was found
    def passage_scores(self, st: SearchPlanState) -> dict[str, float]:
        """How well each passage (by chunk id) matches the goal: its best sentence counts most,
        since a long passage's single embedding dilutes the one sentence that answers."""
        ps = [p for p in st.passages if p.text]
        if not ps:
            return {}
        whole = self.emb.similarity(st.goal, [p.text[:1500] for p in ps])
        sents: list[str] = []
        owner: list[int] = []
        for i, p in enumerate(ps):
            for sent in tu.split_sentences(tu.strip_reference_markers(p.text)):
                if len(sent.split()) >= 5:
                    sents.append(sent)
                    owner.append(i)
        best = [float(w) for w in whole]
        if sents:
            ss = self.emb.similarity(st.goal, sents)
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
            if p.query != st.goal:
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
        n = 0 if self._focused_done(st, key) else 1
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
        for ent in tu.entities(st.goal):
            named = [k for k, _ in ranking if tu.mentions(titles.get(k, ""), ent)]
            if named and not any(k in chosen for k in named):
                chosen.append(named[0])
        return chosen[:3]

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
        self, st: SearchPlanState, outline: Outline, key: str, sims: dict[str, float]
    ) -> list[str]:
        """The one or two sections the passages (and headings) point to."""
        skip = re.compile(r"\b(references|bibliography|acknowledg|appendix)", re.I)
        entries = {
            e.id: e
            for e in outline.entries
            if e.id not in ("s0", "abstract") and not skip.search(e.heading)
        }
        by_norm = {_norm_heading(e.heading): e for e in entries.values()}
        score: dict[str, float] = {}
        peak: dict[str, float] = {}
        words: dict[str, int] = {k: e.words for k, e in entries.items()}
        for p in st.passages:
            if key not in (p.item_key, p.doc_key) and outline.doc_key != p.doc_key:
                continue
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
            hs = self.emb.similarity(st.goal, [entries[i].heading for i in ids])
            for i, h in zip(ids, hs, strict=True):
                if i in score or float(h) >= 0.5:
                    score[i] = score.get(i, 0.0) + 0.3 * max(float(h), 0.0)
        if not score:
            return []
        already = st.read.get(key, set()) | st.read.get(outline.doc_key, set())
        already |= st.read.get(outline.parent_key, set())
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

    # -------------------------------------------------------------- the next step
    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        st = self.state(messages)
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
            return _call("search_corpus", args)

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
            if not self._focused_done(st, key):
                return search(self._focused_query(st), key, limit=6)
            outline = self._outline(st, key)
            if outline is None:
                if key in st.toc_fetched:
                    return None
                return _call("get_document_toc", {"item_key": key})
            ids = self.sections_to_read(st, outline, key, sims)
            if ids and not st.read.get(key):
                return _call("read_document", {"item_key": key, "asset_id": ", ".join(ids)})
            return None

        plan.append(("passages", passage_search))
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
                    name not in ("passages", "survey")
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
            elif name == "survey":
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
        ents = tu.entities(st.goal)
        missing = [e for e in ents if not tu.mentions(evidence_text, e)]
        if missing and len(missing) * 2 > len(ents):
            gaps.append("nothing found about " + ", ".join(missing))
        papers = {p.item_key for p in st.passages}
        read = sum(len(v) for v in st.read.values())
        summary = (
            f"{len(st.passages)} passages from {len(papers)} papers"
            + (f" and {read} sections read in full" if read else "")
            + f"; best match similarity {best:.2f}."
        )
        notes = (
            "Offline search (no language model): passages chosen by hybrid search, "
            "sections by outline."
        )
        return _call("conclude_search", {"summary": summary, "notes": notes, "gaps": gaps})


# ============================================================================ synthesizer
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
_QUANTITY_IN_TEXT_RE = re.compile(
    r"(?<![\w.])(?!(?:1[89]|20)\d\d[a-z]?\b)\d[\d,.]*(\s?%|\b)", re.I
)
_POINTER_RE = re.compile(
    r"\b(section|sec\.|table|figure|fig\.|eq\.|equation|appendix|§)\s*[A-Z]?\d[\d.]*", re.I
)


def _states_quantity(sentence: str) -> bool:
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


class OfflineSynthesizer:
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
        ws = list(dict.fromkeys(w for w in ws if len(w) >= 3 and w not in tu.STOPWORDS))
        if self.lexicon is None:
            return [], len(ws)
        return [w for w in ws if not self.lexicon(w)], len(ws)

    def off_topic(
        self, question: str, top: float, missing_entities: list[str], entities: list[str]
    ) -> bool:
        """The calibrated decision that the library holds no evidence on the question."""
        if top < HARD_FLOOR:
            return True
        if entities and len(missing_entities) * 2 > len(entities):
            return True
        unknown, n = self.unknown_words(question)
        share = len(unknown) / n if n else 0.0
        if share >= 0.3:
            return True
        return share >= 0.15 and top < RELEVANCE_FLOOR

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompts = user_prompts(messages)
        prompt = prompts[-1] if prompts else ""
        return _text(self.answer(prompt))

    def candidates(self, chunks: Sequence[EvidenceChunk]) -> list[Candidate]:
        """Quotable sentences of the evidence, with their paragraph and position."""
        out: list[Candidate] = []
        seen: set[str] = set()
        for ch in chunks:
            order = 0
            text = tu.clean_passage(tu.strip_reference_markers(ch.text))
            for para_no, para in enumerate(re.split(r"\n\s*\n", text)):
                for sent in _attach_short(tu.split_sentences(para)):
                    sent = re.sub(r"\s+", " ", sent).strip()
                    order += 1
                    key = sent.lower()
                    if key in seen or not tu.is_prose(sent):
                        continue
                    seen.add(key)
                    out.append(Candidate(ch, order, sent, paragraph=para_no))
        return out

    def score(self, question: str, cands: list[Candidate]) -> None:
        if not cands:
            return
        dense = self.emb.similarity(question, [c.text for c in cands])
        doc_terms = [tu.terms(c.text) for c in cands]
        stats = tu.TermStats(doc_terms)
        q_terms = tu.terms(question)
        n_chunks = max(c.chunk.index for c in cands)
        # "How many…", "what rate…": the sentence that states a number is the answer; a
        # sentence that only talks about the topic is not.
        wants_number = bool(_QUANTITY_RE.search(question))
        for c, d, t in zip(cands, dense, doc_terms, strict=True):
            lex = stats.overlap(q_terms, t)
            prior = 0.03 * (1 - (c.chunk.index - 1) / max(n_chunks, 1))
            states = 0.05 if wants_number and _states_quantity(c.text) else 0.0
            c.score = 0.72 * float(d) + 0.28 * lex + prior + states

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
            stats = tu.TermStats([tu.terms(c.text) for c in cands])
            q_terms = tu.terms(question)
            for run, d, t in zip(runs, dense, texts, strict=True):
                lex = stats.overlap(q_terms, tu.terms(t))
                best = max(c.score for c in run)
                score = 0.55 * float(d) + 0.2 * lex + 0.25 * best - 0.015 * (len(run) - 1)
                units.append((run, score))
        return units

    def select(self, question: str, cands: list[Candidate]) -> list[tuple[list[Candidate], float]]:
        """Greedy MMR over answer units (no sentence twice), at most MAX_ANSWER_SENTENCES
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
        while n_sent < MAX_ANSWER_SENTENCES and words < MAX_ANSWER_WORDS:
            best_i, best_v = -1, -1e9
            titles = {pool[j][0][0].chunk.title for j in chosen}
            for i, (run, score) in enumerate(pool):
                if i in chosen or any(id(c) in used for c in run):
                    continue
                if n_sent + len(run) > MAX_ANSWER_SENTENCES + 1:
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
                    and n_sent + len(r) <= MAX_ANSWER_SENTENCES + 1
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
        ents = tu.entities(question.split("(Follow-up", 1)[0])
        if len(ents) < 2:
            return extra

        def covers(units: list[tuple[list[Candidate], float]], ent: str) -> bool:
            return any(
                tu.mentions(u[0][0].chunk.title + " " + " ".join(c.text for c in u[0]), ent)
                for u in units
            )

        for ent in ents:
            if covers(picked + extra, ent):
                continue
            about = [
                u
                for u in pool
                if not any(id(c) in used for c in u[0])
                and (
                    tu.mentions(u[0][0].chunk.title, ent)
                    or any(tu.mentions(c.text, ent) for c in u[0])
                )
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
        cands = self.candidates(chunks)
        self.score(question, cands)
        everything = " ".join(f"{c.title} {c.section} {c.text}" for c in chunks)
        ents = tu.entities(user_query + " " + question.split("(Follow-up", 1)[0])
        missing = [e for e in ents if not tu.mentions(everything, e)]
        top = max((c.score for c in cands), default=0.0)
        if not cands or self.off_topic(question.split("(Follow-up", 1)[0], top, missing, ents):
            about = f" (nothing in it mentions {', '.join(missing)})" if missing else ""
            return (
                "The library holds no evidence on this question: none of the passages found "
                f"addresses it{about}, so there is nothing I can cite.\n\n"
                "_Answered by the embedded offline engine, without a language model._"
            )
        picked = self.select(question, cands)
        # Group by paper (papers in order of their best passage); passages in reading order,
        # each quoted as one bullet with its citation.
        groups: dict[str, list[tuple[list[Candidate], float]]] = {}
        for run, score in sorted(picked, key=lambda u: u[1], reverse=True):
            groups.setdefault(run[0].chunk.title, []).append((run, score))
        lines = ["What the papers in your library say, in their own words:", ""]
        for title, runs in groups.items():
            ch = runs[0][0][0].chunk
            who = ", ".join(x for x in (ch.authors, ch.year if ch.year != "n.d." else "") if x)
            lines.append(f"**{title}**" + (f" ({who})" if who else ""))
            for run, _ in sorted(runs, key=lambda u: (u[0][0].chunk.index, u[0][0].order)):
                sents = []
                for c in run:
                    t = c.text.rstrip()
                    sents.append(t if t[-1:] in ".!?" else t + ".")
                first = run[0].chunk
                section = f" _(§ {first.section})_" if first.section else ""
                lines.append(f"- {' '.join(sents)} [{first.index}]{section}")
            lines.append("")
        if missing:
            lines.append(f"The evidence does not mention: {', '.join(missing)}.")
            lines.append("")
        real_gaps = [g for g in gaps if not g.startswith("passages not yet")]
        if real_gaps:
            lines.append("Not covered by the evidence gathered: " + "; ".join(real_gaps) + ".")
            lines.append("")
        lines.append(NO_LM_NOTE)
        return "\n".join(lines)


# ============================================================================ verifier
def offline_support(emb: SentenceEmbeddings, claim: str, passage: str) -> float:
    """Probability-like support of `claim` by `passage`: 1.0 for a quote, else the best
    sentence similarity mapped through a logistic calibrated on MiniLM cosines."""
    c = re.sub(r"\s+", " ", tu.strip_reference_markers(claim)).strip(" .-*_")
    c = re.sub(r"_\(§[^)]*\)_", "", c).strip()
    if not c:
        return 0.0
    flat = re.sub(r"\s+", " ", tu.strip_reference_markers(tu.clean_passage(passage))).lower()
    if c.lower().rstrip(".") in flat:
        return 1.0
    sents = [s for s in tu.split_sentences(passage) if len(s.split()) >= 4] or [passage[:2000]]
    # Windows of two sentences catch claims that merge adjacent sentences.
    windows = sents + [f"{a} {b}" for a, b in itertools.pairwise(sents)]
    sims = emb.similarity(c, windows[:400])
    best = float(sims.max()) if len(sims) else 0.0
    lex = tu.TermStats([tu.terms(w) for w in windows]).overlap(tu.terms(c), tu.terms(passage))
    x = 0.75 * best + 0.25 * lex
    return float(1 / (1 + np.exp(-14 * (x - 0.45))))


# ============================================================================ the engine
class OfflineEngine:
    """One per process: the embedding model is loaded once and shared by all roles."""

    _instances: ClassVar[dict[str, OfflineEngine]] = {}
    _lock = threading.Lock()

    def __init__(
        self, embedding_model: str | None = None, lexicon: Callable[[str], bool] | None = None
    ) -> None:
        self.emb = SentenceEmbeddings(embedding_model)
        self.coordinator = _model("zocrates-offline:coordinator", coordinator_compute)
        self.search = _model("zocrates-offline:search", OfflineSearch(self.emb))
        self.synthesizer = _model(
            "zocrates-offline:synthesizer", OfflineSynthesizer(self.emb, lexicon)
        )

    @classmethod
    def shared(cls, embedding_model: str | None = None) -> OfflineEngine:
        key = embedding_model or ""
        with cls._lock:
            eng = cls._instances.get(key)
            if eng is None:
                eng = cls._instances[key] = cls(embedding_model)
            return eng

    def model_for(self, role: str) -> FunctionModel:
        return {
            "coordinator": self.coordinator,
            "search": self.search,
            "synthesizer": self.synthesizer,
        }[role]

    def support(self, claim: str, passage: str) -> float:
        return offline_support(self.emb, claim, passage)
