"""Discovery as a conversation: the online search agent and the online synthesizer.

`search_online_literature`, the coordinator's second output tool, runs `discover_papers`:

1. Nothing goes online unless `online.enabled` is on: otherwise the answer is the message that
   says how to turn it on, and nothing is sent.
2. The online search agent (role `online_search`) queries the enabled scholarly sources through
   the turn's `discover` callable (the app's: it marks what the library holds and remembers the
   candidates for `stage add ID`). Budget discipline like the library search: at most
   `MAX_SOURCE_QUERIES` queries per turn, and a query already answered is never sent again.
3. The online synthesizer (role `online_synthesizer`) picks the recommendations, in order, each
   with a one-sentence *why*. Its picks are checked, not trusted: an id no source returned is
   dropped, a paper the library holds is never recommended again, and a why that is not a
   sentence (or clause) of that paper's abstract is replaced by the extractive one.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field
from pydantic_ai import (
    Agent,
    ModelRetry,
    RunContext,
    ToolOutput,
    UsageLimitExceeded,
    capture_run_messages,
)
from pydantic_ai.usage import UsageLimits

from zocrates_nb.agents.offline.brief import OnlineSearchBrief, RecommendBrief, briefed
from zocrates_nb.agents.offline.discovery import key_phrases
from zocrates_nb.agents.prompts import (
    ONLINE_SEARCH_INSTRUCTION,
    ONLINE_SYNTHESIZER_INSTRUCTION,
    online_search_input,
    online_synthesis_prompt,
)
from zocrates_nb.agents.runtime import RoleModel, TurnContext, role_call
from zocrates_nb.errors import ZocratesError
from zocrates_nb.online import OnlineDisabled
from zocrates_nb.online.sources import enabled_sources
from zocrates_nb.text import shorten, terms
from zocrates_nb.turn import Candidate, Discovery

ONLINE_TOOL = "search_online_literature"
SEARCH_SOURCES_TOOL = "search_scholarly_sources"
FINISH_TOOL = "finish_search"
RECOMMEND_TOOL = "recommend_papers"
MAX_SOURCE_QUERIES = 3  # source queries per turn (each asks every enabled source once)
MAX_RECOMMENDATIONS = 10
SHOWN_CANDIDATES = 25  # what the synthesizer is shown, best first
WHY_MIN_WORDS = 4


@dataclass
class DiscoveryOutcome:
    """How a discovery run ended: the record for the turn and the answer that lists it."""

    goal: str
    discovery: Discovery
    text: str
    queries: list[str] = field(default_factory=list)  # what was sent to the sources


# ============================================================================ online search
@dataclass
class OnlineSearchDeps:
    turn: TurnContext
    sources: list[str]  # the enabled sources' names, for the steps
    queries: list[str] = field(default_factory=list)
    found: list[Discovery] = field(default_factory=list)
    sent: set[str] = field(default_factory=set)  # normalised queries already answered
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class SearchFinished:
    summary: str = ""


def query_key(query: str) -> str:
    """The same query however it is cased, punctuated, ordered or inflected."""
    return " ".join(sorted(set(terms(query))))


async def search_scholarly_sources(ctx: RunContext[OnlineSearchDeps], query: str) -> dict[str, Any]:
    """Search the enabled scholarly sources (arXiv, Crossref, Semantic Scholar, OpenAlex) for
    papers. Each call asks every source once; calls are limited, so make each count.

    Args:
        query: a few key terms (the topic, not a sentence), or a DOI or arXiv id to look up.
    """
    deps = ctx.deps
    query = " ".join(query.split())
    if not query:
        raise ModelRetry("Give a query of a few key terms.")
    async with deps.lock:
        key = query_key(query) or query.lower()
        if key in deps.sent:
            return {"status": "duplicate", "message": "This query was already sent; its papers "
                    f"are above. Call {FINISH_TOOL}, or search for different terms."}  # fmt: skip
        if len(deps.queries) >= MAX_SOURCE_QUERIES:
            return {"status": "budget_exhausted", "message": f"The {MAX_SOURCE_QUERIES} source "
                    f"queries of this turn are used: call {FINISH_TOOL} now."}  # fmt: skip
        deps.sent.add(key)
        deps.queries.append(query)
        found = await _query_sources(deps, query)
        deps.found.append(found)
    left = MAX_SOURCE_QUERIES - len(deps.queries)
    return {
        "status": "success",
        "query": query,
        "papers": [_brief(c) for c in found.candidates],
        "errors": found.errors,
        "queries_left": left,
    }


async def _query_sources(deps: OnlineSearchDeps, query: str) -> Discovery:
    turn = deps.turn
    assert turn.discover is not None
    turn.step("discover", f"Searching {', '.join(deps.sources) or 'the scholarly sources'} for "
              f"“{shorten(query)}”", query=query, sources=deps.sources)  # fmt: skip
    try:
        found = await asyncio.to_thread(turn.discover, query)
    except OnlineDisabled:
        raise
    except ZocratesError as e:  # a bad query, an unknown session: one plain line, the run goes on
        found = Discovery(query=query, errors=[str(e)])
    held = sum(c.in_library for c in found.candidates)
    n = len(found.candidates)
    label = f"Found {n} paper{'' if n == 1 else 's'}" + (f" ({held} already in your library)"
                                                         if held else "")  # fmt: skip
    if found.errors:
        label += f"; {len(found.errors)} source error{'' if len(found.errors) == 1 else 's'}"
    turn.step("discover", label, papers=n, in_library=held, errors=list(found.errors))
    return found


def _brief(c: Candidate) -> dict[str, Any]:
    """A candidate as the search agent sees it: enough to judge whether to search on."""
    out: dict[str, Any] = {"id": c.id, "title": c.title, "year": c.year}
    if c.in_library:
        out["in_library"] = True
    if c.abstract:
        out["abstract"] = shorten(c.abstract, 240)
    return out


async def finish_search(ctx: RunContext[OnlineSearchDeps], summary: str = "") -> SearchFinished:
    """Stop searching: the papers found go to the synthesizer, which picks the recommendations.

    Args:
        summary: one sentence on what the searches found.
    """
    return SearchFinished(summary)


online_search_agent: Agent[OnlineSearchDeps, SearchFinished | str] = Agent(
    None,
    name="online_search",
    deps_type=OnlineSearchDeps,
    instructions=ONLINE_SEARCH_INSTRUCTION,
    output_type=[ToolOutput[SearchFinished](finish_search, name=FINISH_TOOL), str],
    tools=[search_scholarly_sources],
    retries=2,
    defer_model_check=True,
)


async def run_online_search(turn: TurnContext, rm: RoleModel, request: str) -> OnlineSearchDeps:
    """The online search agent's run; its usage is booked however it ends. A model that stops
    without searching leaves the request's key phrases to be sent once, so the researcher never
    gets an empty answer for a search that never ran."""
    names = [s.name for s in enabled_sources(turn.settings.online)]
    deps = OnlineSearchDeps(turn=turn, sources=names)
    limits = UsageLimits(request_limit=MAX_SOURCE_QUERIES + 4)
    run_id = uuid.uuid4().hex
    with (
        turn.phase("discover", role="online_search"),
        role_call(rm),
        capture_run_messages() as captured,
        briefed(OnlineSearchBrief(request=request)),
    ):
        try:
            result = await online_search_agent.run(
                online_search_input(request, MAX_SOURCE_QUERIES, names),
                deps=deps,
                model=rm.model,
                model_settings=rm.settings or None,
                usage_limits=limits,
                run_id=run_id,
            )
        except UsageLimitExceeded:  # it ignored the budget's refusals: keep what it found
            turn.usage.add_messages("online_search", _of_run(captured, run_id), rm)
        except BaseException:
            turn.usage.add_messages("online_search", _of_run(captured, run_id), rm)
            raise
        else:
            turn.usage.add_run(rm, result.usage)
    if not deps.queries:
        query = key_phrases(request)
        turn.step("discover", "The online search model did not search: sending the request's "
                  "key terms", model=rm.name)  # fmt: skip
        deps.queries.append(query)
        deps.found.append(await _query_sources(deps, query))
    return deps


def _of_run(messages: list[Any], run_id: str) -> list[Any]:
    return [m for m in messages if getattr(m, "run_id", None) == run_id]


# ============================================================================ online synthesizer
class Recommendation(BaseModel):
    id: str = Field(description="The candidate's id, exactly as given (e.g. c1a2b3c4d5).")
    why: str = Field(
        description="Why it is relevant: ONE sentence (or clause) copied word for word from "
        "that candidate's abstract."
    )


class Recommendations(BaseModel):
    recommendations: list[Recommendation] = Field(
        default_factory=list, description="The papers to recommend, most relevant first."
    )


online_synthesizer_agent: Agent[None, Recommendations] = Agent(
    None,
    name="online_synthesizer",
    instructions=ONLINE_SYNTHESIZER_INSTRUCTION,
    output_type=ToolOutput(Recommendations, name=RECOMMEND_TOOL),
    retries=2,
    defer_model_check=True,
)


def _norm_words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def grounded_why(why: str, abstract: str) -> str | None:
    """`why` when it is a sentence or clause of `abstract` (punctuation and case aside), else
    None: a reason the model wrote itself is not shown as the paper's own words."""
    text = " ".join(why.split()).strip(" \"'“”‘’")
    said = _norm_words(text)
    if len(said.split()) < WHY_MIN_WORDS or not abstract:
        return None
    return text if f" {said} " in f" {_norm_words(abstract)} " else None


