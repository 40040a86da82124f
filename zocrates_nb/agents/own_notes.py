"""Questions that ask what the researcher wrote: in a library of other people's papers, what
the user did ("did I remind myself to read …", "what I noted") or owns ("my reading list")
is in their notes. Such a question is answered from the notes first, and is one question
however many papers its note names ("what comes between Paxos and Raft on my list?").
"""

from __future__ import annotations

import re

_OWN_NOTES_RE = re.compile(
    r"\bmy\s+(?:\w+\s+){0,2}?(?:notes?|list|annotations?|highlights?|comments?|summary|"
    r"reminders?|to-?do)\b|"
    r"\b(?:did|have|had)\s+I\s+(?!ask|mean|tell)\w+|\bI['’]ve\s+(?!asked|said|meant)\w+ed\b|"
    r"\bI\s+(?:noted|jotted|wrote|listed|marked|highlighted|annotated|recorded|reminded|"
    r"flagged|saved|kept)\b|\bmyself\b",
    re.I,
)


# The ask with the words that frame it ("according to my own note", "in my reading notes").
_FRAME_RE = re.compile(
    rf"(?:\b(?:according\s+to|in|on|from|to)\s+)?(?:{_OWN_NOTES_RE.pattern})[\s,]*", re.I
)


def unframed(question: str) -> str:
    """What an own-notes question asks, without its ask for the notes: a note's line answers
    "into which sub-problems … break consensus", not "according to my own note"."""
    return " ".join(_FRAME_RE.sub(" ", question).split()) or question


def asks_own_notes(question: str) -> bool:
    """Whether the question asks what the researcher wrote in their notes."""
    return bool(_OWN_NOTES_RE.search(question))


__all__ = ["asks_own_notes", "unframed"]
