"""Where a quoted sentence stands: its page (and end page) in the document it was quoted from.

A passage spans pages; the sentence a citation supports stands on one of them (or runs across
two). `quote_pages` finds the words of a quote (or of the claim a citation supports) among
the words of the passage's lines of `document.md` and reads their pages from the bundle's own
line → page lookup (`Toc.page_span`). Both the offline engine's quotes and a model's paraphrase
come through here: a verbatim quote matches as one run of words; a paraphrase by its longest
shared run, which must be long enough to name one place.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher
from typing import NamedTuple

from zocrates_nb.ingest.bundle import Bundle

_WORD = re.compile(r"\w+")
# A shared run shorter than this names no place (a paraphrase that shares a phrase or two).
MIN_RUN = 4
# Lines searched beyond the passage's own, either side (a chunk whose range is a line short).
MARGIN = 2


class QuotePlace(NamedTuple):
    """Where a quote stands: its first and last page, and the line its first word is on."""

    page: int | None
    page_end: int | None
    line: int


class _Word(NamedTuple):
    text: str
    line: int  # 1-based line of document.md
    start: int  # column of its first character
    end: int  # column after its last


def _words(bundle: Bundle, line_start: int, line_end: int) -> list[_Word]:
    lines = bundle.lines
    out: list[_Word] = []
    for n in range(max(line_start, 1), min(line_end, len(lines)) + 1):
        out.extend(_Word(m.group(0).lower(), n, m.start(), m.end())
                   for m in _WORD.finditer(lines[n - 1]))  # fmt: skip
    return out


def quote_pages(bundle: Bundle, line_start: int, line_end: int, quote: str) -> QuotePlace | None:
    """The pages of `quote` within lines line_start..line_end of the document (a little either
    side too), or None when it cannot be placed there (no pages recorded, too few words shared)."""
    if not bundle.toc.page_starts:
        return None
    wanted = [w.lower() for w in _WORD.findall(quote)]
    if len(wanted) < MIN_RUN:
        return None
    here = _words(bundle, line_start - MARGIN, line_end + MARGIN)
    matcher = SequenceMatcher(None, [w.text for w in here], wanted, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return None
    best = max(blocks, key=lambda b: b.size)
    if best.size < min(MIN_RUN, len(wanted)):
        return None
    # The quote's other runs near its longest one (a quote is a few sentences at most).
    reach = 2 * len(wanted)
    near = [b for b in blocks if b.size >= MIN_RUN and abs(b.a - best.a) <= reach]
    first = here[min(b.a for b in near)]
    last = here[max(b.a + b.size for b in near) - 1]
    page, page_end = bundle.toc.page_span(first.line, last.line, first.start, last.end - 1)
    return QuotePlace(page, page_end, first.line)