def extractive_why(c: Candidate) -> str:
    """The abstract's sentence that discovery chose (the one sharing most with the query), else
    its first sentence."""
    if c.why:
        return c.why
    first = re.split(r"(?<=[.!?])\s+", c.abstract.strip(), maxsplit=1)[0] if c.abstract else ""
    return shorten(first, 300)


@dataclass
class Checked:
    chosen: list[Candidate]
    invented: int = 0  # ids no source returned
    held: int = 0  # papers the library holds
    replaced: int = 0  # reasons not found in the abstract


def check_recommendations(recs: Recommendations, pool: list[Candidate]) -> Checked:
    """The synthesizer's picks, corrected: only candidates a source returned, none the library
    holds, each once, each why grounded in its abstract."""
    by_id = {c.id: c for c in pool}
    out = Checked([])
    seen: set[str] = set()
    for r in recs.recommendations:
        c = by_id.get(r.id.strip())
        if c is None:
            out.invented += 1
            continue
        if c.in_library:
            out.held += 1
            continue
        if c.id in seen or len(out.chosen) >= MAX_RECOMMENDATIONS:
            continue
        seen.add(c.id)
        why = grounded_why(r.why, c.abstract)
        if why is None:  # written, not quoted (or nothing to quote from: no reason is shown)
            out.replaced += bool(r.why.strip())
            why = extractive_why(c)
        out.chosen.append(c.model_copy(update={"why": why}))
    return out


