"""What the researcher's guidance at a checkpoint names: papers (by title, name or author, as
the question's parts are resolved) and sections ("§ 5.2", "section 3", "the fail-over
section"). The next pass opens what it names first; guidance naming nothing steers the search
by its words."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from zocrates_nb.agents.parts import Catalogue, resolve_names

_SECTION_NUMBER_RE = re.compile(r"(?:§|\bsec(?:tion|\.)?)\s*([A-Z]?\d+(?:\.\d+)*)", re.I)
_SECTION_NAME_RE = re.compile(r"\b(?:the\s+)?([\w -]{3,40}?)\s+section\b", re.I)


@dataclass
class Guidance:
    text: str
    papers: list[str] = field(default_factory=list)  # item keys it names
    numbers: list[str] = field(default_factory=list)  # section numbers it names ("5.2")
    headings: list[str] = field(default_factory=list)  # heading words it names ("fail-over")

    @property
    def names_something(self) -> bool:
        return bool(self.papers or self.numbers or self.headings)


def read_guidance(text: str, catalogue: Catalogue | None) -> Guidance:
    """The papers and sections a guidance text names."""
    text = " ".join(text.split())
    g = Guidance(text)
    if not text:
        return g
    if catalogue is not None:
        for keys in resolve_names(text, catalogue):
            g.papers.extend(k for k in keys if k not in g.papers)
    g.numbers = _SECTION_NUMBER_RE.findall(text)
    g.headings = [h.strip() for h in _SECTION_NAME_RE.findall(text) if h.strip().lower()
                  not in ("the", "this", "that", "a", "each", "every")]  # fmt: skip
    return g


__all__ = ["Guidance", "read_guidance"]
