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


def asks_own_notes(question: str) -> bool:
    """Whether the question asks what the researcher wrote in their notes."""
    return bool(_OWN_NOTES_RE.search(question))


__all__ = ["asks_own_notes"]
