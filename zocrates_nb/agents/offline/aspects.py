"""What a question asks about, for matching the headings of a paper's sections: the question
without its question words and the names it is about ("how does Raft elect a leader?" → "elect
leader"), against a heading without its number ("5.2 Leader election" → "Leader election")."""

from __future__ import annotations

import re

from zocrates_nb.text import entities

_ASPECT_DROP_RE = re.compile(
    r"\b(how|what|which|why|when|where|who|does|do|did|is|are|was|were|the|a|an|"
    r"in|of|this|these|paper|papers|compare|contrast|say|explain|describe)\b",
    re.I,
)


def aspect(query: str) -> str:
    """What a question asks about, for matching headings: without question words and the
    names of what it is about ("how does Raft elect a leader?" → "elect leader")."""
    text = _ASPECT_DROP_RE.sub(" ", query)
    for name in entities(query):
        text = re.sub(rf"\b{re.escape(name)}(['’]s)?\b", " ", text)
    out = " ".join(text.split()).strip(" ?.,")
    return out if len(out) >= 4 else query


def bare_heading(heading: str) -> str:
    """A heading without its numbering ("5.2 Leader election" → "Leader election")."""
    return re.sub(r"^\s*(?:[A-Z]|\d+)(?:\.\d+)*\.?\s+(?=[A-Za-z])", "", heading) or heading



__all__ = ["aspect", "bare_heading"]
