"""What a question asks about, for matching the headings of a paper's sections: the question
without its question words and the names it is about ("how does Raft elect a leader?" → "elect
leader"), against a heading without its number ("5.2 Leader election" → "Leader election")."""

from __future__ import annotations

import re
from collections.abc import Sequence

from zocrates_nb.text import entities, terms

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


def drop_name(text: str, name: str) -> str:
    """`text` without a paper's name, its possessive and its "et al." ("Snell and colleagues")."""
    return re.sub(rf"\b{re.escape(name)}(?:['’]s)?(?:\s+(?:et al\.?|and (?:colleagues|"
                  rf"coauthors|co-authors)))?(?!\w)", " ", text, flags=re.I)  # fmt: skip


def without_names(question: str, names: Sequence[str]) -> str:
    """The question without the names it gives papers ("Velvet", "Snell and colleagues"), or
    "" when too little is left to ask anything."""
    bare = question
    for name in names:
        bare = drop_name(bare, name)
    bare = re.sub(r"\s+(?:in|of|by|for|from|on|at|to)(?=\s*[?.!]|$)", "", bare)
    bare = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(bare.split()))
    return bare if bare != question and len(set(terms(bare))) >= 2 else ""


__all__ = ["aspect", "bare_heading", "drop_name", "without_names"]
