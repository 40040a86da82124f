"""The synthesizer: writes the cited answer from the reranked evidence, streaming as it writes.

Its output is then cleaned of leaked plumbing (keys, chunk ids, `[Key: …]` tags), its citations
verified and pruned, and the sources split into the two tiers.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Callable, Sequence
from typing import Any

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    AgentStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)

from zocrates_nb.agents import citations as cit
from zocrates_nb.agents.parts import Part
from zocrates_nb.agents.prompts import SYNTHESIZER_INSTRUCTION, synthesis_prompt
from zocrates_nb.agents.runtime import TurnContext, role_call
from zocrates_nb.agents.verifier import verify
from zocrates_nb.events import TextDelta, Thinking
from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.retrieval import format_evidence
from zocrates_nb.retrieval.state import CompletionReport, Evidence

synthesizer_agent: Agent[None, str] = Agent(
    None,
    name="synthesizer",
    instructions=SYNTHESIZER_INSTRUCTION,
    output_type=str,
    defer_model_check=True,
)


def stream_handler(turn: TurnContext, role: str) -> Any:
    """Forward text as TextDelta and thinking as Thinking events."""

    async def handle(ctx: RunContext[Any], events: AsyncIterable[AgentStreamEvent]) -> None:
        async for ev in events:
            if isinstance(ev, PartStartEvent):
                if isinstance(ev.part, TextPart) and ev.part.content:
                    turn.emit(TextDelta(text=ev.part.content))
                elif isinstance(ev.part, ThinkingPart) and ev.part.content:
                    turn.emit(Thinking(role=role, text=ev.part.content))
            elif isinstance(ev, PartDeltaEvent):
                if isinstance(ev.delta, TextPartDelta) and ev.delta.content_delta:
                    turn.emit(TextDelta(text=ev.delta.content_delta))
                elif isinstance(ev.delta, ThinkingPartDelta) and ev.delta.content_delta:
                    turn.emit(Thinking(role=role, text=ev.delta.content_delta))

    return handle


def plumbing(turn: TurnContext, evidence: Sequence[Evidence]) -> tuple[set[str], set[str]]:
    """Keys and chunk ids that must never reach the researcher."""
    keys = {e.item_key for e in evidence} | {e.attachment_key for e in evidence}
    keys |= {it.key for it in turn.active_items}
    keys |= {c.key for it in turn.active_items for c in it.children}
    keys |= set(turn.allowed_keys)
    return {k for k in keys if k}, {e.chunk_id for e in evidence}


def _bundles(turn: TurnContext) -> Callable[[str], Bundle | None]:
    """The documents' bundles, each read once (None: one the index no longer holds)."""
    held: dict[str, Bundle | None] = {}

    def bundle_of(doc_key: str) -> Bundle | None:
        if doc_key not in held:
            try:
                held[doc_key] = turn.index.bundle(doc_key)
            except (KeyError, OSError, ValueError):
                held[doc_key] = None
        return held[doc_key]

    return bundle_of


async def synthesize(
    turn: TurnContext,
    goal: str,
    ranked: Sequence[Evidence],
    gathered: Sequence[Evidence],
    report: CompletionReport,
    prior_context: str,
    parts: Sequence[Part] = (),
) -> cit.CitedAnswer:
    prompt = synthesis_prompt(
        turn.user_query,
        goal,
        turn.active_items,
        prior_context,
        report.summary,
        report.notes,
        report.gaps,
        format_evidence(ranked),
        parts,
    )
    rm = turn.roles.synthesizer
    label = (
        f"Writing the answer from {len(ranked)} passages"
        if ranked
        else "Writing the answer (no evidence was found)"
    )
    turn.step("synthesize", label, passages=len(ranked))
    with turn.phase("synthesize", role="synthesizer"), role_call(rm, turn) as call:
        result = await synthesizer_agent.run(
            prompt,
            model=rm.model,
            model_settings=rm.settings or None,
            event_stream_handler=stream_handler(turn, "synthesizer"),
            run_id=call.run_id,
        )
    turn.usage.add_run(rm, result.usage)
    keys, chunk_ids = plumbing(turn, [*ranked, *gathered])
    # A model may cite in many forms (by authors and year, `{2}`, `¹`); the offline engine
    # cites by `[n]` only, and the rest of its text is the papers' words.
    papers = [] if rm.offline else [(e.authors, e.year) for e in ranked]
    text = cit.sanitize(result.output, keys, chunk_ids, papers, forms=not rm.offline)
    occurrences = cit.find_occurrences(text, len(ranked))
    if occurrences:
        turn.step("verify", "Verifying citations", citations=len(occurrences))
    verdicts = await verify(turn, occurrences, ranked)
    answer = cit.finish(text, occurrences, verdicts, ranked, gathered)
    await asyncio.to_thread(cit.place_citations, answer, ranked, _bundles(turn))
    if answer.pruned:
        turn.step(
            "verify",
            f"Removed {answer.pruned} unsupported citation(s); "
            f"{len(answer.unsupported)} sentence(s) marked unsupported",
            pruned=answer.pruned,
            unsupported=answer.unsupported,
        )
    if answer.verified is False:
        turn.step("verify", "Citations not verified: the check failed")
    return answer
