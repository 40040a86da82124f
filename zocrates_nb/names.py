"""How a paper's authors are named where it is cited ("Lamport", "Ongaro & Ousterhout",
"Lamport et al."): one rule for the evidence the synthesizer reads and every surface."""

from __future__ import annotations

from collections.abc import Sequence

_PARTICLES = {
    "van",
    "von",
    "de",
    "der",
    "den",
    "da",
    "di",
    "du",
    "le",
    "la",
    "del",
    "della",
    "dos",
    "das",
    "ten",
    "ter",
    "st.",
    "bin",
    "ibn",
    "al",
    "el",
}
_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv"}


def last_name(name: str) -> str:
    """'Leslie Lamport' → 'Lamport', 'Lamport, Leslie' → 'Lamport', 'Robbert van Renesse' →
    'van Renesse', 'Guy L. Steele Jr.' → 'Steele'."""
    name = name.strip()
    if "," in name:
        head = name.split(",")[0].strip()
        if head:
            return head
    words = [w for w in name.split() if w.lower() not in _SUFFIXES]
    if len(words) <= 1:
        return words[0] if words else name
    for i, w in enumerate(words[1:-1], start=1):
        if w.lower() in _PARTICLES:
            return " ".join(words[i:])
    return words[-1]


def format_authors(authors: Sequence[str]) -> str:
    """`A`, `A & B`, `A et al.` by last names."""
    names = [last_name(a) for a in authors if a.strip()]
    if not names:
        return ""
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} & {names[1]}"
    return f"{names[0]} et al."


__all__ = ["format_authors", "last_name"]
