"""Where a sentence stands in a PDF: its page, its characters and the rectangles that cover them.

A quote comes from the index's Markdown, not from the PDF, so it is found again in the PDF's
own characters (PDFium's per-character boxes): both are compared as letters and digits only
(ligatures unfolded, accents, case, spacing, punctuation and end-of-line hyphens aside), the
cited page first, then its neighbours. A sentence running onto the next page is two placements.
The paper's numeric reference markers are passed over on both sides (the index drops them).
Rectangles are in PDF points (the page's user space, origin bottom left), one per text line."""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import pypdfium2 as pdfium
import pypdfium2.raw as raw

from zocrates_nb.ingest.pdf import _open
from zocrates_nb.ingest.pdf_chars import OT1_LIGATURES
from zocrates_nb.ingest.problems import ConversionError
from zocrates_nb.text import strip_reference_markers

# TeX's OT1 text encoding, seen in Type-3 fonts that carry no Unicode map.
MIN_CHARS = 20  # letters and digits: anything shorter is too ambiguous to highlight
NEIGHBOURS = 2  # pages either side of the cited page searched before the rest
MIN_PART = 4  # letters and digits of a sentence's part on either page
FOOT = 100  # letters and digits a page may end with after a sentence's first part (its footer)
HEAD = 300  # and the next page may start with before the sentence goes on (its running head)
# A paper's numeric reference markers ("[12]", "[3, 7]", "[4–6]"): the index's text and the
# answers quote without them, so the PDF's are passed over too.
_REF_MARKER = re.compile(r"\[\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\]")
_LOCK = threading.Lock()  # PDFium is not thread-safe

Rect = tuple[float, float, float, float]


@dataclass
class Placement:
    """The part of a sentence on one page."""

    page_index: int  # 0-based
    page_label: str
    text: str  # the characters as they stand in the PDF (spacing made single)
    rects: list[Rect] = field(default_factory=list)  # [x1, y1, x2, y2] per line
    offset: int = 0  # the first character's index in the page's text
    top: float = 0.0  # its distance from the top of the page, in points


def loose(text: str) -> str:
    """Letters and digits only, folded: the form both sides are compared in. PDFium ends a
    line with "\r\n": that carriage return is no OT1 "fl" (code 13) of a TeX font."""
    return "".join(_fold(ch) for ch in text.replace("\r\n", "\n"))


def _fold(ch: str) -> str:
    if len(ch) == 1 and ord(ch) in OT1_LIGATURES:
        return OT1_LIGATURES[ord(ch)]
    return "".join(c for c in unicodedata.normalize("NFKD", ch).casefold()
                   if c.isalnum() and not unicodedata.combining(c))  # fmt: skip


@dataclass
class _Page:
    index: int
    label: str
    height: float
    chars: str
    folded: str  # loose text of the page
    origin: list[int]  # each folded character's index in `chars`
    boxes: list[Rect | None]


def _read(pdf: pdfium.PdfDocument, index: int) -> _Page:
    page = pdf[index]
    try:
        tp = page.get_textpage()
        try:
            n = tp.count_chars()
            chars = tp.get_text_range(0, n) if n > 0 else ""
            folded: list[str] = []
            origin: list[int] = []
            boxes: list[Rect | None] = []
            markers = {i for m in _REF_MARKER.finditer(chars) for i in range(*m.span())}
            for i in range(len(chars)):
                ch = chars[i]
                generated = bool(raw.FPDFText_IsGenerated(tp.raw, i)) if i < n else True
                box = None if generated or ch.isspace() or i >= n else tp.get_charbox(i)
                boxes.append(box)
                f = "" if generated or i in markers or chars[i : i + 2] == "\r\n" else _fold(ch)
                folded.append(f)
                origin += [i] * len(f)
            try:
                label = pdf.get_page_label(index) or str(index + 1)
            except Exception:  # a broken label tree: the page's number
                label = str(index + 1)
            return _Page(index, label[:40], page.get_size()[1], chars, "".join(folded), origin,
                         boxes)  # fmt: skip
        finally:
            tp.close()
    finally:
        page.close()


def _order(n_pages: int, hint: int | None) -> list[int]:
    """0-based pages to search: the hinted (1-based) page, its neighbours, then the rest."""
    if hint is None or not 1 <= hint <= n_pages:
        return list(range(n_pages))
    first = [hint - 1]
    for d in range(1, NEIGHBOURS + 1):
        first += [p for p in (hint - 1 - d, hint - 1 + d) if 0 <= p < n_pages]
    return first + [p for p in range(n_pages) if p not in first]


