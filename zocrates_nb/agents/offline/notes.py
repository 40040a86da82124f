"""The researcher's own notes as evidence: their lines, and questions that ask for them.

A note is written in lines and list items, not a paper's sentences; a question asking what the
researcher wrote ("my reading list", "did I note") is answered by their notes first.
"""

from __future__ import annotations

import re

from zocrates_nb.agents.own_notes import asks_own_notes, unframed
from zocrates_nb.text import split_sentences

_RULE_RE = re.compile(r":?-{2,}:?|")  # a table's rule under its header ("|---|:--:|")
_NOTE_MARK_RE = re.compile(r"^\s*(?:#{1,6}\s+|>\s*|[-*+]\s+|\d{1,3}[.)]\s+)+")


def note_lines(paragraph: str) -> list[str]:
    """A note's evidence: the researcher writes in lines and list items ("Chubby and ZooKeeper
    (systems built on consensus)"), not a paper's sentences; each line (a long one by its
    sentences) without its Markdown marks; a table's row as a line that names its columns
    ("WMT 2014 EN-FR (big): BLEU 41.8"), what the researcher recorded. Headings (the note's
    title, a section's label) are left out: the note is named by its title above its quotes."""
    out: list[str] = table_lines(paragraph)
    for line in paragraph.splitlines():
        if line.lstrip().startswith(("|", "#")):
            continue
        line = _NOTE_MARK_RE.sub("", line).replace("**", "").strip()
        if line:
            out += split_sentences(line) if len(line.split()) > 40 else [line]
    return [" ".join(x.split()) for x in out if x.strip()]


def table_lines(paragraph: str) -> list[str]:
    """A Markdown table's rows below its header, each as its first cell and the others under
    their columns' names: a row alone ("| WMT 2014 EN-FR (big) | 41.8 |") says nothing."""
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in paragraph.splitlines() if line.lstrip().startswith("|")]  # fmt: skip
    rows = [r for r in rows if not all(_RULE_RE.fullmatch(c) for c in r)]
    if len(rows) < 2:
        return []
    head, out = rows[0], []
    for row in rows[1:]:
        rest = "; ".join(f"{h} {v}".strip() for h, v in zip(head[1:], row[1:], strict=False) if v)
        out.append(" ".join(f"{row[0]}: {rest}".split()) if rest else row[0])
    return [x for x in out if x]


def is_note_line(line: str) -> bool:
    """A line of the researcher's own note worth quoting: a few words, mostly letters."""
    letters = sum(c.isalpha() for c in line)
    return len(line.split()) >= 3 and letters >= 0.5 * len(line.replace(" ", ""))


OWN_NOTES = 0.3  # what a note gains when the question asks for the researcher's own notes

__all__ = ["OWN_NOTES", "asks_own_notes", "is_note_line", "note_lines", "table_lines", "unframed"]
