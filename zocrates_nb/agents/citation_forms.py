"""The citation grammar: every form a model cites with, read into one explicit marker.

Models cite in many forms: `[1]`, `[1, 2]`, `[1-3]` (or `[3-1]`), `[1][2]`, `【1】` and
`【4:0†source】`, `[1†L10-L15]`, `[^1]`, `(2)`, `[[1]]`, `<sup>1</sup>`, `<cite>1</cite>`,
`timeouts¹`, `{1}`, `[S1]`, `(Source 2)`, `[citation:3]`, `[1](#source-1)`. Every form becomes the
one marker the check reads, `[n, m]` with explicit passage numbers, so each occurrence is
verified like any other: no form can keep a claim that looks cited but was never checked. A
number that names no passage stays in the marker (the check removes it and flags the
sentence); a range wider than `RANGE_CAP` passages is not expanded: it becomes `[0]`, which
names no passage, so the sentence is flagged. Adjacent markers (`[1][2]`, `[1], [2]`) merge
into one, so a sentence is judged by all the passages it cites together, whatever the form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

RANGE_CAP = 5  # a range may name at most this many passages (`[2-6]`); wider is flagged
NO_PASSAGE = 0  # a number that names no passage: what a flagged range becomes

_NUM = r"\d{1,12}"
_LIST = rf"{_NUM}(?:\s*(?:,\s*(?:and|&)|,|;|-|–|—|and|&)\s*{_NUM})*"

# Words before a number that make it not a citation: `Table [2]`, `Equation (3)`, `step (2)`.
NOT_CITING = re.compile(
    r"(figure|fig\.|figs\.|table|eq\.|eqs\.|equation|section|§|step|steps|rule|rules|lemma|"
    r"theorem|definition|algorithm|appendix|chapter|phase|stage)\s*$",
    re.I,
)

# `【1】`, `【4:0†source】`, `【1, 2】`, fullwidth `［1］`: the first number of each entry counts.
_LENTICULAR_RE = re.compile(r"[【［]\s*((?:\d{1,12}(?::\d+)?(?:†[^】］\n]{0,40})?[\s,;]*)+)[】］]")
# `[1†L10-L15]`, `[2†source]` (a browsing model's marks): the number counts.
_DAGGER_RE = re.compile(r"\[\s*(\d{1,12})\s*†[^\]\n]{0,40}\]")
# `[^1]` (and `[^1^]`) references; a footnote's own definition line (`[^1]: …`) is dropped.
_FOOTNOTE_DEF_RE = re.compile(r"^[ \t]*\[\^\d{1,12}\^?\]:.*(?:\n|$)", re.M)
_FOOTNOTE_RE = re.compile(rf"\[\^({_NUM})\^?\]")
# `[[1]]`, `[#1]`, `^[1]`, `<sup>1</sup>`, `<sup>[1]</sup>`, `<cite>1</cite>`, `<ref>2</ref>`,
# `{1}` (never `x^{2}` nor `\cite{3}`), `[S1]` and `[P2]`.
_DOUBLE_RE = re.compile(rf"\[\[\s*({_LIST})\s*\]\]")
_HASH_RE = re.compile(rf"\[\s*#\s*({_NUM})\s*\]")
_CARET_RE = re.compile(rf"\^\[\s*({_LIST})\s*\]")
_SUP_RE = re.compile(rf"<(sup|cite|ref)>\s*\[?\s*({_LIST})\s*\]?\s*</\1>", re.I)
_CURLY_RE = re.compile(rf"(?<![\w^_\\$}}]){{\s*({_LIST})\s*}}")
_LETTER_RE = re.compile(rf"\[\s*[SsPp]({_NUM}(?:\s*,\s*[SsPp]?{_NUM})*)\s*\]")
# `(Source 2)`, `[Sources: 1, 2]`, `(passage 3)`, `[ref. 4]`, `[citation:5]`, `[Chunk 3]`.
_WORDY_RE = re.compile(
    rf"[\[(]\s*(?:chunks?|sources?|evidence|refs?\.?|references?|passages?|citations?|cite|"
    rf"docs?|documents?|excerpts?|src)\s*[#:]?\s*({_LIST})\s*[\])]",
    re.I,
)
# A marker made a link (`[1](#source-1)`, `[2](https://…)`): the marker alone.
_LINKED_RE = re.compile(rf"\[\s*({_LIST})\s*\]\((?:#|https?://)[^()\s]{{0,300}}\)")
# Superscript digits after a word or a sentence's punctuation (`timeouts¹`, `elected.²`,
# `¹⁻³`), never after a number or a short unit (`10²`, `m²`, `km²`).
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SUPERSCRIPT_RE = re.compile(
    r"(?:(?<=[A-Za-z]{3})|(?<=[.,;:!?)\]”\"'’]))[ \t]?([⁰¹²³⁴⁵⁶⁷⁸⁹]+(?:[,⁻][⁰¹²³⁴⁵⁶⁷⁸⁹]+)*)"
    r"(?![\w⁰¹²³⁴⁵⁶⁷⁸⁹])"
)
# `(2)`, `(1, 3)`, `(2-4)` standing for a source: after a word and a space, before a sentence's
# punctuation or its end; never an enumeration (`(1) first … (2) second`) nor `O(1)`.
_PAREN_RE = re.compile(
    rf"(?<=[\w.,;:'\"”’)\]])[ \t]+\(\s*({_NUM.replace('12', '3')}(?:\s*(?:,|;|-|–)\s*\d{{1,3}})*)"
    rf"\s*\)(?=[ \t]*(?:[.,;:!?]|\n|$|\[))"
)
MARKER_RE = re.compile(rf"\[\s*({_LIST})\s*\]")
# Two or more markers in a row (`[1][2]`, `[1], [2]`, `[1] [3]`): one marker.
_RUN_RE = re.compile(rf"\[\s*{_LIST}\s*\](?:[ \t]*,?[ \t]*\[\s*{_LIST}\s*\])+")


def parse_ids(inner: str) -> list[int]:
    """'2, 3' → [2, 3]; '2-4' and '4-2' → [2, 3, 4]; a range over `RANGE_CAP` passages →
    [0] (names no passage: flagged, never expanded). Order of first mention, no repeats."""
    ids: list[int] = []
    for part in re.split(r"\s*(?:[,;&]|\band\b)\s*", inner.strip()):
        m = re.fullmatch(r"(\d+)\s*[-–—]\s*(\d+)", part)
        if m:
            a, b = sorted((int(m.group(1)), int(m.group(2))))
            ids.extend(range(a, b + 1) if b - a < RANGE_CAP else [NO_PASSAGE])
        elif part.isdigit():
            ids.append(int(part))
    return list(dict.fromkeys(ids))


def marker(ids: list[int]) -> str:
    return "[" + ", ".join(str(n) for n in ids) + "]"


def citing(text: str, start: int) -> bool:
    """Whether a number at `start` can be a citation (not `Table [2]`, `Equation (3)`)."""
    return not NOT_CITING.search(text[max(0, start - 14) : start])


def read_forms(text: str) -> str:
    """`text` with every citation form rewritten as the explicit `[n, m]` marker."""

    def explicit(m: re.Match[str]) -> str:
        if not citing(m.string, m.start()):
            return m.group(0)
        ids = parse_ids(m.group(1))
        return marker(ids) if ids else m.group(0)

    def lenticular(m: re.Match[str]) -> str:
        firsts = re.findall(r"(\d{1,12})(?::\d+)?(?:†[^,;\s]*)?", m.group(1))
        return marker(list(dict.fromkeys(int(n) for n in firsts)))

    def paren(m: re.Match[str]) -> str:
        if not citing(m.string, m.start()):
            return m.group(0)
        ids = parse_ids(m.group(1))
        return " " + marker(ids) if ids else m.group(0)

    def superscript(m: re.Match[str]) -> str:
        return " " + marker(parse_ids(m.group(1).translate(_SUPERSCRIPTS)))

    out = _LENTICULAR_RE.sub(lenticular, text)
    out = _DAGGER_RE.sub(r"[\1]", out)
    out = _FOOTNOTE_DEF_RE.sub("", out)
    out = _FOOTNOTE_RE.sub(r"[\1]", out)
    out = _SUP_RE.sub(lambda m: marker(parse_ids(m.group(2))) or m.group(0), out)
    out = _SUPERSCRIPT_RE.sub(superscript, out)
    for pattern in (_DOUBLE_RE, _HASH_RE, _CARET_RE, _CURLY_RE, _WORDY_RE, _LINKED_RE):
        out = pattern.sub(lambda m: marker(parse_ids(m.group(1))) or m.group(0), out)
    out = _LETTER_RE.sub(lambda m: marker(parse_ids(re.sub(r"[SsPp]", "", m.group(1)))), out)
    out = _PAREN_RE.sub(paren, out)
    out = MARKER_RE.sub(explicit, out)  # ranges made explicit, reversed ones ordered
    return _RUN_RE.sub(_merge, out)


# ---------------------------------------------------------------------------- author and year
# `(Ongaro and Ousterhout, 2014)`, `(Lamport et al. 1998; Liskov 2012)`, `[Ongaro 2014]`, and
# the narrative `Ongaro et al. (2014) show`: a paper named by its authors and year, not by a
# number. Each is read into the numbers of the passages from that paper (at most `RANGE_CAP`,
# in the order they were given), so the sentence is judged by them; one that names no paper
# the answer was given becomes `[0]` (flagged), never a citation left unchecked.
_NAME = r"[A-Z][\w'’\-]+(?:\s+(?:van|von|de|der|da|di|du|le|la)\s+[A-Z][\w'’\-]+)?"
_AUTHORS = rf"(?P<first>{_NAME})(?P<more>\s+et\s+al\.?|\s+(?:and|&)\s+{_NAME})?"
_YEAR = r"(?P<year>(?:1[89]|20)\d{2})[a-z]?"
_ENTRY_RE = re.compile(
    rf"^\s*(?:(?:see|e\.g\.,?|cf\.|i\.e\.,?)\s+)?{_AUTHORS}(?P<comma>\s*,)?\s*{_YEAR}"
    r"(?:\s*,\s*pp?\.\s*\d+(?:\s*[-–]\s*\d+)?)?\s*$"
)
_GROUP_RE = re.compile(r"[ \t]*[(\[]([^()\[\]\n]{6,240})[)\]]")
_NARRATIVE_RE = re.compile(rf"\b{_AUTHORS}\s+\({_YEAR}\)")

Paper = tuple[Sequence[str], int | None]  # a passage's paper: its authors and year


def _passages_of(m: re.Match[str], papers: Sequence[Paper]) -> list[int] | None:
    """The passage numbers of the paper an author-year entry names; None when it names none
    and does not read as a citation (`(March 2019)`), [0] when it reads as one."""
    surname = m.group("first").split()[-1].casefold()
    year = int(m.group("year"))
    found = [
        n for n, (authors, y) in enumerate(papers, 1)
        if y == year and any(surname in re.split(r"[\s,]+", a.casefold()) for a in authors)
    ][:RANGE_CAP]  # fmt: skip
    if found:
        return found
    cited_look = m.group("more") or ("comma" in m.groupdict() and m.group("comma"))
    return [NO_PASSAGE] if cited_look else None


def read_author_year(text: str, papers: Sequence[Paper]) -> str:
    """`text` with author-year citations read into `[n, m]` markers (see above); `papers[i]`
    is passage i+1's paper."""

    def group(m: re.Match[str]) -> str:
        ids: list[int] = []
        for entry in re.split(r"\s*;\s*", m.group(1)):
            e = _ENTRY_RE.match(entry)
            found = _passages_of(e, papers) if e else None
            if found is None:
                return m.group(0)  # not (wholly) a citation: left as written
            ids.extend(found)
        return " " + marker(list(dict.fromkeys(ids)))

    def narrative(m: re.Match[str]) -> str:
        found = _passages_of(m, papers)
        if found is None:
            return m.group(0)
        return m.group(0)[: m.start("year") - m.start() - 1].rstrip() + " " + marker(found)

    return _NARRATIVE_RE.sub(narrative, _GROUP_RE.sub(group, text))


def _merge(m: re.Match[str]) -> str:
    ids: list[int] = []
    for inner in MARKER_RE.findall(m.group(0)):
        ids.extend(parse_ids(inner))
    return marker(list(dict.fromkeys(ids)))


__all__ = [
    "MARKER_RE",
    "NO_PASSAGE",
    "RANGE_CAP",
    "Paper",
    "citing",
    "marker",
    "parse_ids",
    "read_author_year",
    "read_forms",
]