async def recommend(
    turn: TurnContext, rm: RoleModel, request: str, fresh: list[Candidate], held: list[Candidate]
) -> list[Candidate]:
    """The online synthesizer's picks among `fresh`, checked and corrected."""
    turn.step("rerank", f"Ranking {len(fresh)} candidate{'' if len(fresh) == 1 else 's'}",
              candidates=len(fresh))  # fmt: skip
    shown = fresh[:SHOWN_CANDIDATES]
    prompt = online_synthesis_prompt(turn.user_query, request, shown, held, MAX_RECOMMENDATIONS)
    brief = RecommendBrief(turn.user_query, request, MAX_RECOMMENDATIONS, tuple(shown))
    with (
        turn.phase("recommend", role="online_synthesizer"),
        role_call(rm, turn) as call,
        briefed(brief),
    ):
        result = await online_synthesizer_agent.run(
            prompt, model=rm.model, model_settings=rm.settings or None, run_id=call.run_id
        )
    turn.usage.add_run(rm, result.usage)
    checked = check_recommendations(result.output, [*shown, *held])
    fixes = []
    if checked.invented:
        fixes.append(f"dropped {checked.invented} paper(s) no source returned")
    if checked.held:
        fixes.append(f"kept {checked.held} paper(s) your library holds out of the recommendations")
    if checked.replaced:
        fixes.append(f"replaced {checked.replaced} reason(s) not found in the abstract with the "
                     "abstract's own sentence")  # fmt: skip
    if not checked.chosen and result.output.recommendations:
        # Every pick was invalid: the extractive ranking stands in rather than an empty list.
        fixes.append("none of its picks could be used, so the ranking by meaning stands")
        checked.chosen = [c.model_copy(update={"why": extractive_why(c)})
                          for c in fresh[:MAX_RECOMMENDATIONS]]  # fmt: skip
    if fixes:
        turn.step("verify", "Checked the recommendations: " + "; ".join(fixes),
                  invented=checked.invented, in_library=checked.held,
                  replaced=checked.replaced)  # fmt: skip
    return checked.chosen


# ============================================================================ the run
async def discover_papers(turn: TurnContext, request: str) -> DiscoveryOutcome:
    """One discovery run for the coordinator's `search_online_literature` call."""
    goal = " ".join(request.split())
    if not turn.settings.online.enabled:
        return _off(turn, goal)
    search, synth = turn.roles.online_search, turn.roles.online_synthesizer
    if turn.discover is None or search is None or synth is None:
        message = "Searching beyond your library is not available here, so nothing was sent."
        turn.step("discover", message)
        return DiscoveryOutcome(goal, Discovery(query=goal, errors=[message]), message)
    try:
        deps = await run_online_search(turn, search, goal)
    except OnlineDisabled:  # turned off between the check and the query
        return _off(turn, goal)
    pool, errors = pooled(deps.found)
    pool.sort(key=lambda c: (not _named(c, goal), -c.score))
    fresh = [c for c in pool if not c.in_library]
    held = [c for c in pool if c.in_library]
    chosen = await recommend(turn, synth, goal, fresh, held) if fresh else []
    topic = deps.queries[0] if len(deps.queries) == 1 else key_phrases(goal)
    discovery = Discovery(query=topic, candidates=chosen + held, errors=errors)
    text = answer_text(topic, discovery, deps.sources, fresh=len(fresh), offline=synth.offline)
    return DiscoveryOutcome(goal, discovery, text, deps.queries)


