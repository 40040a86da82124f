"""Section-aware chunks of a bundle.

A chunk never crosses a section boundary, so a hit always names one heading an agent can open.
Long sections are cut at paragraph boundaries into pieces of balanced size (a 450-word section
gives two ~225-word chunks, not 400 + 50); a paragraph longer than a chunk is cut at sentences.
Chunk 0 of a paper is its frontmatter (title, authors, year, abstract): the survey view.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from zocrates_nb.index.model import Chunk
from zocrates_nb.ingest.bundle import Asset, Bundle, Section, Toc

# Bump when chunk boundaries or texts change: every document is then re-chunked.
CHUNKER_VERSION = "3"

_ABSTRACT = re.compile(r"^\W*(abstract|summary)\W*$", re.IGNORECASE)
# A sentence ends with . ! ? (optionally closed by quotes/brackets) followed by white space.
_SEPARATOR = re.compile(r"\|?[\s:|-]*-[\s:|-]*\|?")  # a Markdown table's |---|---| row
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")


@dataclass
class _Unit:
    """A run of text that stays in one chunk: a paragraph, or a piece of a long one."""

    line_start: int  # 1-based inclusive
    line_end: int
    text: str
    words: int


def section_heading(section: Section) -> str:
    """Printed heading of a section: "3.2 Raft basics"."""
    return f"{section.number} {section.title}".strip() if section.number else section.title


def frontmatter_text(
    toc: Toc, max_words: int = 400, *, venue: str = "", tags: Sequence[str] = ()
) -> str:
    """Title, authors, year, venue, tags and abstract: one passage of at most `max_words`."""
    head = [toc.title or "(untitled)"]
    if toc.authors:
        head.append("Authors: " + ", ".join(toc.authors))
    if toc.year:
        head.append(f"Year: {toc.year}")
    if venue:
        head.append(f"Venue: {venue}")
    if tags:
        head.append("Tags: " + ", ".join(tags))
    text = "\n".join(head)
    if toc.abstract:
        budget = max(max_words - len(text.split()) - 1, 0)
        words = toc.abstract.split()
        abstract = " ".join(words[:budget]) + (" …" if len(words) > budget else "")
        text += "\nAbstract: " + abstract
    return text


def chunk_bundle(
    bundle: Bundle,
    *,
    item_key: str,
    doc_key: str,
    kind: str,
    min_words: int = 150,
    max_words: int = 400,
    venue: str = "",
    tags: Sequence[str] = (),
) -> list[Chunk]:
    """Chunks of one document, in document order, ids `{doc_key}:{n:04d}`.

    `venue` and `tags` (the library's, e.g. Zotero tags) go into the frontmatter chunk.

    Notes have no bibliographic frontmatter of their own: every chunk of a note is a `note`
    chunk (chunk 0 is the start of the note).
    """
    toc = bundle.toc
    lines = bundle.lines
    is_note = kind == "note"
    drafts: list[tuple[int, int, int, str, str, str, str]] = []  # sort key, a, b, text, ...
    # (order, line_start, line_end, text, section heading, section_id, chunk_type)

    front_words = 0
    s0 = next((s for s in toc.sections if s.id == "s0"), None)
    if not is_note:
        text = frontmatter_text(toc, max_words, venue=venue, tags=tags)
        front_words = len(text.split())
        end = max(s0.line_end, 1) if s0 else 1
        drafts.append((-1, 1, end, text, "", "s0", "frontmatter"))

    for section in toc.sections:
        if section.line_end < section.line_start:
            continue
        units = _units(lines, section.line_start, section.line_end, max_words)
        if section.id == "s0":
            heading = ""
            # The frontmatter chunk already stands for a short s0 (title, authors, abstract);
            # a long one, or a whole document without headings, is body text of its own.
            whole = len(toc.sections) == 1
            if (not is_note and not whole
                    and sum(u.words for u in units) - front_words < min_words):
                continue
        else:
            heading = section_heading(section)
            if not any(u.line_start > section.line_start for u in units):
                continue  # a heading with nothing under it (a parent of subsections)
        if is_note:
            ctype = "note"
        elif _ABSTRACT.match(section.title or ""):
            ctype = "abstract"
        else:
            ctype = "body"
        for group in _pack(units, min_words, max_words):
            text = _join(lines, group)
            drafts.append(
                (0, group[0].line_start, group[-1].line_end, text, heading, section.id, ctype)
            )

    for asset in (*toc.figures, *toc.tables):
        heading = _heading_at(toc, asset.line_start)
        ctype = "table" if asset.id.startswith("t") else "figure"
        # Line of each CSV row (header first), so a piece of a long table points at its rows.
        rows = [n for n in range(asset.line_start, asset.line_end + 1)
                if lines[n - 1].lstrip().startswith("|") and not _SEPARATOR.fullmatch(
                    lines[n - 1].strip())]
        for text, first, last in _asset_texts(asset, max_words):
            a, b = asset.line_start, asset.line_end
            if first > 0 and len(rows) == len((asset.csv or "").splitlines()):
                a, b = rows[first], rows[last]
            drafts.append((1, a, b, text, heading, asset.id, ctype))

    drafts.sort(key=lambda d: (d[0] >= 0, d[1], d[0]))
    chunks = []
    for n, (_order, a, b, text, heading, section_id, ctype) in enumerate(drafts):
        chunks.append(
            Chunk(
                chunk_id=f"{doc_key}:{n:04d}",
                item_key=item_key,
                attachment_key=doc_key,
                line_start=a,
                line_end=b,
                section=heading,
                section_id=section_id,
                chunk_type=ctype,
                text=text,
                title=toc.title,
                authors=list(toc.authors),
                year=toc.year,
                page=toc.page_span(a, b)[0],
                page_end=toc.page_span(a, b)[1],
            )
        )
    return chunks


def _heading_at(toc: Toc, line: int) -> str:
    for section in toc.sections:
        if section.line_start <= line <= section.line_end:
            return section_heading(section)
    return ""


def _asset_texts(asset: Asset, max_words: int) -> list[tuple[str, int, int]]:
    """Label + caption (+ CSV rows of a table, split into pieces that fit a chunk), each
    with the indices of its first and last CSV row (0, 0 without rows)."""
    head = f"{asset.label}: {asset.caption}".strip().rstrip(":")
    words = head.split()
    if len(words) >= max_words // 2:
        head = " ".join(words[: max_words // 2]) + " …"
    if not asset.csv:
        return [(head, 0, 0)]
    budget = max_words - len(head.split())
    pieces: list[list[str]] = [[]]
    starts = [0]
    used = 0
    for k, row in enumerate(asset.csv.splitlines()):
        w = len(row.replace(",", " ").split())
        if w > budget:  # a monster row: keep what fits
            row = " ".join(row.split()[:budget])
            w = budget
        if pieces[-1] and used + w > budget:
            pieces.append([])
            starts.append(k)
            used = 0
        pieces[-1].append(row)
        used += w
    return [(head + "\n" + "\n".join(rows), first, first + len(rows) - 1)
            for rows, first in zip(pieces, starts, strict=True) if rows]


def _join(lines: list[str], group: list[_Unit]) -> str:
    """Text of consecutive units, with the document's blank lines between paragraphs."""
    parts: list[str] = []
    prev_end: int | None = None
    for u in group:
        if prev_end is not None:
            parts.append("\n\n" if u.line_start > prev_end else " ")
        parts.append(u.text)
        prev_end = u.line_end
    return "".join(parts).strip()


def _units(lines: list[str], start: int, end: int, max_words: int) -> list[_Unit]:
    """Paragraphs of lines start..end (1-based inclusive); long ones cut at sentences."""
    units: list[_Unit] = []
    i = start
    end = min(end, len(lines))
    while i <= end:
        if not lines[i - 1].strip():
            i += 1
            continue
        j = i
        while j + 1 <= end and lines[j].strip():
            j += 1
        text = "\n".join(lines[i - 1 : j])
        words = len(text.split())
        if words > max_words:
            units.extend(_sentence_units(lines[i - 1 : j], i, max_words))
        else:
            units.append(_Unit(i, j, text, words))
        i = j + 1
    return units


def _sentence_units(par: list[str], first_line: int, max_words: int) -> list[_Unit]:
    """A long paragraph as sentence runs of at most `max_words`; very long sentences cut."""
    text = "\n".join(par)
    line_offsets = [0]
    for line in par[:-1]:
        line_offsets.append(line_offsets[-1] + len(line) + 1)

    def line_of(offset: int) -> int:
        return first_line + bisect_right(line_offsets, offset) - 1

    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _SENTENCE_END.finditer(text):
        spans.append((pos, m.start()))
        pos = m.end()
    if pos < len(text):
        spans.append((pos, len(text)))

    pieces: list[tuple[int, int]] = []
    for a, b in spans:
        words = list(re.finditer(r"\S+", text[a:b]))
        if len(words) <= max_words:
            pieces.append((a, b))
            continue
        n = math.ceil(len(words) / max_words)
        size = math.ceil(len(words) / n)
        for k in range(0, len(words), size):
            chunk_words = words[k : k + size]
            pieces.append((a + chunk_words[0].start(), a + chunk_words[-1].end()))

    units = []
    for a, b in pieces:
        piece = text[a:b].strip()
        if piece:
            units.append(_Unit(line_of(a), line_of(max(b - 1, a)), piece, len(piece.split())))
    # Sentences are units too small to stand alone: pack them back into paragraph pieces.
    return [_merge(g) for g in _pack(units, 1, max_words)]


def _merge(group: list[_Unit]) -> _Unit:
    text = " ".join(u.text for u in group)
    return _Unit(group[0].line_start, group[-1].line_end, text, sum(u.words for u in group))


def _pack(units: list[_Unit], min_words: int, max_words: int) -> list[list[_Unit]]:
    """Consecutive units grouped into pieces of balanced size, each at most `max_words`."""
    groups: list[list[_Unit]] = []
    cur: list[_Unit] = []
    used = 0
    remaining = sum(u.words for u in units)  # words not yet in a closed group
    for u in units:
        if cur:
            target = remaining / max(math.ceil(remaining / max_words), 1)
            over = used + u.words - target
            close = used + u.words > max_words or (
                used >= min_words and over > 0 and over > target - used
            )
            if close:
                groups.append(cur)
                remaining -= used
                cur, used = [], 0
        cur.append(u)
        used += u.words
    if cur:
        groups.append(cur)
    # A short tail joins its neighbour when both fit in one chunk.
    if len(groups) >= 2:
        tail = sum(u.words for u in groups[-1])
        prev = sum(u.words for u in groups[-2])
        if tail < min_words and tail + prev <= max_words:
            groups[-2].extend(groups.pop())
    return groups
