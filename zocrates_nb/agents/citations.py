"""Citations of an answer: sanitising, finding, verifying, pruning, and the two tiers of sources.

Every form the synthesizer cites with is first read into flat markers (`[1]`, `[2, 3]`: see
`citation_forms`). Every occurrence is checked against the chunk it names (the claim is the
sentence around the marker); ids that the check does not support, or that name no passage, are
removed in place (`[1, 2]` → `[1]`). A sentence is judged by all the passages it cites
together: a marker left empty in a sentence another citation still supports is simply removed;
a sentence left with no supported citation keeps one visible `[unsupported]` mark in their
place, never silently de-cited. When the check itself failed, the answer says its citations
were not verified. Surviving markers are renumbered by first appearance so the reader sees 1,
2, 3… Every paper that was retrieved lands in exactly one tier: Cited (at least one surviving
citation) or Other considered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from zocrates_nb.agents.citation_forms import (
    MARKER_RE,
    Paper,
    citing,
    marker,
    parse_ids,
    read_author_year,
    read_forms,
)
from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.library.paths import KEY_PATTERN
from zocrates_nb.retrieval.pages import quote_pages
from zocrates_nb.retrieval.state import Evidence
from zocrates_nb.turn import Citation, CitedPlace, Source

_KEY_TAG_RE = re.compile(
    r"\s*\[(?:(?:Parent|Attachment|Note|Item|Document)\s+)?Key:\s*[^\]]*\]", re.I
)
_CHUNK_WORD_RE = re.compile(
    r"\(?\b[Cc]hunk(?:\s+id)?\s*:?\s*`?[A-Za-z0-9_-]{4,}:[A-Za-z0-9_.-]+`?\)?"
)


@dataclass
class Occurrence:
    """One citation marker in the text and the claim it supports."""

    start: int
    end: int
    ids: list[int]
    claim: str  # the sentence around the marker, markers removed
    sentence: int = 0  # where its sentence starts: the markers of one sentence judge it together
    cited: list[int] = field(default_factory=list)  # every id its sentence cites


UNSUPPORTED_MARK = "[unsupported]"
NOT_VERIFIED_NOTE = (
    "_Citations not verified: the citation check failed, so the markers above are unchecked._"
)


@dataclass
class Verdict:
    supported: bool
    probability: float | None  # None: the check failed and we failed open
    overruled: bool = False  # the verifier model accepted it; the engine's own check did not


@dataclass
class CitedAnswer:
    """The answer after verification, with what its markers point at."""

    text: str
    citations: list[Citation] = field(default_factory=list)
    cited_sources: list[Source] = field(default_factory=list)
    other_sources: list[Source] = field(default_factory=list)
    # evidence index (1-based, in the order given to the synthesizer) → new citation number
    renumbered: dict[int, int] = field(default_factory=dict)
    # evidence index → best support probability among its checked occurrences
    support: dict[int, float] = field(default_factory=dict)
    pruned: int = 0  # ids removed by verification
    unsupported: list[str] = field(default_factory=list)  # claims left with no supported citation
    refuted: set[int] = field(default_factory=set)  # evidence indices cited only unsupportedly
    overruled: list[str] = field(default_factory=list)  # claims the second check took support of
    verified: bool | None = None  # None: nothing to check; False: the check failed somewhere


# ---------------------------------------------------------------------------- sanitising
def sanitize(
    text: str,
    keys: Iterable[str] = (),
    chunk_ids: Iterable[str] = (),
    papers: Sequence[Paper] = (),
    forms: bool = True,
) -> str:
    """Strip leaked plumbing (`[Key: …]` tags, chunk ids, item keys) and read every citation
    form into the flat markers the check reads (`【1】`, `[^2]`, `[Chunk 3]` → `[1]`…);
    with `papers` (each passage's authors and year), author-year citations too. `forms`
    False: the writer cites only by `[n]` (the offline engine), and the braces, superscripts
    and bracketed numbers of its quotes are the papers' own text ("depths of {50, 101, 152}"
    is no citation to be marked unsupported)."""
    out = _KEY_TAG_RE.sub("", text)
    if forms:
        out = read_forms(read_author_year(out, papers) if papers else out)
    for cid in sorted({c for c in chunk_ids if c}, key=len, reverse=True):
        out = re.sub(r"\(?`?" + re.escape(cid) + r"`?\)?", "", out)
    out = _CHUNK_WORD_RE.sub("", out)
    # Generic chunk ids: KEY:s4 / KEY:0003 / KEY:full.
    plumbing = r":(?:s\d+|f\d+|t\d+|p\d+|\d{3,5}|full|abstract)\b`?"
    out = re.sub(r"`?\b" + KEY_PATTERN + plumbing, "", out)
    known = sorted({k for k in keys if k and len(k) >= 4}, key=len, reverse=True)
    for k in known:
        # `(HCZLU22L: "Title")` → `("Title")`; `HCZLU22L — ` → ``; bare key → ``.
        out = re.sub(re.escape(k) + r"\s*[:—–-]\s*(?=[\"'“A-Za-z(])", "", out)
        out = re.sub(r"[\(\[]\s*" + re.escape(k) + r"\s*[\)\]]", "", out)
        out = re.sub(r"\b" + re.escape(k) + r"\b", "", out)
    # Tidy what the removals left behind.
    out = re.sub(r"\(\s*\)|\[\s*\]", "", out)
    out = re.sub(r"[ \t]{2,}", " ", out)
    out = re.sub(r" +([.,;:!?])", r"\1", out)
    return out.strip()


# ---------------------------------------------------------------------------- finding
_SENT_END_RE = re.compile(
    r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z\"'(\[*#-])|\n\s*\n|\n(?=\s*[-*#>]|\s*\d+\.)"
)


def _sentence_bounds(text: str, pos: int) -> tuple[int, int]:
    start = 0
    for m in _SENT_END_RE.finditer(text, 0, pos):
        # A marker right after a full stop (`… fails. [3]`) belongs to the sentence before it.
        if m.end() <= pos and not re.match(r"\s*\[\d", text[m.end() : pos + 2]):
            start = m.end()
    nxt = _SENT_END_RE.search(text, pos)
    end = nxt.start() if nxt else len(text)
    return start, end


def find_occurrences(text: str, n_evidence: int | None = None) -> list[Occurrence]:
    """Every marker with its claim sentence; ids out of range are kept (verification drops them)."""
    occs: list[Occurrence] = []
    for m in MARKER_RE.finditer(text):
        ids = parse_ids(m.group(1))
        # A citation-looking number right after a word like 'Figure' or 'Table' is not a citation.
        if not ids or not citing(text, m.start()):
            continue
        s, e = _sentence_bounds(text, m.start())
        claim = MARKER_RE.sub("", text[s:e])
        claim = re.sub(r"\s+", " ", claim).strip(" -*#>\n")
        claim = re.sub(r"\s+([.,;:!?])", r"\1", claim)
        occs.append(Occurrence(m.start(), m.end(), ids, claim, s))
    for occ in occs:
        together = [n for o in occs if o.sentence == occ.sentence for n in o.ids]
        occ.cited = list(dict.fromkeys(together))
    return occs


# ---------------------------------------------------------------------------- pruning
def apply_verdicts(
    text: str,
    occurrences: Sequence[Occurrence],
    keep: dict[tuple[int, int], bool],
    n_evidence: int,
) -> tuple[str, int, list[int]]:
    """Remove ids judged unsupported (or naming no passage). A sentence is judged by all its
    markers together: one left empty where another still cites is removed; a sentence left
    with none gets one visible `[unsupported]` mark (at its last marker). Returns (text, ids
    pruned, indices of the marked occurrences)."""
    survivors = [
        [n for n in occ.ids if 1 <= n <= n_evidence and keep.get((i, n), True)]
        for i, occ in enumerate(occurrences)
    ]
    cited_sentences = {occ.sentence for occ, s in zip(occurrences, survivors, strict=True) if s}
    last_of = {occ.sentence: i for i, occ in enumerate(occurrences)}
    pieces: list[str] = []
    last = 0
    pruned = 0
    marked: list[int] = []
    for i, occ in enumerate(occurrences):
        pruned += len(occ.ids) - len(survivors[i])
        before = text[last : occ.start]
        if survivors[i]:
            pieces += [before, marker(survivors[i])]
        elif occ.sentence in cited_sentences or last_of[occ.sentence] != i:
            pieces.append(before.rstrip(" \t") if _closes(text, occ.end) else before)
        else:
            pieces += [before, UNSUPPORTED_MARK]
            marked.append(i)
        last = occ.end
    pieces.append(text[last:])
    return "".join(pieces), pruned, marked


def _closes(text: str, end: int) -> bool:
    """Whether a space before a removed marker ending at `end` would be left dangling."""
    return end >= len(text) or text[end] in " \t\n.,;:!?)"


def renumber(text: str) -> tuple[str, dict[int, int]]:
    """Renumber surviving markers 1, 2, 3… by first appearance; returns (text, old → new)."""
    mapping: dict[int, int] = {}

    def sub(m: re.Match[str]) -> str:
        ids = parse_ids(m.group(1))
        if not ids or not citing(m.string, m.start()):
            return m.group(0)
        new = []
        for n in ids:
            if n not in mapping:
                mapping[n] = len(mapping) + 1
            new.append(mapping[n])
        return "[" + ", ".join(str(n) for n in sorted(set(new))) + "]"

    return MARKER_RE.sub(sub, text), mapping


# ---------------------------------------------------------------------------- sources
def _source(e: Evidence, tier: str, numbers: Sequence[int] = ()) -> Source:
    return Source.from_passage(
        e,
        n=numbers[0] if numbers else None,
        numbers=list(numbers),
        title=e.title or "Untitled",
        tier="cited" if tier == "cited" else "other",
    )


def build_sources(
    ranked: Sequence[Evidence],
    gathered: Sequence[Evidence],
    renumbered: dict[int, int],
) -> tuple[list[Source], list[Source]]:
    """Cited papers (ordered by their first citation, with every number that cites them: two
    passages of one paper are two numbers, one entry) and every other retrieved paper."""
    numbers: dict[str, list[int]] = {}
    rep: dict[str, Evidence] = {}
    for old, new in sorted(renumbered.items(), key=lambda kv: kv[1]):
        e = ranked[old - 1]
        numbers.setdefault(e.item_key, []).append(new)
        rep.setdefault(e.item_key, e)
    cited = [_source(rep[k], "cited", ns) for k, ns in numbers.items()]
    others: list[Source] = []
    seen = set(numbers)
    for e in [*ranked, *gathered]:
        if e.item_key in seen:
            continue
        seen.add(e.item_key)
        others.append(_source(e, "other"))
    return cited, others


def build_citations(
    ranked: Sequence[Evidence], renumbered: dict[int, int], support: dict[int, float]
) -> list[Citation]:
    out = []
    for old, new in sorted(renumbered.items(), key=lambda kv: kv[1]):
        e = ranked[old - 1]
        out.append(
            Citation.from_passage(e, n=new, title=e.title or "Untitled", support=support.get(old))
        )
    return out


def check_unsourced(text: str) -> CitedAnswer:
    """An answer written without evidence (the coordinator's own reply): every citation
    marker in it names no passage, so each is removed and its sentence marked."""
    return finish(text, find_occurrences(text, 0), {}, [], [])


def finish(
    text: str,
    occurrences: Sequence[Occurrence],
    verdicts: dict[tuple[int, int], Verdict],
    ranked: Sequence[Evidence],
    gathered: Sequence[Evidence],
) -> CitedAnswer:
    """Prune unsupported ids, renumber, and build citations and the two tiers."""
    keep = {k: v.supported for k, v in verdicts.items()}
    pruned_text, pruned, marked = apply_verdicts(text, occurrences, keep, len(ranked))
    final_text, mapping = renumber(pruned_text)
    verified = all(v.probability is not None for v in verdicts.values()) if verdicts else None
    if verified is False:
        final_text = f"{final_text.rstrip()}\n\n{NOT_VERIFIED_NOTE}"
    flagged = {occurrences[i].sentence for i in marked}
    refuted = {
        n for o in occurrences if o.sentence in flagged for n in o.ids if 1 <= n <= len(ranked)
    }
    support: dict[int, float] = {}
    for (_, n), v in verdicts.items():
        if v.probability is not None:
            support[n] = max(support.get(n, 0.0), v.probability)
    cited, others = build_sources(ranked, gathered, mapping)
    overruled = [(k, v) for k, v in verdicts.items() if v.overruled]
    return CitedAnswer(
        text=final_text,
        citations=build_citations(ranked, mapping, support),
        cited_sources=cited,
        other_sources=others,
        renumbered=mapping,
        support=support,
        pruned=pruned,
        unsupported=list(dict.fromkeys(occurrences[i].claim for i in marked)),
        refuted=refuted - set(mapping),
        overruled=list(dict.fromkeys(occurrences[i].claim for (i, _), v in overruled)),
        verified=verified,
    )


# ---------------------------------------------------------------------------- pages
def _quoted(text: str, occs: Sequence[Occurrence], k: int) -> str:
    """What the k-th marker stands after: its line of the answer, from the marker before it."""
    start = text.rfind("\n", 0, occs[k].start) + 1
    if k and occs[k - 1].end > start:
        start = occs[k - 1].end
    return MARKER_RE.sub(" ", text[start : occs[k].start])


def place_citations(
    answer: CitedAnswer, ranked: Sequence[Evidence], bundle_of: Callable[[str], Bundle | None]
) -> None:
    """Give each `[n]` of the answer the page of the sentence it stands after (`occurrences`),
    and each citation the first of them as its `page`: a passage spans pages, the sentence a
    claim rests on stands on one (or runs across two)."""
    by_n = {c.n: c for c in answer.citations}
    passage = {new: ranked[old - 1] for old, new in answer.renumbered.items()}
    occs = find_occurrences(answer.text)
    for k, occ in enumerate(occs):
        quoted = _quoted(answer.text, occs, k)
        for n in occ.ids:
            c, e = by_n.get(n), passage.get(n)
            if c is None or e is None:
                continue
            place = None
            if e.line_start is not None and e.line_end is not None:
                bundle = bundle_of(e.attachment_key)
                if bundle is not None:
                    place = quote_pages(bundle, e.line_start, e.line_end, quoted)
            c.occurrences.append(
                CitedPlace(page=place.page, page_end=place.page_end) if place
                else CitedPlace(page=e.page, page_end=e.page_end)
            )
    for c in answer.citations:
        if c.occurrences:
            c.page, c.page_end = c.occurrences[0].page, c.occurrences[0].page_end
