"""Citation verification: each occurrence's claim checked against the chunk it cites.

With a `verifier` model configured, the model judges each (claim, passage) pair with structured
output (a support probability). Without one, the offline check is a semantic support score from
the embedding model. A passage can be a whole section (tens of thousands of characters): each
claim is checked against the windows of the passage that best match it, wherever they are, not
its beginning. A check that fails or times out keeps the citation but is never silent: the
verdict has no probability and the answer says its citations were not verified.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from pydantic import BaseModel, Field
from pydantic_ai import Agent

from zocrates_nb.agents.citations import Occurrence, Verdict
from zocrates_nb.agents.model_errors import ModelCallError, can_retry
from zocrates_nb.agents.prompts import VERIFIER_INSTRUCTION, verifier_prompt
from zocrates_nb.agents.runtime import TurnContext, role_call
from zocrates_nb.agents.support_check import overruled_note, second_check, without_instructions
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.text import terms

log = logging.getLogger("zocrates_nb.agents.verifier")

SUPPORT_THRESHOLD = 0.5
VERIFY_TIMEOUT = 45.0  # seconds for the whole pass; pairs not judged by then are kept
CONCURRENCY = 4
CLAIM_CHARS = 2000  # a claim is a sentence: a runaway one is judged by its beginning
# Distinct (claim, passage) pairs a verifier model judges for one answer. A real answer has a
# few dozen; a runaway one (40,000 characters of one repeated sentence) once sent 1,140
# requests. The same pair is judged once; pairs beyond the cap are kept unverified, which the
# answer says, as it does for a verifier that fails.
MAX_JUDGED = 60


class SupportJudgement(BaseModel):
    """The verifier's answer for one claim and one passage."""

    supported_probability: float = Field(ge=0.0, le=1.0, description="0 = unsupported, 1 = fully")
    reason: str = Field("", description="one short phrase")


verifier_agent: Agent[None, SupportJudgement] = Agent(
    None,
    name="verifier",
    instructions=VERIFIER_INSTRUCTION,
    output_type=SupportJudgement,
    retries=1,
    defer_model_check=True,
)


WINDOW_CHARS = 2000  # one window of a long passage
WINDOWS = 3  # at most this many per claim (≤ 6,000 characters, what the verifier reads)


def best_windows(claim: str, passage: str, size: int = WINDOW_CHARS, k: int = WINDOWS) -> str:
    """The parts of `passage` that best match `claim`: the whole passage when it is short, else
    the `k` half-overlapping windows sharing the most (rare-weighted) terms with the claim, in
    passage order, joined by " … ". A verbatim quote always lands inside one window."""
    if len(passage) <= size * k:
        return passage
    flat = " ".join(claim.split()).lower().rstrip(".")
    step = size // 2
    starts = list(range(0, max(len(passage) - size, 0) + step, step))
    windows = [passage[a : a + size] for a in starts]
    wanted = set(terms(claim))
    bags = [set(terms(w)) for w in windows]
    df = {t: sum(t in b for b in bags) for t in wanted}
    scores = [sum(1.0 / df[t] for t in wanted & b if df[t]) for b in bags]
    if len(flat) > 20:  # a quote wins, whatever its terms
        for i, w in enumerate(windows):
            if flat in " ".join(w.split()).lower():
                scores[i] = float("inf")
                break
    chosen = sorted(sorted(range(len(windows)), key=lambda i: -scores[i])[:k])
    pieces: list[str] = []
    end = -1
    for i in chosen:  # merge overlapping windows into one span
        a, b = starts[i], starts[i] + size
        if pieces and a <= end:
            pieces[-1] += passage[end:b]
        else:
            pieces.append(passage[a:b])
        end = b
    return " … ".join(p.strip() for p in pieces)


def pairs(occurrences: Sequence[Occurrence], n_evidence: int) -> list[tuple[int, int]]:
    return [(i, n) for i, occ in enumerate(occurrences) for n in occ.ids if 1 <= n <= n_evidence]


