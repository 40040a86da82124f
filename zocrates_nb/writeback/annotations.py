"""An answer's verified quotes written as highlights in the user's PDFs, through the Web API.

A quote is a sentence of the answer (or a span of it in quotation marks) that is the cited
passage's own words, in a turn whose citations were verified and not marked unsupported. It is
found again in the PDF's characters (`ingest.pdf_locate`), so the highlight covers exactly the
sentence as it stands there; one that cannot be found exactly is skipped and said so, as is a
paper read from a folder or an attachment that is not a PDF. Each highlight is one ledger item
named by its place in the PDF (`items.annotation_identity`), written by `web.write_batches`
with its write token: a re-run, a crash or a retry never makes a second highlight."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from zocrates_nb.citelinks import doc_key
from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.ingest.pdf_locate import ConversionError, Placement, locate, loose
from zocrates_nb.text import strip_reference_markers
from zocrates_nb.turn import Citation, TurnResult
from zocrates_nb.writeback.items import annotation_identity
from zocrates_nb.writeback.ledger import BatchItem, Ledger
from zocrates_nb.writeback.result import WriteError
from zocrates_nb.writeback.web import WebLibrary, write_batches

HIGHLIGHT_COLOR = "#ffd400"  # Zotero's default yellow
QUOTE_TAG = "zocrates:quote"
MIN_QUOTE = 20  # letters and digits: shorter spans are not highlighted
_MARKER = re.compile(r"\[(\d+(?:\s*[,;–-]\s*\d+)*)\]")
_QUOTED = re.compile(r"[“\"]([^”\"]{20,})[”\"]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“(\[]?[A-Z0-9])")
_LIST_LEAD = re.compile(r"^\s*(?:[-*+>]|\d+[.)])\s+")

HighlightState = Literal["would write", "written", "already", "failed", "pending"]


class Quote(BaseModel):
    """One verified quote of a turn: the sentence and the passage it quotes."""

    n: int
    item_key: str
    doc_key: str
    title: str = ""
    page: int | None = None  # the citation's page: where the search for the sentence starts
    text: str


class Highlight(BaseModel):
    """One highlight, planned or written."""

    quote: str  # the sentence as it stands in the PDF (this page's part of it)
    n: int
    title: str
    attachment_key: str
    page_index: int
    page_label: str
    rects: list[list[float]] = Field(default_factory=list)
    sort_index: str = ""  # Zotero's "PPPPP|OOOOOO|TTTTT": page, character offset, top
    state: HighlightState = "would write"
    key: str | None = None  # the annotation's key in Zotero
    reason: str = ""  # why it failed or is pending


class Skipped(BaseModel):
    quote: str
    title: str = ""
    why: str


class AnnotateResult(BaseModel):
    """What `annotate` wrote (or, in a dry run, would write), and what it skipped and why."""

    session_id: str
    turn_id: str
    turn: int = 0
    to: str = "web"
    where: str = ""
    dry_run: bool = False
    highlights: list[Highlight] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)
    message: str = ""


@dataclass(frozen=True)
class Attachment:
    """What the index knows of a cited document."""

    key: str
    kind: str  # pdf | html | markdown | text | note
    file: str
    in_zotero: bool  # from a Zotero library (a folder's files are no Zotero items)


Attachments = Callable[[str], Attachment | None]


def verified_quotes(turn: TurnResult) -> tuple[list[Quote], list[Skipped]]:
    """The turn's verified quotes, each once; and the cited sentences left out, with why."""
    if turn.status != "answered" or not turn.answer.strip():
        raise WriteError(f"turn {turn.index or turn.turn_id} has no answer to highlight")
    by_n: dict[int, list[Citation]] = {}
    for c in turn.citations:
        by_n.setdefault(c.n, []).append(c)
    unsupported = {loose(u) for u in turn.unsupported_claims}
    quotes: dict[tuple[str, str], Quote] = {}
    skipped: list[Skipped] = []
    for line in turn.answer.splitlines():
        line = _LIST_LEAD.sub("", line)
        start = 0
        for m in _MARKER.finditer(line):
            segment, start = line[start : m.start()], m.end()
            claim = _SENTENCE_END.split(segment.strip())[-1].strip(" *_")
            if not claim or len(loose(claim)) < MIN_QUOTE:
                continue
            if "[unsupported]" in segment or loose(claim) in unsupported or (
                    turn.citations_verified is not True):  # fmt: skip
                skipped.append(Skipped(quote=claim, why="its citation was not verified"))
                continue
            found = False
            for c in (c for n in _numbers(m.group(1)) for c in by_n.get(n, [])):
                for text in _candidates(segment.strip(), claim):
                    if loose(text) in loose(strip_reference_markers(c.text)):
                        key = (doc_key(c.chunk_id), loose(text))
                        quotes.setdefault(key, Quote(n=c.n, item_key=c.item_key,
                                                     doc_key=key[0], title=c.title, page=c.page,
                                                     text=text))  # fmt: skip
                        found = True
                        break
            if not found:
                skipped.append(Skipped(quote=claim, why="written in the answer's own words, "
                                                        "not quoted from the paper"))  # fmt: skip
    return list(quotes.values()), skipped


def _numbers(inner: str) -> list[int]:
    """'1, 3' → [1, 3]; '2–4' → [2, 3, 4] (a short range only)."""
    out: list[int] = []
    for part in re.split(r"\s*[,;]\s*", inner):
        ends = [int(x) for x in re.split(r"\s*[–-]\s*", part) if x.isdigit()]
        if len(ends) == 2 and ends[0] <= ends[1] <= ends[0] + 20:
            out += range(ends[0], ends[1] + 1)
        elif ends:
            out.append(ends[0])
    return out


