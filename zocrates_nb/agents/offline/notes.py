"""The researcher's own notes as evidence: their lines, and questions that ask for them.

A note is written in lines and list items, not a paper's sentences; a question asking what the
researcher wrote ("my reading list", "did I note") is answered by their notes first.
"""

from __future__ import annotations

import re

from zocrates_nb.agents.own_notes import asks_own_notes
from zocrates_nb.text import split_sentences

_NOTE_MARK_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)+")


def note_lines(paragraph: str) -> list[str]:
    """A note's evidence: the researcher writes in lines and list items ("Chubby and ZooKeeper
    (systems built on consensus)"), not a paper's sentences; each line (a long one by its
    sentences) without its Markdown marks. Table rows and headings (the note's title, a
    section's label) are left out: the note is named by its title above its quotes."""
    out: list[str] = []
    for line in paragraph.splitlines():
        if line.lstrip().startswith(("|", "#")):
            continue
        line = _NOTE_MARK_RE.sub("", line).replace("**", "").strip()
        if line:
            out += split_sentences(line) if len(line.split()) > 40 else [line]
    return [" ".join(x.split()) for x in out if x.strip()]


def is_note_line(line: str) -> bool:
    """A line of the researcher's own note worth quoting: a few words, mostly letters."""
    letters = sum(c.isalpha() for c in line)
    return len(line.split()) >= 3 and letters >= 0.5 * len(line.replace(" ", ""))


OWN_NOTES = 0.3  # what a note gains when the question asks for the researcher's own notes

__all__ = ["OWN_NOTES", "asks_own_notes", "is_note_line", "note_lines"]