async def verify(
    turn: TurnContext, occurrences: Sequence[Occurrence], ranked: Sequence[Evidence]
) -> dict[tuple[int, int], Verdict]:
    todo = pairs(occurrences, len(ranked))
    if not todo:
        return {}
    rm = turn.roles.verifier
    verdicts: dict[tuple[int, int], Verdict] = {}
    with turn.phase("verify", role="verifier"):
        if rm is None:
            engine = turn.roles.engine
            assert engine is not None

            def offline() -> None:
                for i, n in todo:
                    claim = occurrences[i].claim
                    p = engine.support(claim, best_windows(claim, ranked[n - 1].text))
                    verdicts[(i, n)] = Verdict(p >= SUPPORT_THRESHOLD, round(p, 4))

            try:
                await asyncio.wait_for(asyncio.to_thread(offline), VERIFY_TIMEOUT)
            except Exception as e:  # fail open
                log.warning("offline verification failed, keeping citations: %s", type(e).__name__)
            return {k: verdicts.get(k, Verdict(True, None)) for k in todo}

        sem = asyncio.Semaphore(CONCURRENCY)
        failures: list[str] = []  # what the verifier model's failures said, the first first
        first_done = asyncio.Event()  # the first judgement goes alone: a refused key is sent once

        async def judge(i: int, n: int, alone: bool = False) -> None:
            occ, e = occurrences[i], ranked[n - 1]
            passage, _ = without_instructions(best_windows(occ.claim, e.text))
            claim = occ.claim if len(occ.claim) <= CLAIM_CHARS else occ.claim[:CLAIM_CHARS] + " …"
            prompt = verifier_prompt(claim, passage, e.title, e.section, len(occ.cited) > 1)
            if not alone:
                await first_done.wait()
            try:
                await _judged(i, n, prompt)
            finally:
                first_done.set()

        async def _judged(i: int, n: int, prompt: str) -> None:
            async with sem:
                if failures and not can_retry(failures[0]):
                    return  # a refused key or an unknown model: no other request can succeed
                try:
                    with role_call(rm):
                        result = await verifier_agent.run(
                            prompt, model=rm.model, model_settings=rm.settings or None
                        )
                except Exception as exc:  # fail open: a broken verifier never drops citations
                    log.warning("verifier failed on one citation, keeping it: %s",
                                type(exc.__cause__ or exc).__name__)  # fmt: skip
                    if isinstance(exc, ModelCallError):
                        failures.append(str(exc))
                    verdicts[(i, n)] = Verdict(True, None)
                    return
            turn.usage.add_run(rm, result.usage)
            p = float(result.output.supported_probability)
            verdicts[(i, n)] = Verdict(p >= SUPPORT_THRESHOLD, round(p, 4))

        first: dict[tuple[str, int], tuple[int, int]] = {}  # each distinct pair's first place
        for i, n in todo:
            first.setdefault((occurrences[i].claim, n), (i, n))
        judged = list(first.values())[:MAX_JUDGED]
        if len(first) > MAX_JUDGED:
            log.warning("%d citations left unverified (over %d)", len(first) - MAX_JUDGED,
                        MAX_JUDGED)  # fmt: skip
        tasks = [asyncio.ensure_future(judge(i, n, k == 0)) for k, (i, n) in enumerate(judged)]
        _done, pending = await asyncio.wait(tasks, timeout=VERIFY_TIMEOUT)
        for t in pending:
            t.cancel()
        if pending:
            log.warning("verification timed out on %d citations, keeping them", len(pending))
        if failures:  # the answer says its citations are unchecked; this says why
            turn.roles.edge.say(f"{failures[0].rstrip('.')}: citations it did not judge are "
                                "unchecked.")  # fmt: skip
        for i, n in todo:  # a repeated pair shares its first place's verdict
            place = first[(occurrences[i].claim, n)]
            if place in verdicts:
                verdicts[(i, n)] = verdicts[place]
        await _second_check(turn, occurrences, ranked, verdicts)
    return {k: verdicts.get(k, Verdict(True, None)) for k in todo}


async def _second_check(
    turn: TurnContext,
    occurrences: Sequence[Occurrence],
    ranked: Sequence[Evidence],
    verdicts: dict[tuple[int, int], Verdict],
) -> None:
    """The engine's own score beside the verifier model's verdicts (`support_check`)."""
    engine = turn.roles.engine
    if engine is None or not verdicts:
        return
    try:
        check = await asyncio.wait_for(
            asyncio.to_thread(second_check, engine.emb, occurrences, ranked, verdicts,
                              best_windows), VERIFY_TIMEOUT,
        )  # fmt: skip
    except Exception as e:  # the model's verdicts stand, and the answer says it
        log.warning("the second support check failed: %s", type(e).__name__)
        turn.roles.edge.say("The engine's own support check could not run on this answer.")
        return
    turn.step(
        "verify",
        f"Second check: the engine's support score agreed with "
        f"{check.checked - check.disagreements} of {check.checked} cited sentence(s)",
        checked=check.checked,
        disagreements=check.disagreements,
    )
    if check.disagreements:
        turn.roles.edge.say(overruled_note(check.disagreements))
