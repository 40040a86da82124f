"""What each offline role is told, as typed records handed over by the code that runs the role
(the search pipeline, the turn runner, discovery), never read back out of its prompt.

A role's prompt is written for a language model. The embedded engine plays the same role from
the same facts in typed form: the goal, the scope and the run's live budgets (its `RunState`),
the question's parts, the researcher's guidance, the conversation's earlier turns, the evidence
as ranked. Rewording a prompt changes nothing the engine does.

The channel is a context variable set around the role's agent run (`briefed`): pydantic-ai calls
the role's model function in that context (its worker thread gets a copy). A role pinned to
another model ignores it; an offline role run without its brief says so instead of guessing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from zocrates_nb.agents.parts import Part
from zocrates_nb.index.names import Catalogue
from zocrates_nb.retrieval.state import Evidence, FollowUp, RunState
from zocrates_nb.turn import Candidate

if TYPE_CHECKING:
    from zocrates_nb.index import Index
    from zocrates_nb.retrieval.vectors import PassageVectors


@dataclass(frozen=True)
class PastTurn:
    """One earlier turn of the conversation, from the session's own record (compaction
    shortens the model's history, never this)."""

    question: str  # as the researcher asked it
    goal: str = ""  # what its search looked for ("" when it was answered without one)
    answer: str = ""
    papers: tuple[str, ...] = ()  # titles its answer cited, in order


@dataclass(frozen=True)
class CoordinatorBrief:
    message: str  # the researcher's message of this turn
    turns: tuple[PastTurn, ...] = ()  # every earlier turn, oldest first
    scope_kind: str = "library"  # library | selection | collection
    names: Catalogue | None = None  # the library's names: what a correction means


@dataclass(frozen=True)
class SearchBrief:
    """One pass of the search: the run's live state (budget, word ceiling, calls and words
    spent, scope, evidence) and what the pipeline knows beside it."""

    state: RunState
    index: Index
    vectors: PassageVectors
    parts: tuple[Part, ...] = ()
    guidance: str = ""  # the researcher's, at the checkpoint that started this pass
    injected: frozenset[str] = frozenset()  # keys whose outlines came with the input
    pass_start: int = 0  # calls in the run's tool log when this pass began
    catalogue: Catalogue | None = None  # the library's names (what guidance names)


@dataclass(frozen=True)
class WriterBrief:
    """What the synthesizer answers from: the question, the evidence numbered in this order
    ([1] is the first), and the search's report."""

    question: str  # the researcher's words
    goal: str  # the standalone goal searched for
    evidence: tuple[Evidence, ...]
    parts: tuple[Part, ...] = ()
    gaps: tuple[str, ...] = ()
    named: tuple[str, ...] = ()  # item keys of the papers the question names
    known_names: tuple[str, ...] = ()  # the names it uses for them ("Ghemawat", "FLP")
    scope_label: str = ""  # "the selected papers", "the collection “ML”"; "" for the library
    elsewhere: tuple[str, ...] = ()  # titles outside the scope that answer it clearly better
    nearest: tuple[str, ...] = ()  # titles outside the scope as close as any inside it
    vectors: PassageVectors | None = None
    follow_up: FollowUp | None = None  # what a follow-up builds on (the earlier subject)


@dataclass(frozen=True)
class OnlineSearchBrief:
    request: str


@dataclass(frozen=True)
class RecommendBrief:
    question: str
    request: str
    limit: int
    candidates: tuple[Candidate, ...] = ()


Brief = CoordinatorBrief | SearchBrief | WriterBrief | OnlineSearchBrief | RecommendBrief
B = TypeVar("B", CoordinatorBrief, SearchBrief, WriterBrief, OnlineSearchBrief, RecommendBrief)

_BRIEFS: contextvars.ContextVar[Mapping[type, Brief] | None] = contextvars.ContextVar(
    "zocrates_offline_briefs", default=None
)


@contextlib.contextmanager
def briefed(brief: Brief) -> Iterator[None]:
    """Hand `brief` to the offline role run inside the block (one per kind of role)."""
    token = _BRIEFS.set({**(_BRIEFS.get() or {}), type(brief): brief})
    try:
        yield
    finally:
        _BRIEFS.reset(token)


class MissingBrief(RuntimeError):
    """An offline role ran without the typed state it plays from."""


def brief_of(kind: type[B]) -> B:
    got = (_BRIEFS.get() or {}).get(kind)
    if not isinstance(got, kind):
        raise MissingBrief(
            f"the embedded offline engine's {kind.__name__} was not handed over: run the role "
            "through the pipeline that briefs it"
        )
    return got


__all__ = [
    "Brief",
    "CoordinatorBrief",
    "MissingBrief",
    "OnlineSearchBrief",
    "PastTurn",
    "RecommendBrief",
    "SearchBrief",
    "WriterBrief",
    "brief_of",
    "briefed",
]
