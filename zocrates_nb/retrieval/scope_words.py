"""Words of a question that point at its scope ("this paper", "the selected paper's", "in this
collection", "within my bioinformatics papers"), taken out of what is searched and matched.

The scope is applied as a filter. Its words would only be searched for: in a search of the whole
library they rank reference lists and any passage saying "this paper" over the passage that
answers, so a paper outside the selection that answers is never seen; inside a paper they lift
its roadmap. A paper named by its own name ("the tidy data paper", "the T5 paper") is no scope
word, and neither are the researcher's notes or a note's title ("my consensus reading list").
"""

from __future__ import annotations

import re

_NOUN = r"(?:papers?|articles?|items?|collections?|library|selection|works?|stud(?:y|ies))"
_SCOPE_RE = re.compile(
    r"(?P<prep>\b(?:according to|in|within|from|among|amongst|across|of|on|for)\s+)?"
    r"\b(?:(?P<det>this|these|the selected|the chosen|my|our)\s+(?:[\w-]+\s+){0,2}?"
    rf"{_NOUN}(?P<poss>['’]s)?\b|the\s+(?:[\w-]+\s+){{0,2}}?{_NOUN}\s+here\b)"
    r"(?P<comma>\s*,)?",
    re.I,
)


def _replace(m: re.Match[str]) -> str:
    if m.group("prep"):
        return " "  # "In this paper, how …" → "how …"; "Which paper in this collection …"
    if m.group("poss"):
        return " the "  # "the selected paper's service" → "the service"
    det = (m.group("det") or "").lower()
    return " they " if det == "these" or m.group(0).rstrip(" ,").endswith("s") else " it "


def scope_free(text: str) -> str:
    """`text` without the words that point at its scope, or `text` when nothing else is left."""
    out = _SCOPE_RE.sub(_replace, text)
    out = re.sub(r"\s+([?.!,;:])", r"\1", " ".join(out.split())).strip(" ,")
    if out == " ".join(text.split()) or len(re.findall(r"[A-Za-z]{3,}", out)) < 2:
        return text
    return out[:1].upper() + out[1:] if text[:1].isupper() else out


__all__ = ["scope_free"]
