"""What the search pipeline hands the embedded offline roles: their typed briefs (the run state,
the question's parts, the researcher's guidance, the ranked evidence, what the scope is called),
built from the turn. A configured model reads its prompt instead and ignores them."""

from __future__ import annotations

import re
from collections.abc import Sequence

from zocrates_nb.agents import answerability
from zocrates_nb.agents.offline.brief import SearchBrief, WriterBrief
from zocrates_nb.agents.parts import Part, core_goal
from zocrates_nb.agents.runtime import TurnContext
from zocrates_nb.index.names import papers_named
from zocrates_nb.retrieval.state import CompletionReport, Evidence, RunState
from zocrates_nb.retrieval.vectors import PassageVectors
from zocrates_nb.text import entities


def scope_label(turn: TurnContext) -> str:
    """What a narrower scope is called in an answer ("" for the whole library)."""
    if turn.scope.kind == "selection":
        return "the selected paper" if len(turn.active_items) == 1 else "the selected papers"
    if turn.scope.kind == "collection":
        names = ", ".join(f"“{c}”" for c in turn.collections)
        return f"the collection{'s' if len(turn.collections) > 1 else ''} {names}"
    return ""


def search_brief(
    turn: TurnContext,
    state: RunState,
    vectors: PassageVectors,
    parts: Sequence[Part],
    guidance: str = "",
    injected: frozenset[str] = frozenset(),
) -> SearchBrief:
    """One pass of the search: the live run state and what the pipeline knows beside it."""
    return SearchBrief(
        state=state,
        index=turn.index,
        vectors=vectors,
        parts=tuple(parts),
        guidance=" ".join(guidance.split()),
        injected=injected,
        pass_start=len(state.tool_log),
        catalogue=answerability.catalogue_for(turn.index),
    )


def writer_brief(
    turn: TurnContext,
    state: RunState,
    ranked: list[Evidence],
    report: CompletionReport,
    parts: Sequence[Part],
    wider: answerability.Elsewhere,
    vectors: PassageVectors,
) -> WriterBrief:
    """What the offline writer answers from: the evidence as ranked ([1] first), the papers
    the question names, the scope's name and the papers elsewhere that answer it better."""
    named: list[str] = []
    known: list[str] = []
    if len(parts) < 2:
        catalogue = answerability.catalogue_for(turn.index)
        for m in papers_named(catalogue.mentions(core_goal(state.goal)) if catalogue else []):
            named.extend(k for k in m.keys if k not in named)
            known.append(m.surface)
        known += venue_names(state.goal, [it.venue for k in named if (it := turn.index.item(k))])
    return WriterBrief(
        question=turn.user_query,
        goal=state.goal,
        evidence=tuple(ranked),
        parts=tuple(parts),
        gaps=tuple(report.gaps),
        named=tuple(named),
        known_names=tuple(known),
        scope_label=scope_label(turn),
        elsewhere=tuple(src.title for src in wider.sources),
        nearest=tuple(wider.nearest),
        vectors=vectors,
        follow_up=state.follow_up,
    )


def venue_names(question: str, venues: Sequence[str]) -> list[str]:
    """The named things of the question that are where a paper it names appeared ("(the
    primer in Nature Biotech)" of *Nature Biotechnology*): the paper's, not things it says."""
    words = [w.casefold() for v in venues for w in re.findall(r"\w{3,}", v)]
    return [e for e in entities(question) if words and all(
        any(w.startswith(x.casefold()) for w in words) for x in re.findall(r"\w{3,}", e)
    ) and re.search(r"\w{3,}", e)]  # fmt: skip


__all__ = ["scope_label", "search_brief", "venue_names", "writer_brief"]
