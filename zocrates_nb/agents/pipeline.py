"""One search run per `search_library` call: search → (checkpoint ↔ extend) → rerank → synthesis.

1. Ceilings come from the configuration (or the turn's overrides), or from the snapshot when a
   checkpoint is resumed.
2. The search agent runs in isolation: its input is the active items with keys, pre-retrieved
   outlines and the goal — never the conversation.
3. Complete active coverage gate: 1–3 selected papers whose outlines are all cached → the
   outlines are injected and the agent reads sections directly.
4. Checkpoint triggers: the agent asked for an extension (proactive), or it used its call budget
   or its whole word ceiling while its report lists gaps (reactive; never while calls are left
   and words fit). No gaps, checkpoints off, or two extensions already granted: synthesis.
5. At a checkpoint the run state and the search agent's messages become a snapshot the session
   store keeps; resuming (in this process or another) continues from it with nothing lost.
6–9. Rerank, synthesize, clean, verify citations, two tiers, audit record; continuity gives the
   synthesizer the previous report when the scope did not change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import Field
from pydantic_ai.messages import ModelMessage

from zocrates_nb.agents import answerability, briefing
from zocrates_nb.agents import citations as cit
from zocrates_nb.agents.model_errors import ModelCallError
from zocrates_nb.agents.model_parts import question_parts
from zocrates_nb.agents.offline.brief import briefed
from zocrates_nb.agents.parts import Part
from zocrates_nb.agents.prompts import ActiveItemView, continuation_prompt, search_input
from zocrates_nb.agents.runtime import TurnContext
from zocrates_nb.agents.search_agent import run_search
from zocrates_nb.agents.synthesizer import synthesize
from zocrates_nb.events import CheckpointEvent
from zocrates_nb.retrieval import RunState, TocResult, Toolkit, rerank_state
from zocrates_nb.retrieval.rerank import filter_substantive, rerank_evidence
from zocrates_nb.retrieval.state import (
    MAX_EXTENSIONS,
    CompletionReport,
    Evidence,
    FollowUp,
)
from zocrates_nb.retrieval.vectors import PassageVectors
from zocrates_nb.sessions.state import ActiveItem, AuditRecord, SessionState
from zocrates_nb.turn import EvidenceRow, QuestionPart, Record, Scope, Source

log = logging.getLogger("zocrates_nb.agents")


class PausedRun(Record):
    """A paused search as the session store keeps it (a checkpoint snapshot's payload): the run
    state and the search agent's messages, and what the turn needs to answer once resumed.
    Every field is typed, so a snapshot is validated when read back and when updated."""

    run_state: RunState
    search_messages: list[ModelMessage] = Field(default_factory=list)
    goal: str = ""
    coordinator_messages: list[ModelMessage] = Field(default_factory=list)  # the turn's, so far
    active_items: list[ActiveItemView] = Field(default_factory=list)
    parts: list[Part] = Field(default_factory=list)  # the question's parts

    def payload(self) -> dict[str, Any]:
        """What the session store keeps (JSON: it is opaque to the store)."""
        return self.model_dump(mode="json")


@dataclass
class Outcome:
    """How a search run ended for now: answered, or paused at a checkpoint."""

    kind: Literal["answered", "checkpoint"]
    goal: str
    answer: cit.CitedAnswer | None = None
    checkpoint: CheckpointEvent | None = None
    paused: PausedRun | None = None  # at a checkpoint: what the session store keeps
    ranked: list[Evidence] = field(default_factory=list)
    gathered: list[Evidence] = field(default_factory=list)  # everything the search found
    report: CompletionReport | None = None
    state: RunState | None = None  # the run as it ended (calls used, extensions granted)
    parts: list[Part] = field(default_factory=list)  # a compound question's parts
    elsewhere: list[Source] = field(default_factory=list)  # papers outside a narrower scope
    widen_scope: Scope | None = None

    @property
    def question_parts(self) -> list[QuestionPart]:
        return [QuestionPart(text=p.text, subject=p.subject, heading=p.heading)
                for p in self.parts]  # fmt: skip

    @property
    def evidence(self) -> list[EvidenceRow]:
        """The turn's evidence rows: what the synthesizer saw, then the rest it gathered."""
        return evidence_rows(self.ranked, self.answer, self.gathered)

    @property
    def text(self) -> str:
        if self.answer is not None:
            return self.answer.text
        if self.checkpoint is not None:
            return (
                "The search paused at a deep-research checkpoint: the researcher decides "
                "whether to extend it or to answer with the evidence gathered."
            )
        return ""


class AnswerFailed(ModelCallError):
    """The search finished but writing its answer failed: the turn keeps what the search
    gathered (`outcome`, `paused`) so `synthesize` can write the answer again."""

    def __init__(
        self,
        cause: ModelCallError,
        state: RunState,
        ranked: list[Evidence],
        report: CompletionReport,
        parts: list[Part] | None = None,
    ) -> None:
        super().__init__(str(cause), cause.role, cause.model)
        self.outcome = Outcome(
            "answered",
            state.goal,
            ranked=ranked,
            gathered=list(state.evidence),
            report=report,
            state=state,
        )
        self.paused = PausedRun(run_state=state, goal=state.goal, parts=list(parts or []))


def interrupt_id(turn_id: str, extension: int) -> str:
    """A checkpoint's id: its turn and extension number (`<turn_id>-ext<n>`).

    Unique across turns and sessions, so a stale card or a retried request can never answer a
    later checkpoint; only URL-unreserved characters (turn ids are hex).
    """
    return f"{turn_id}-ext{extension}"


def answer_retry_id(turn_id: str) -> str:
    """The id of a kept search whose answer failed (`<turn_id>-answer`): what "Retry answer"
    resumes. Built here only; every reader compares it whole."""
    return f"{turn_id}-answer"


def should_checkpoint(state: RunState, hitl: bool) -> bool:
    """The two triggers, with the smart skip and the two-extension cap. A search with calls
    left only asks for more room when its evidence reached the word ceiling (near it, the
    calls left still read what fits)."""
    if not hitl or state.extension_count >= MAX_EXTENSIONS:
        return False
    if state.extension_pending:
        return True
    report = state.report
    gaps = bool(report and report.gaps)
    spent = state.tool_count >= state.budget or state.words >= state.word_ceiling
    return spent and gaps


def checkpoint_reason(state: RunState) -> tuple[str, str]:
    """Why a search pauses, and the sentence that says so with the true numbers."""
    calls = f"{state.tool_count} of {state.budget} retrieval calls"
    words = f"{state.words:,} of {state.word_ceiling:,} words"
    if state.extension_pending:
        return "agent", f"The search asks for more budget ({calls}, {words} used)"
    if state.tool_count >= state.budget:
        return "budget", f"The search budget is used up ({calls}, {words})"
    if state.words >= state.word_ceiling:
        return "word_ceiling", f"The evidence word ceiling is reached ({words}, {calls})"
    return "word_ceiling_near", f"The evidence is near its word ceiling ({words}, {calls})"


def checkpoint_gaps(state: RunState) -> tuple[str, list[str]]:
    """What a pause reports as covered and missing: the agent's extension request, else its
    completion report. A paper the evidence already holds is covered: a gap naming it by its
    title is left out (the card never lists one paper as both)."""
    req = state.extension_request if state.extension_pending else None
    report = state.report
    covered = (
        req.covered_summary if req and req.covered_summary else report.summary if report else ""
    )
    missing = req.missing_aspects if req and req.missing_aspects else report.gaps if report else []
    titles = {e.title.casefold() for e in state.evidence if len(e.title) >= 8}
    kept = [m for m in missing if not any(t in m.casefold() for t in titles)]
    return covered, kept


class SearchPipeline:
    def __init__(self, turn: TurnContext) -> None:
        self.turn = turn
        self.parts: list[Part] = []
        # The run's stored passage vectors and query vectors: the offline roles, reranking and
        # the check of the wider library judge passages by them, never embedding one twice.
        self.vectors = PassageVectors(turn.index)

    # ------------------------------------------------------------------ start / resume
    def new_state(self, goal: str) -> RunState:
        t = self.turn
        s = t.settings.retrieval.model_copy()
        if t.options.budget:
            s.budget = t.options.budget
        if t.options.word_ceiling:
            s.word_ceiling = t.options.word_ceiling
        return RunState.new(s, goal=goal, scope=t.scope, allowed_keys=t.allowed_keys)

    def where(self) -> str:
        t = self.turn
        if t.scope.kind == "selection":
            n = len(t.active_items)
            return "the selected paper" if n == 1 else f"the {n} selected papers"
        if t.scope.kind == "collection":
            return "collection " + ", ".join(f"“{c}”" for c in t.collections)
        return "the library"

    async def start(self, goal: str, follow_up: FollowUp | None = None) -> Outcome:
        t = self.turn
        goal = " ".join(goal.split())
        state = self.new_state(goal)
        state.follow_up = follow_up
        t.step("route", f"Searching {self.where()} for “{goal}”", goal=goal)
        if await asyncio.to_thread(t.index.catalog.chunk_count) == 0:
            return self._empty_library(state)
        outlines = await asyncio.to_thread(self.coverage_outlines, state)
        if outlines:
            t.step("toc", f"Using the outlines of {len(outlines)} selected paper(s)")
        self.parts, split_by = await question_parts(t, goal)
        injected = frozenset(it.key for it in t.active_items) if outlines else frozenset()
        if self.parts:
            t.step(
                "parts",
                f"Searching {len(self.parts)} parts: "
                + "; ".join(p.name or p.subject or p.text for p in self.parts),
                parts=[p.text for p in self.parts],
                split_by=split_by,
            )
        prompt = search_input(
            goal,
            t.active_items,
            outlines,
            t.scope.kind,
            t.collections,
            state.budget,
            state.word_ceiling,
            self.parts,
        )
        return await self._loop(state, [], prompt, injected=injected)

    async def resume(self, paused: PausedRun, action: str, guidance: str = "") -> Outcome:
        t = self.turn
        state = paused.run_state.model_copy(deep=True)
        self.parts = list(paused.parts)
        history = list(paused.search_messages)
        if action == "extend_budget":
            _, missing = checkpoint_gaps(state)
            if state.grant_extension():
                t.step(
                    "checkpoint",
                    f"Deep research extension {state.extension_count} of {MAX_EXTENSIONS}: "
                    f"{state.budget} calls, {state.word_ceiling:,} words",
                    extension=state.extension_count,
                )
                state.report = None  # this pass reports afresh
                prompt = continuation_prompt(
                    state.goal,
                    state.extension_count,
                    MAX_EXTENSIONS,
                    state.budget,
                    state.tool_count,
                    state.word_ceiling,
                    state.words,
                    missing,
                    guidance,
                )
                return await self._loop(state, history, prompt, guidance)
            t.step("checkpoint", "No extension left: answering with the evidence gathered")
        else:
            t.step("checkpoint", "Answering with the evidence gathered")
        if state.report is None:
            Toolkit(t.index, state).finish()
        return await self._finish(state)

    def _empty_library(self, state: RunState) -> Outcome:
        text = (
            "Your library index is empty, so there is nothing to search yet. Index your "
            "library first (`zocrates-nb index`, or `zocrates-nb index --sample` for the "
            "built-in sample), then ask again."
        )
        if self.turn.index.run_state() == "running":  # a first index, or a rebuild, under way
            text = ("Your library is being indexed right now, so there is nothing to search "
                    "yet: ask again when the index run finishes.")  # fmt: skip
        self.turn.step("search", "The library index is empty")
        answer = cit.CitedAnswer(text=text)
        report = CompletionReport(summary="The index holds no documents.", source="auto_generated")
        return Outcome("answered", state.goal, answer=answer, report=report, state=state)

    # ------------------------------------------------------------------ the loop
    async def _loop(
        self,
        state: RunState,
        history: list[ModelMessage],
        prompt: str,
        guidance: str = "",
        injected: frozenset[str] = frozenset(),
    ) -> Outcome:
        t = self.turn
        if not injected and t.active_items and history:  # resumed: the outlines came first
            injected = frozenset(it.key for it in t.active_items)
        brief = await asyncio.to_thread(
            briefing.search_brief, t, state, self.vectors, self.parts, guidance, injected
        )
        with briefed(brief):
            messages = await run_search(t, state, history, prompt)
        Toolkit(t.index, state).finish()  # the agent's report, or an automatic one
        if should_checkpoint(state, t.options.hitl):
            outcome = self._checkpoint(state, messages)
            await asyncio.to_thread(self.record_audit, state, state.report)  # off the loop
            return outcome
        return await self._finish(state)

    def _checkpoint(self, state: RunState, messages: list[ModelMessage]) -> Outcome:
        t = self.turn
        n = state.extension_count + 1
        covered, missing = checkpoint_gaps(state)
        reason, headline = checkpoint_reason(state)
        event = CheckpointEvent(
            reason=reason,
            headline=headline,
            interrupt_id=interrupt_id(t.turn_id, n),
            extension=n,
            max_extensions=MAX_EXTENSIONS,
            calls_used=state.tool_count,
            budget=state.budget,
            words_used=state.words,
            word_ceiling=state.word_ceiling,
            covered_summary=covered,
            missing_aspects=missing,
            cost_usd=t.usage.cost,
        )
        t.step(
            "checkpoint",
            f"Pausing for your decision (extension {n} of {MAX_EXTENSIONS})",
            interrupt_id=event.interrupt_id,
        )
        paused = PausedRun(
            run_state=state.model_copy(deep=True),
            search_messages=messages,
            goal=state.goal,
            parts=list(self.parts),
        )
        return Outcome(
            "checkpoint",
            state.goal,
            checkpoint=event,
            paused=paused,
            gathered=list(state.evidence),
            report=state.report,
            state=state,
        )

    # ------------------------------------------------------------------ synthesis
    async def _finish(self, state: RunState) -> Outcome:
        t = self.turn
        report = state.report or CompletionReport(summary="", source="auto_generated")
        pool = filter_substantive(state.evidence)
        t.step(
            "rerank",
            f"Reranking {len(pool)} passages",
            passages=len(pool),
            method=t.reranker.method,
        )
        with t.phase("rerank"):
            ranked = await asyncio.to_thread(rerank_state, state, t.reranker, self.vectors)
            ranked = await asyncio.to_thread(self.cover_parts, state, ranked, pool)
        prior = await asyncio.to_thread(self.prior_context)
        wider = await asyncio.to_thread(self.elsewhere, state.goal)
        brief = await asyncio.to_thread(
            briefing.writer_brief, t, state, ranked, report, self.parts, wider, self.vectors
        )
        try:
            with briefed(brief):
                answer = await synthesize(
                    t, state.goal, ranked, state.evidence, report, prior, self.parts
                )
        except ModelCallError as e:
            await asyncio.to_thread(self.record_audit, state, report)
            raise AnswerFailed(e, state, ranked, report, self.parts) from e
        if wider.note:
            answer = dataclasses.replace(answer, text=f"{answer.text.rstrip()}\n\n{wider.note}")
        await asyncio.to_thread(self.record_audit, state, report)
        return Outcome(
            "answered",
            state.goal,
            answer=answer,
            ranked=ranked,
            gathered=list(state.evidence),
            report=report,
            state=state,
            parts=self.parts,
            elsewhere=wider.sources,
            widen_scope=wider.widen,
        )

    # ------------------------------------------------------------------ answerability
    def cover_parts(
        self, state: RunState, ranked: list[Evidence], pool: list[Evidence]
    ) -> list[Evidence]:
        """Each part's best passages among the synthesizer's evidence."""

        def rank(query: str, items: list[Evidence]) -> list[Evidence]:
            return rerank_evidence(
                query, items, self.turn.reranker, max_chunks=answerability.PART_PASSAGES,
                word_ceiling=state.word_ceiling, vectors=self.vectors,
            )  # fmt: skip

        return answerability.cover_parts(
            ranked, pool, self.parts, rank, state.max_rerank_chunks + len(self.parts)
        )

    def elsewhere(self, goal: str) -> answerability.Elsewhere:
        """Papers outside a narrower scope that answer it better (never fails the turn)."""
        t = self.turn
        try:
            return answerability.elsewhere(
                t.index, goal, self.parts, t.scope, t.allowed_keys, self.vectors
            )
        except Exception:  # an optional hint: the answer stands without it
            log.warning("the elsewhere check failed", exc_info=True)
            t.step("elsewhere", "The check of the rest of the library could not run")
            return answerability.Elsewhere()

    # ------------------------------------------------------------------ session state
    def coverage_outlines(self, state: RunState | None = None) -> list[str]:
        """Outlines of the 1–3 selected papers, from the first turn on: cached ones reused,
        the others built from the index (no call counted) and cached for later turns. A paper
        without an outline (nothing indexed) leaves the gate closed: no injection at all."""
        t = self.turn
        keys = [it.key for it in t.active_items]
        if not 1 <= len(keys) <= 3:
            return []
        cached = t.store.get_state(t.session_id)
        built: dict[str, tuple[list[str], str, str]] = {}
        if state is not None:
            tools = Toolkit(t.index, state)
            for k in keys:
                if cached.get_outline(k) is not None:
                    continue
                out = tools.document_toc(k)
                if not isinstance(out, TocResult) or not out.outline:
                    return []
                built[k] = ([k, out.doc_key, out.parent_key], out.outline, out.title)
        found: list[str] = []

        def touch(st: SessionState) -> None:
            for ids, outline, title in built.values():
                st.cache_outline(ids, outline, title)
            if not st.has_outlines_for(keys):
                return
            for k in keys:
                entry = st.get_outline(k, touch=True)
                if entry is not None and entry.outline not in found:
                    found.append(entry.outline)

        t.store.update_state(t.session_id, touch)
        return found

    def prior_context(self) -> str:
        """The previous search turn's report, when it searched the same scope (continuity)."""
        t = self.turn
        audit = [r for r in t.store.get_state(t.session_id).audit if r.turn_id != t.turn_id]
        if not audit:
            return ""
        prev = audit[-1]
        same_items = {a.item_key for a in prev.active_items} == {a.key for a in t.active_items}
        same_scope = same_items and sorted(prev.scope.collections) == sorted(t.scope.collections)
        report = prev.report
        if not same_scope or report is None or report.source != "agent" or not report.summary:
            return ""
        lines = [
            f"Previous question: {prev.user_query}",
            f"Previous search goal: {prev.search_goal}",
            f"What that search found: {report.summary}",
        ]
        if report.notes:
            lines.append(f"Notes: {report.notes}")
        return "\n".join(lines)

    def record_audit(self, state: RunState, report: CompletionReport | None) -> None:
        """What this turn searched for and concluded, for the next turn's continuity; a paused
        turn gets one too, updated in place on resume."""
        t = self.turn
        record = AuditRecord(
            turn_id=t.turn_id,
            user_query=t.user_query,
            search_goal=state.goal,
            active_items=[ActiveItem(item_key=it.key, title=it.title) for it in t.active_items],
            scope=t.scope,
            report=report,
        )

        def put(s: SessionState) -> None:
            s.record_audit(record)

        t.store.update_state(t.session_id, put)


def evidence_rows(
    ranked: list[Evidence], answer: cit.CitedAnswer | None, gathered: list[Evidence]
) -> list[EvidenceRow]:
    """The synthesizer's evidence in its order (with citation numbers and support), then every
    other passage the search gathered (`ranked` false)."""
    rows = []
    for i, e in enumerate(ranked, 1):
        n = answer.renumbered.get(i) if answer else None
        rows.append(
            _row(
                e,
                ranked=True,
                rerank_rank=i,
                rerank_score=e.rerank_score,
                rerank_method=e.rerank_method,
                cited=n is not None,
                n=n,
                support=answer.support.get(i) if answer else None,
                unsupported=bool(answer and i in answer.refuted),
            )
        )
    shown = {e.chunk_id for e in ranked}
    for e in gathered:
        if e.chunk_id not in shown:
            shown.add(e.chunk_id)
            rows.append(_row(e))
    return rows


def _row(e: Evidence, **ranking: Any) -> EvidenceRow:
    return EvidenceRow.from_passage(e, tool=e.tool, retrieval_rank=e.rank, **ranking)
