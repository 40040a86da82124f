"""The coordinator: the multi-turn conversation, and the door to the search pipeline.

`search_library` is an output function: calling it runs one search pipeline and ends the
coordinator's run with the synthesizer's cited answer, verbatim (its citations must map to the
evidence, so no model may rewrite it). The coordinator's history then holds its call and, as the
call's result, that answer — never the search agent's tool calls or any raw passage.
`search_online_literature` is the second output function, for papers beyond the library: it runs
the online search agent and the online synthesizer (`discovery`) and ends the run the same way.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from pydantic_ai import Agent, ModelRetry, RunContext, ToolOutput
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelRequestPart, ToolReturnPart

from zocrates_nb.agents.answerability import catalogue_for
from zocrates_nb.agents.discovery import ONLINE_TOOL, DiscoveryOutcome, discover_papers
from zocrates_nb.agents.model_output import bound_history
from zocrates_nb.agents.offline.brief import CoordinatorBrief, PastTurn
from zocrates_nb.agents.pipeline import Outcome, SearchPipeline
from zocrates_nb.agents.prompts import COORDINATOR_INSTRUCTION, coordinator_context
from zocrates_nb.agents.runtime import TurnContext
from zocrates_nb.retrieval.state import FollowUp

SEARCH_TOOL = "search_library"


@dataclass
class CoordinatorDeps:
    turn: TurnContext
    profile: str | None = None
    outcome: Outcome | None = None


async def search_library(
    ctx: RunContext[CoordinatorDeps], request: str, regarding: FollowUp | None = None
) -> Outcome:
    """Search the researcher's library and answer from it, with verified citations.

    Args:
        request: ONE standalone search goal. Rewrite follow-ups so they stand alone (name the
            subject, note what earlier turns established). Never include item keys.
        regarding: for a follow-up only, what it builds on: the earlier subject and question.
    """
    if not request.strip():
        raise ModelRetry("Give a non-empty, standalone search goal.")
    outcome = await SearchPipeline(ctx.deps.turn).start(request, regarding)
    ctx.deps.outcome = outcome
    return outcome


async def search_online_literature(
    ctx: RunContext[CoordinatorDeps], request: str
) -> DiscoveryOutcome:
    """Find papers BEYOND the researcher's library in public scholarly sources (arXiv, Crossref,
    Semantic Scholar, OpenAlex) and recommend some, saying which the library already holds.
    Only when the researcher asks for papers beyond their library.

    Args:
        request: ONE standalone request: the topic (name it explicitly), or the DOI / arXiv id
            of the paper to look up. Never include item keys.
    """
    if not request.strip():
        raise ModelRetry("Give a non-empty, standalone request.")
    return await discover_papers(ctx.deps.turn, request)


def bounded_history(
    ctx: RunContext[CoordinatorDeps], messages: list[ModelMessage]
) -> list[ModelMessage]:
    """The conversation the coordinator is sent, bounded in characters
    (`models.limits.history_chars`): a session of long answers never grows its requests
    without end (compaction summarises it; this is the wall)."""
    return bound_history(messages, ctx.deps.turn.settings.models.limits.history_chars)


coordinator_agent: Agent[CoordinatorDeps, Outcome | DiscoveryOutcome | str] = Agent(
    None,
    name="coordinator",
    deps_type=CoordinatorDeps,
    instructions=COORDINATOR_INSTRUCTION,
    output_type=[
        ToolOutput[Outcome](search_library, name=SEARCH_TOOL),
        ToolOutput[DiscoveryOutcome](search_online_literature, name=ONLINE_TOOL),
        str,
    ],
    capabilities=[ProcessHistory(bounded_history)],
    defer_model_check=True,
)


@coordinator_agent.instructions
def _selection(ctx: RunContext[CoordinatorDeps]) -> str:
    t = ctx.deps.turn
    return coordinator_context(t.active_items, t.collections, ctx.deps.profile)


def coordinator_brief(turn: TurnContext, message: str) -> CoordinatorBrief:
    """What the offline coordinator plays from: the message and every earlier answered turn as
    the session recorded it (compaction shortens the model's history, never this)."""
    earlier = [
        PastTurn(
            question=t.prompt,
            goal=t.search_goal,
            answer=t.answer,
            papers=tuple(s.title for s in t.cited_sources),
        )
        for t in turn.store.turns(turn.session_id)
        if t.turn_id != turn.turn_id and t.status == "answered"
    ]
    return CoordinatorBrief(message=message, turns=tuple(earlier), scope_kind=turn.scope.kind,
                            names=catalogue_for(turn.index))  # fmt: skip


def record_answer(messages: list[ModelMessage], answer: str) -> list[ModelMessage]:
    """The coordinator's messages with the search (or discovery) call's result set to the answer
    itself, so later turns can refer back to it ("they", "that paper")."""
    tools = (SEARCH_TOOL, ONLINE_TOOL)
    out: list[ModelMessage] = []
    for m in messages:
        if isinstance(m, ModelRequest) and any(
            isinstance(p, ToolReturnPart) and p.tool_name in tools for p in m.parts
        ):
            parts: list[ModelRequestPart] = []
            for p in m.parts:
                if type(p) is ToolReturnPart and p.tool_name in tools:
                    ret: ToolReturnPart[Any] = p
                    parts.append(dataclasses.replace(ret, content=answer))
                else:
                    parts.append(p)
            m = dataclasses.replace(m, parts=parts)
        out.append(m)
    return out