def _candidates(segment: str, claim: str) -> list[str]:
    """What of a cited segment may be a quote, longest first: the segment, its last sentence,
    the spans it sets in quotation marks."""
    spans = [m.group(1).strip() for m in _QUOTED.finditer(segment)]
    seen: dict[str, None] = {}
    for text in (segment.strip(" *_"), claim, *spans):
        if len(loose(text)) >= MIN_QUOTE:
            seen.setdefault(text, None)
    return list(seen)


def plan(turn: TurnResult, attachments: Attachments) -> tuple[list[Highlight], list[Skipped]]:
    """The highlights the turn's verified quotes make (one per page a sentence is on), and
    the quotes skipped with why."""
    quotes, skipped = verified_quotes(turn)
    out: list[Highlight] = []
    for q in quotes:
        doc = attachments(q.doc_key)
        why = _unusable(doc)
        if why or doc is None:
            skipped.append(Skipped(quote=q.text, title=q.title, why=why))
            continue
        try:
            places = locate(Path(doc.file), q.text, q.page)
        except (ConversionError, OSError) as e:
            skipped.append(Skipped(quote=q.text, title=q.title, why=f"its PDF could not be "
                                   f"read: {str(e)[:160]}"))  # fmt: skip
            continue
        if not places:
            skipped.append(Skipped(quote=q.text, title=q.title,
                                   why="not found exactly in the PDF's text"))  # fmt: skip
            continue
        out += [Highlight(quote=p.text, n=q.n, title=q.title, attachment_key=doc.key,
                          page_index=p.page_index, page_label=p.page_label,
                          rects=[list(r) for r in p.rects], sort_index=sort_index(p))
                for p in places]  # fmt: skip
    return out, skipped


def _unusable(doc: Attachment | None) -> str:
    if doc is None:
        return "its document is no longer in the index"
    if doc.kind == "note":
        return "your own note, not a PDF: there is nothing to highlight"
    if not doc.in_zotero:
        return "read from a folder, not from Zotero: there is no Zotero PDF to highlight"
    if doc.kind != "pdf":
        return f"its attachment is not a PDF ({doc.kind}): Zotero highlights PDFs"
    if not doc.file or not Path(doc.file).is_file():
        return "its PDF file is not on this computer"
    return ""


def sort_index(p: Placement) -> str:
    """Zotero's sort index of a PDF annotation: page, character offset, top (in points)."""
    return (f"{min(p.page_index, 99999):05d}|{min(p.offset, 999999):06d}|"
            f"{min(int(p.top), 99999):05d}")  # fmt: skip


def annotation_item(h: Highlight, turn: TurnResult) -> dict[str, Any]:
    """The annotation's Web API JSON (itemType annotation, a child of the PDF attachment)."""
    comment = (f"{turn.prompt}\n\n(zocrates-nb, session {turn.session_id}, turn {turn.index}, "
               f"citation [{h.n}])")  # fmt: skip
    return {
        "itemType": "annotation",
        "parentItem": h.attachment_key,
        "annotationType": "highlight",
        "annotationText": h.quote,
        "annotationComment": comment,
        "annotationColor": HIGHLIGHT_COLOR,
        "annotationPageLabel": h.page_label,
        "annotationSortIndex": h.sort_index,
        "annotationPosition": json.dumps({"pageIndex": h.page_index, "rects": h.rects}),
        "tags": [{"tag": QUOTE_TAG}],
    }


def entries(turn: TurnResult, highlights: list[Highlight]) -> list[BatchItem]:
    """One ledger item per highlight, named by its place in the PDF."""
    out = []
    for h in highlights:
        item = annotation_item(h, turn)
        ident = annotation_identity(item)
        out.append(BatchItem(ident, item, [ident], h.quote[:200]))
    return out


def write_highlights(turn: TurnResult, attachments: Attachments, web: ZoteroWebSettings, *,
                     ledger: Ledger, dry_run: bool = False,
                     environ: dict[str, str] | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> AnnotateResult:  # fmt: skip
    """Plan the turn's highlights and (unless `dry_run`) write those not written before."""
    highlights, skipped = plan(turn, attachments)
    result = AnnotateResult(session_id=turn.session_id, turn_id=turn.turn_id, turn=turn.index,
                            dry_run=dry_run, highlights=highlights, skipped=skipped,
                            where=f"{web.library_type} library {web.library_id}"
                            if web.library_id else "your Zotero web library (zotero.web."
                            "library_id is not set yet)")  # fmt: skip
    batch = entries(turn, highlights)
    if dry_run or not batch:
        if not highlights:
            result.message = "No verified quote of this turn could be highlighted."
        return result
    library = WebLibrary(web, environ=environ)
    saved = ledger.saved()
    for h, e in zip(highlights, batch, strict=True):
        before = saved.get(e.candidate_id)
        if before is not None and before.target == library.target:
            h.state, h.key = "already", before.item_key
    todo = [e for h, e in zip(highlights, batch, strict=True) if h.state != "already"]
    written = write_batches(library, ledger, todo, sleep=sleep)
    for h, e in zip(highlights, batch, strict=True):
        if h.state == "already":
            continue
        if key := written.keys.get(e.candidate_id):
            h.state, h.key = "written", key
        elif e.candidate_id in written.failed:
            h.state, h.reason = "failed", written.failed[e.candidate_id]
        else:
            h.state, h.reason = "pending", "not sent yet: run the same command again"
    result.message = written.message
    return result

