"""The search agent: a pydantic-ai agent over the retrieval toolkit, isolated from the chat.

It sees only its own input (active items with keys, pre-retrieved outlines, the goal) and its own
tool calls. `conclude_search` and `request_search_extension` are output functions: calling
either ends the agent's run, like the design's skip-summarisation. The guardrails (budget, word
ceiling, scope, dedup) live in the toolkit; these wrappers add the visible steps, serialise
calls on the shared run state, cache outlines in the session, and hand the model each typed
result as its JSON.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic_ai import (
    Agent,
    ModelHTTPError,
    ModelRetry,
    RunContext,
    ToolOutput,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    capture_run_messages,
)
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    PartDeltaEvent,
    PartStartEvent,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.usage import UsageLimits

from zocrates_nb.agents import search_context
from zocrates_nb.agents.model_errors import ModelCallError
from zocrates_nb.agents.prompts import SEARCH_INSTRUCTION
from zocrates_nb.agents.runtime import TurnContext, role_call
from zocrates_nb.events import Thinking
from zocrates_nb.retrieval import (
    ReadResult,
    Refusal,
    RunState,
    SearchResult,
    TocResult,
    Toolkit,
    ToolResult,
)
from zocrates_nb.text import shorten


@dataclass
class SearchDeps:
    toolkit: Toolkit
    turn: TurnContext
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


@dataclass
class SearchEnd:
    """How the agent stopped: it concluded, or it asked the researcher for more budget."""

    how: str  # concluded | extension


R = TypeVar("R", bound=ToolResult)


async def _call(deps: SearchDeps, fn: Callable[..., R], *args: Any) -> R:
    """Run a toolkit call off the event loop, one at a time (they share the run state)."""
    async with deps.lock:
        return await asyncio.to_thread(fn, *args)


def _budget_step(deps: SearchDeps, out: ToolResult) -> None:
    if isinstance(out, Refusal) and out.status == "budget_exhausted":
        deps.turn.step("search", "Retrieval budget used up", message=out.message)


async def search_corpus(
    ctx: RunContext[SearchDeps],
    query: str,
    item_key: str | list[str] | None = None,
    chunk_type: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    """Hybrid (keyword + semantic) search over the library's passages. For a broad goal,
    survey candidate papers first with chunk_type="frontmatter".

    Args:
        query: what to look for, in your words or the paper's.
        item_key: None: the whole scope; "active": the selected items; a key or a list of
            keys: only those papers.
        chunk_type: "frontmatter" surveys titles and abstracts of up to 10 papers; or
            "abstract", "body", "figure", "table", "note".
        limit: how many passages.
    """
    return await _search(ctx.deps, query, item_key, chunk_type, limit)


async def _search(
    deps: SearchDeps,
    query: str,
    item_key: str | list[str] | None = None,
    chunk_type: str | None = None,
    limit: int = 10,
) -> dict[str, Any]:
    everywhere = item_key in (None, "", "all", "*", "library")
    if (chunk_type or "").lower().startswith("front"):
        label = "Surveying candidate papers"
    elif str(item_key).lower() in ("active", "selected"):
        label = f"Looking in the selected papers for “{shorten(query)}”"
    elif everywhere:
        label = f"Looking for passages on “{shorten(query)}”"
    else:
        label = f"Looking inside {_paper_names(deps, item_key)} for “{shorten(query)}”"
    deps.turn.step("search", label, query=query)
    out = await _call(deps, deps.toolkit.search_corpus, query, item_key, chunk_type, limit)
    _budget_step(deps, out)
    if isinstance(out, SearchResult) and _economy(deps):
        n = len(out.results)
        papers = len({r.item_key for r in out.results})
        deps.turn.step(
            "search",
            f"Found {_plural(n, 'passage')} in {_plural(papers, 'paper')}",
            query=query,
            passages=n,
            papers=papers,
        )
        return search_context.for_model(out.model_dump(mode="json"))
    return out.model_dump(mode="json")


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _paper_names(deps: SearchDeps, item_key: Any) -> str:
    """“Title” of the paper searched (or of the first of several), for the step label."""
    keys = [item_key] if isinstance(item_key, str) else [str(k) for k in item_key or []]
    titles = []
    for key in keys:
        try:
            record = deps.toolkit.index.item(key)
        except Exception:  # a label must never fail the search
            record = None
        titles.append(
            f"“{shorten(record.title)}”" if record is not None and record.title else "one paper"
        )
    if not titles:
        return "some papers"
    if len(titles) == 1:
        return titles[0]
    return f"{titles[0]} and {_plural(len(titles) - 1, 'other paper')}"


def _economy(deps: SearchDeps) -> bool:
    """Context economy is for language models (see `search_context`)."""
    return search_context.ECONOMY and not deps.turn.roles.search.offline


def elide_read_texts(
    ctx: RunContext[SearchDeps], messages: list[ModelMessage]
) -> list[ModelMessage]:
    """The search agent's history processor: the latest tool results stay in full, older
    passages shrink to their references once the model has read them."""
    return search_context.elide_history(messages) if _economy(ctx.deps) else messages


async def get_document_toc(ctx: RunContext[SearchDeps], item_key: str) -> dict[str, Any]:
    """The outline of one paper: sections (s1…), figures (f1…), tables (t1…), with word counts.

    Args:
        item_key: the paper's item key (or an attachment/note key).
    """
    deps = ctx.deps
    out = await _call(deps, deps.toolkit.get_document_toc, item_key)
    _budget_step(deps, out)
    if isinstance(out, TocResult):
        toc = out
        deps.turn.step("toc", f"Opening the outline of {shorten(toc.title, 90)}", title=toc.title)
        keys = [k for k in (toc.item_key, toc.doc_key, toc.parent_key) if k]

        def put(state: Any) -> None:
            state.cache_outline(keys, toc.outline, toc.title)

        await asyncio.to_thread(deps.turn.store.update_state, deps.turn.session_id, put)
    return out.model_dump(mode="json")


async def read_document(
    ctx: RunContext[SearchDeps],
    item_key: str,
    asset_id: str | list[str] | None = None,
    page: int | None = None,
) -> dict[str, Any]:
    """Read whole parts of one paper: prefer the one or two sections that answer the goal over
    many small searches.

    Args:
        item_key: the paper's key (or an attachment or note key).
        asset_id: ids from the outline: "s3", "s3, s5", "f1", "t2", "abstract", or "full"
            (the whole paper, if it fits the word ceiling).
        page: read one page instead (1-based).
    """
    deps = ctx.deps
    out = await _call(deps, deps.toolkit.read_document, item_key, asset_id, page)
    _budget_step(deps, out)
    if not isinstance(out, ReadResult):
        return out.model_dump(mode="json")
    title = shorten(out.title, 90)
    for a in out.assets:
        head = a.heading or a.asset_id
        what = f"§{head}" if a.type == "section" else head
        deps.turn.step(
            "read", f"Reading {what} of {title}", title=out.title, asset_id=a.asset_id,
            words=a.words,
        )  # fmt: skip
    if not out.assets:
        deps.turn.step("read", f"Nothing new to read in {title}", title=out.title)
    wire = out.model_dump(mode="json")
    return search_context.read_for_model(wire) if _economy(deps) else wire


async def conclude_search(
    ctx: RunContext[SearchDeps], summary: str, notes: str = "", gaps: list[str] | None = None
) -> SearchEnd:
    """Stop searching: the gathered evidence goes to the writer.

    Args:
        summary: one or two sentences on what the evidence covers.
        notes: caveats or guidance for the writer.
        gaps: aspects of the goal the library did not cover (empty when none).
    """
    ctx.deps.toolkit.conclude_search(summary, notes, gaps or [])
    return SearchEnd("concluded")


async def request_search_extension(
    ctx: RunContext[SearchDeps],
    justification: str,
    covered_summary: str = "",
    missing_aspects: list[str] | None = None,
) -> SearchEnd:
    """Stop and ask the researcher for more budget (+5 calls, +3,750 words) to continue.

    Args:
        justification: why more reading is needed for this goal.
        covered_summary: what the evidence gathered so far covers.
        missing_aspects: what is still missing.
    """
    out = ctx.deps.toolkit.request_search_extension(
        justification, covered_summary, missing_aspects or []
    )
    if isinstance(out, Refusal):
        raise ModelRetry(out.message)
    return SearchEnd("extension")


SEARCH_OUTPUTS = [
    ToolOutput[SearchEnd](conclude_search, name="conclude_search"),
    ToolOutput[SearchEnd](request_search_extension, name="request_search_extension"),
]

search_agent: Agent[SearchDeps, SearchEnd | str] = Agent(
    None,
    name="search",
    deps_type=SearchDeps,
    instructions=SEARCH_INSTRUCTION,
    output_type=[*SEARCH_OUTPUTS, str],
    tools=[search_corpus, get_document_toc, read_document],
    retries=2,
    capabilities=[ProcessHistory(elide_read_texts)],
    defer_model_check=True,
)

INSIST = (
    "You answered without calling any tool, so nothing was searched. Use your tools now: "
    "search_corpus (or get_document_toc / read_document), then conclude_search."
)


def thinking_handler(turn: TurnContext, role: str) -> Any:
    """An event handler that forwards a role's thinking as Thinking events."""

    async def handle(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for ev in events:
            if isinstance(ev, PartStartEvent) and isinstance(ev.part, ThinkingPart):
                text = ev.part.content
            elif isinstance(ev, PartDeltaEvent) and isinstance(ev.delta, ThinkingPartDelta):
                text = ev.delta.content_delta or ""
            else:
                continue
            if text:
                turn.emit(Thinking(role=role, text=text))

    return handle


async def run_search(
    turn: TurnContext, state: RunState, history: Sequence[ModelMessage], prompt: str
) -> list[ModelMessage]:
    """One pass of the search agent; returns its whole message history (for the snapshot).

    A model that answers in prose without searching is asked once more with tool use required
    (`tool_choice: required` on the wire); if it still does not search, or its replies cannot be
    used (invalid tool arguments three times, a body that is not JSON), the turn fails with a
    message naming the role and the model — never an empty "no evidence" answer.
    """
    toolkit = Toolkit(turn.index, state)
    deps = SearchDeps(toolkit=toolkit, turn=turn)
    rm = turn.roles.search
    before = state.tool_count
    with turn.phase("search", role="search"), role_call(rm):
        out, messages = await _pass(turn, deps, state, history, prompt)
        if isinstance(out, str) and state.tool_count == before:
            turn.step(
                "search",
                "The search model answered without searching: asking it to use its tools",
                model=rm.name,
            )
            out, messages = await _insist(turn, deps, state, messages)
            if state.tool_count == before:
                raise ModelCallError(
                    f"The search model {rm.name} answered without searching, even when asked "
                    "to use its tools: choose a model that supports tool calls for the search "
                    "role (models.search in zocrates_config.json).",
                    "search",
                    rm.name,
                )
    if state.tool_count == 0:
        await _own_first_search(turn, deps, state)
    return messages


async def _insist(
    turn: TurnContext, deps: SearchDeps, state: RunState, messages: list[ModelMessage]
) -> tuple[SearchEnd | str | None, list[ModelMessage]]:
    """Ask once more, with tool use required on the wire — or in words only, on a server that
    refuses `tool_choice: "required"` (older vLLM answers it with a 400)."""
    try:
        return await _pass(turn, deps, state, messages, INSIST, insist=True)
    except UnexpectedModelBehavior:
        return None, messages
    except ModelHTTPError as e:
        if e.status_code not in (400, 422):
            raise
    turn.step("search", "The endpoint refuses required tool use: asking in words only")
    try:
        return await _pass(turn, deps, state, messages, INSIST)
    except UnexpectedModelBehavior:
        return None, messages


async def _own_first_search(turn: TurnContext, deps: SearchDeps, state: RunState) -> None:
    """The model stopped before a single retrieval (it concluded at once, or asked for more
    budget): the library is searched for the goal itself, so no answer ever says "no evidence"
    about a search that never ran. Its report is replaced by one built from what was found."""
    turn.step(
        "search",
        "The search model stopped without searching: searching the library for the goal itself",
        model=turn.roles.search.name,
    )
    await _search(deps, state.goal)
    state.report = None
    state.extension_request = None


async def _pass(
    turn: TurnContext,
    deps: SearchDeps,
    state: RunState,
    history: Sequence[ModelMessage],
    prompt: str,
    *,
    insist: bool = False,
) -> tuple[SearchEnd | str | None, list[ModelMessage]]:
    """One agent run; its usage is booked however it ends (a request limit or a failure
    counts every answer received)."""
    rm = turn.roles.search
    # Requests beyond the retrieval budget only happen when the model ignores refusals.
    limits = UsageLimits(request_limit=max(state.budget - state.tool_count, 0) + 6)
    run_id = uuid.uuid4().hex
    extra: dict[str, Any] = (
        {"output_type": SEARCH_OUTPUTS, "retries": {"output": 0}} if insist else {}
    )
    with capture_run_messages() as captured:
        try:
            result = await search_agent.run(
                prompt,
                message_history=list(history) or None,
                deps=deps,
                model=rm.model,
                model_settings=rm.settings or None,
                usage_limits=limits,
                event_stream_handler=thinking_handler(turn, "search"),
                run_id=run_id,
                **extra,
            )
        except UsageLimitExceeded as e:
            # The model ignored the budget's refusals: what it gathered stays in the run state
            # and the pipeline writes an automatic report.
            turn.usage.add_messages("search", _of_run(captured, run_id), rm)
            turn.step("search", "The search agent stopped without concluding", reason=str(e)[:200])
            return None, list(captured) or list(history)
        except BaseException:
            turn.usage.add_messages("search", _of_run(captured, run_id), rm)
            raise
    turn.usage.add_run(rm, result.usage)
    return result.output, result.all_messages()


def _of_run(messages: Sequence[ModelMessage], run_id: str) -> list[ModelMessage]:
    return [m for m in messages if getattr(m, "run_id", None) == run_id]