def locate(path: Path, sentence: str, page_hint: int | None = None,
           max_pages: int = 2000) -> list[Placement]:  # fmt: skip
    """The placements of `sentence` in the PDF at `path` ([] when it is not there exactly);
    raises ConversionError for a PDF that cannot be opened."""
    want = loose(strip_reference_markers(sentence))
    if len(want) < MIN_CHARS:
        return []
    with _LOCK:
        pdf = _open(path)
        try:
            return _locate(pdf, want, sentence, page_hint, min(len(pdf), max_pages))
        finally:
            pdf.close()


def _locate(pdf: pdfium.PdfDocument, want: str, sentence: str, hint: int | None,
            n_pages: int) -> list[Placement]:  # fmt: skip
    cache: dict[int, _Page] = {}

    def page(i: int) -> _Page:
        if i not in cache:
            cache[i] = _read(pdf, i)
        return cache[i]

    order = _order(n_pages, hint)
    for i in order:
        here = page(i)
        at = here.folded.find(want)
        if at >= 0:
            return [_place(here, at, at + len(want), sentence)]
    # Nowhere whole: it may start at the end of a page and go on at the top of the next, with
    # the page's number or footer, and the next one's running head, in between.
    for i in order:
        here = page(i)
        if i + 1 < n_pages:
            nxt = page(i + 1)
            end = len(here.folded)
            for cut in range(len(want) - MIN_PART, MIN_PART - 1, -1):
                at = here.folded.rfind(want[:cut], max(0, end - cut - FOOT))
                if at < 0 or not _junk(here.folded[at + cut :]):
                    continue
                rest = want[cut:]
                j = nxt.folded.find(rest, 0, HEAD + len(rest))
                if j >= 0:
                    return [_place(here, at, at + cut, sentence),
                            _place(nxt, j, j + len(rest), sentence)]  # fmt: skip
    return []


def _junk(tail: str) -> bool:
    """Whether what a page holds after a sentence's first part can be its footer: short, or a
    page number."""
    return len(tail) <= FOOT and (len(tail) <= 12 or any(c.isdigit() for c in tail[-6:]))


_HYPHEN = re.compile("[\ufffe\x02\u00ad]\\s*")  # PDFium's mark of a word broken at a line end
_CLOSERS = set(".!?;:)]\"'”’")
_OPENERS = set("([\"'“‘")


def _place(page: _Page, start: int, end: int, sentence: str) -> Placement:
    """Characters `start:end` of the page's folded text as a placement, widened over the
    sentence's own opening and closing punctuation where the PDF has it."""
    first, last = page.origin[start], page.origin[end - 1]
    raw_sentence = sentence.strip()
    while (first > 0 and raw_sentence and raw_sentence[0] in _OPENERS
           and page.chars[first - 1] == raw_sentence[0]):  # fmt: skip
        first -= 1
    tail = raw_sentence[len(raw_sentence.rstrip("".join(_CLOSERS))):]
    for ch in tail:
        if last + 1 < len(page.chars) and page.chars[last + 1] == ch and ch in _CLOSERS:
            last += 1
        else:
            break
    rects = _lines([b for b in page.boxes[first : last + 1] if b is not None])
    text = " ".join(_HYPHEN.sub("", page.chars[first : last + 1]).split())
    top = page.height - max((r[3] for r in rects[:1]), default=page.height)
    return Placement(page.index, page.label, text, rects, first, max(0.0, top))


def _lines(boxes: list[Rect]) -> list[Rect]:
    """Character boxes merged per text line (reading order kept): a box joins the current line
    when it overlaps it vertically by more than half its height and does not go back left."""
    out: list[list[float]] = []
    for x1, y1, x2, y2 in boxes:
        if out:
            cur = out[-1]
            overlap = min(cur[3], y2) - max(cur[1], y1)
            height = max(1e-6, min(y2 - y1, cur[3] - cur[1]))
            if overlap > 0.5 * height and x1 >= cur[0] - 1.0:
                cur[0], cur[1] = min(cur[0], x1), min(cur[1], y1)
                cur[2], cur[3] = max(cur[2], x2), max(cur[3], y2)
                continue
        out.append([x1, y1, x2, y2])
    return [(round(a, 3), round(b, 3), round(c, 3), round(d, 3)) for a, b, c, d in out]


__all__ = ["ConversionError", "Placement", "locate", "loose"]
