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


_PLURAL_VERB = {"do", "are", "were", "have"}  # "How do Raft pick …" (a part of "Raft and Zab")
_PREPOSITIONS = {"in", "of", "by", "for", "from", "on", "at", "to", "with", "about"}


def _stand_in(text: str, name: str) -> str:
    """`text` with a pronoun for a paper's name, so what is left still reads as a question
    ("How does Raft's leader commit?" → "How does its leader commit?"); after a preposition
    ("… in ZooKeeper?") the name goes with it."""

    def pronoun(m: re.Match[str]) -> str:
        before = text[: m.start()].split()
        prev = before[-1].lower() if before else ""
        many = bool(m.group(2)) or prev in _PLURAL_VERB
        if m.group(1):
            return "their" if many else "its"
        if prev in _PREPOSITIONS:
            return "\0"  # the preposition and the name both go (below)
        return "they" if many else "it"

    out = re.sub(rf"\b{re.escape(name)}(['’]s)?(\s+(?:et al\.?|and (?:colleagues|coauthors|"
                 rf"co-authors)))?(?!\w)", pronoun, text, flags=re.I)  # fmt: skip
    prep = r"(?:,\s*)?\b(?:according to|in|of|by|for|from|on|at|to|with|about)\s+\0\s*,?"
    return re.sub(prep, " ", out, flags=re.I)


def without_names(question: str, names: Sequence[str]) -> str:
    """The question without the names it gives papers ("Velvet", "Snell and colleagues"),
    a pronoun standing in where one reads better, or "" when too little is left to ask."""
    bare = question
    for name in names:
        bare = _stand_in(bare, name)
    bare = bare.replace("\0", " ")
    bare = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(bare.split()))
    if bare == question or len(set(terms(bare))) < 2:
        return ""
    return bare[:1].upper() + bare[1:] if question[:1].isupper() else bare


__all__ = ["aspect", "bare_heading", "drop_name", "without_names"]