def _off(turn: TurnContext, goal: str) -> DiscoveryOutcome:
    message = str(OnlineDisabled())
    turn.step("discover", "Searching beyond your library is off: nothing was sent")
    return DiscoveryOutcome(goal, Discovery(query=goal, errors=[message]), message)


def pooled(found: list[Discovery]) -> tuple[list[Candidate], list[str]]:
    """Every query's candidates as one list (a paper found twice is one candidate, in the
    library when either run says so) and every distinct error line."""
    pool: list[Candidate] = []
    by_key: dict[str, Candidate] = {}
    errors: list[str] = []
    for d in found:
        errors += [e for e in d.errors if e not in errors]
        for c in d.candidates:
            same = next((by_key[k] for k in c.identities() if k in by_key), None)
            if same is None:
                same = c.model_copy(deep=True)
                pool.append(same)
            elif c.in_library and not same.in_library:
                same.in_library, same.library_key = True, c.library_key
            for k in c.identities():
                by_key[k] = same
    return pool, errors


_DOI = re.compile(r"\b10\.\d{4,9}/[^\s\"'<>]+", re.I)
_ARXIV_ID = re.compile(r"\b(?:arxiv:\s*)?(\d{4}\.\d{4,5})(?:v\d+)?\b", re.I)


def _named(c: Candidate, request: str) -> bool:
    """The request names this paper by its DOI or arXiv id (a look-up: it comes first)."""
    dois = {m.group(0).rstrip(".,;)").lower() for m in _DOI.finditer(request)}
    ids = {m.group(1) for m in _ARXIV_ID.finditer(request)}
    return bool((c.doi and c.doi in dois) or (c.arxiv_id and c.arxiv_id in ids))


# ============================================================================ the answer
_MD = re.compile(r"([\\`*_\[\]<>#|])")


def _md(text: str) -> str:
    """Text from a scholarly API, inert in Markdown (no emphasis, links or HTML of its own)."""
    return _MD.sub(r"\\\1", " ".join(str(text).split()))


def answer_text(
    goal: str, d: Discovery, sources: list[str], *, fresh: int, offline: bool
) -> str:
    """The recommendations (title, year, why, id), what the library already holds, and the
    sources that failed, in plain words."""
    recommended = [c for c in d.candidates if not c.in_library]
    held = [c for c in d.candidates if c.in_library]
    where = f" ({', '.join(sources)})" if sources else ""
    lines: list[str] = []
    if recommended:
        lines.append(f"Papers beyond your library on “{_md(goal)}”{where}:")
        lines.append("")
        for n, c in enumerate(recommended, 1):
            meta = ", ".join(str(p) for p in (c.year, shorten(c.venue, 60)) if p)
            head = f"{n}. **{_md(c.title)}**" + (f" ({_md(meta)})" if meta else "")
            why = f" — {_md(c.why)}" if c.why else ""
            lines.append(f"{head}{why} `{c.id}`")
        if (rest := fresh - len(recommended)) > 0:
            lines += ["", f"{rest} other paper{'s' if rest > 1 else ''} the sources returned "
                      f"seemed unrelated to the question and {'are' if rest > 1 else 'is'} "
                      "not listed."]  # fmt: skip
    elif fresh:
        lines.append(f"None of the {fresh} papers the sources returned for “{_md(goal)}” "
                     "seemed relevant enough to recommend.")  # fmt: skip
    elif d.errors and not held:
        lines.append(f"The search beyond your library for “{_md(goal)}” found nothing, because "
                     "the sources could not be searched:")  # fmt: skip
    else:
        lines.append(f"The sources{where} returned no papers for “{_md(goal)}” that your "
                     "library does not already hold.")  # fmt: skip
    if held:
        lines += ["", "Already in your library (not recommended again):"]
        lines += [f"- **{_md(c.title)}**" + (f" ({c.year})" if c.year else "") for c in held]
    if d.errors:
        if recommended or held or fresh:
            lines += ["", "Some sources could not be searched:"]
        lines += [f"- {_md(e)}" for e in d.errors]
    if recommended:
        lines += ["", "To keep one, stage it by its id (`stage add ID`); staged papers can then "
                  "be saved to Zotero."]  # fmt: skip
        if offline:
            lines.append("_(Ranked by the embedded offline engine, no language model: each "
                         "reason is a sentence of the paper's abstract.)_")  # fmt: skip
    return "\n".join(lines)


__all__ = [
    "MAX_RECOMMENDATIONS",
    "MAX_SOURCE_QUERIES",
    "ONLINE_TOOL",
    "DiscoveryOutcome",
    "Recommendation",
    "Recommendations",
    "check_recommendations",
    "discover_papers",
    "grounded_why",
    "online_search_agent",
    "online_synthesizer_agent",
]
