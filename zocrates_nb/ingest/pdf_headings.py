"""Heading and caption recognition from typography, position and numbering.

A line is a heading when it *looks* different from body text (larger, bolder, italic, set
in the family the other headings use) or carries a section number that fits the sequence,
starts a block and stands on its own (bold run-in leads followed by text are not headings).
Levels come from numbering depth; unnumbered headings borrow the level of numbered headings
set in the same style, else rank by size and weight.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from zocrates_nb.ingest.pdf_chars import Line
from zocrates_nb.ingest.pdf_style import BodyStyle, family
from zocrates_nb.ingest.text import join_lines
from zocrates_nb.ingest.toc import LABEL

KNOWN = re.compile(
    r"^(abstract|summary|introduction|acknowledge?ments?|references|bibliography|"
    r"appendix(?:\s+[A-Z])?|appendices|keywords|index terms|categories and subject descriptors|"
    r"general terms|conclusions?|related work|discussion|methods|results|"
    r"competing (?:financial )?interests|author contributions|supplementary material)\W*$",
    re.IGNORECASE,
)
_NUMBERED = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}\.?|[A-H](?:\.\d{1,2}){1,3}\.?|[A-H]\.|[A-H](?=\s)"
    r"|[IVX]{1,5}\.)\s+(?P<title>\S.*)$"
)
_CAPTION = re.compile(rf"^(?P<label>{LABEL})(?P<sep>\s*[.:|—–-]|\s*$|\s+(?=[A-Z(]))")
_THEOREM = (
    r"(?i)(definition|theorem|lemma|corollary|proposition|proof|example|remark|claim|"
    r"conjecture|algorithm|assumption|observation)\b\s*([\dIVX]+[.\d]*|\(|\.|:|$)"
)
_MONO = re.compile(r"courier|mono|cmtt|cmmi|cmsy|cmex|symbol|math|consola|inconsolata|menlo",
                   re.IGNORECASE)
_AUTHORISH = re.compile(
    r"@|university|universit[éä]|institut|department|dept\.|laborator|inc\.|corporation|"
    r"google|microsoft|research|school of|college|\bcenter\b|\bcentre\b",
    re.IGNORECASE,
)


def parse_number(text: str) -> tuple[str | None, str]:
    # "3 .1 Notation" (Type-3 fonts space out the dot) reads as "3.1 Notation".
    text = re.sub(r"^(\d{1,2}|[A-H])\s+\.(?=\d)", r"\1.", text)
    if re.match(r"^0\d", text):
        return None, text  # "01 Nov 2001" is a date
    m = _NUMBERED.match(text)
    if not m:
        return None, text
    num = m.group("num").rstrip(".")
    title = m.group("title").strip()
    if not re.match(r"[A-Za-z0-9(“\"']", title):
        return None, text
    return num, title


def number_parts(num: str) -> tuple[int, ...]:
    """"3.2" → (3, 2); "A.1" → (101, 1); "IV" → (4,)."""
    roman = {"I": 1, "V": 5, "X": 10}
    parts = num.split(".")
    out = []
    for p in parts:
        if p.isdigit():
            out.append(int(p))
        elif len(p) == 1 and p in "ABCDEFGH" and p == parts[0]:
            out.append(100 + ord(p) - ord("A") + 1)
        else:
            total = 0
            for i, ch in enumerate(p):
                v = roman.get(ch, 0)
                total += -v if i + 1 < len(p) and roman.get(p[i + 1], 0) > v else v
            out.append(total)
    return tuple(out)


@dataclass
class Candidate:
    index: int  # position of the first line in the document line list
    count: int  # lines merged
    text: str
    number: str | None
    title: str
    size: float
    heavy: bool
    italic: bool
    caps: bool
    fam: str
    page: int
    styled: bool
    level: int = 0
    sig: tuple[float, bool, bool, bool] = field(default=(0.0, False, False, False))


@dataclass
class Caption:
    index: int
    count: int
    label: str
    text: str
    page: int


@dataclass
class DocLine:
    line: Line
    page: int
    starts_block: bool
    column_start: bool
    in_figure: bool = False  # inside an image, a diagram box or among many vector strokes


def letter_spans_all(ln: Line, pred: object) -> bool:
    spans = [s for s in ln.spans if any(c.isalpha() for c in s.text)]
    return bool(spans) and all(pred(s) for s in spans)  # type: ignore[operator]


def find_headings(
    lines: list[DocLine], body: BodyStyle, skip: set[int], page1_end: int, title: str = ""
) -> list[Candidate]:
    """Heading candidates, filtered by style, numbering sequence and position.

    `title` is the paper title: printed again over the text (after a cover or reprint page)
    it is not a section.
    """
    cands: list[Candidate] = []
    i = 0
    n = len(lines)
    big_fams: Counter[str] = Counter()
    for k, dl in enumerate(lines):
        ln = dl.line
        if k >= page1_end and ln.size >= body.size + 0.9 and len(ln.text) < 120:
            big_fams[family(ln.spans[0].font)] += 1
        elif dl.starts_block and KNOWN.match(ln.text) and _style(dl, body)[0]:
            big_fams[family(ln.spans[0].font)] += 1  # the family "Methods" is set in
    while i < n:
        # A sub-heading set right under its heading starts a block without extra space.
        under = bool(cands) and cands[-1].index + cands[-1].count == i
        c = _candidate(lines, i, body, skip, big_fams, under)
        if c is None:
            i += 1
            continue
        cands.append(c)
        i += c.count
    cands = _appendix_letters(cands)
    cands = [c for c in cands if not _frontmatter_noise(c, lines, page1_end)]
    cands = [c for c in cands if not _has_row_neighbour(c, lines)]
    cands = _filter_numbering(cands)
    cands = _drop_stray_numbers(cands)
    if _key(title):
        cands = [c for c in cands if c.number or _key(c.title) != _key(title)]
    _assign_levels(cands)
    return cands


def _key(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.lower())


def _style(dl: DocLine, body: BodyStyle) -> tuple[bool, bool, bool]:
    ln = dl.line
    heavy = not body.bold and letter_spans_all(ln, body.heavy)
    italic = not body.italic and letter_spans_all(ln, lambda s: s.italic)
    letters = [c for c in ln.text if c.isalpha()]
    caps = len(letters) >= 3 and all(c.isupper() for c in letters)
    return heavy, italic, caps


def _candidate(
    lines: list[DocLine],
    i: int,
    body: BodyStyle,
    skip: set[int],
    big_fams: Counter[str],
    under_heading: bool = False,
) -> Candidate | None:
    dl = lines[i]
    ln = dl.line
    if i in skip:
        return None
    if under_heading:
        prev = lines[i - 1].line
        # Only a line in a style of its own (not the heading's second line, nor body text).
        if abs(prev.size - ln.size) <= 0.3 or not letter_spans_all(ln, body.heavy):
            under_heading = False
    if not (dl.starts_block or under_heading) and not _heading_after_sentence(lines, i, body):
        return None
    text = ln.text
    if _CAPTION.match(text) or len(text) > 150:
        return None
    heavy, italic, caps = _style(dl, body)
    size = ln.size
    fam = family(next((s.font for s in ln.spans if s.text.strip()), ""))
    # Merge a heading wrapped over two or three lines.
    count = 1
    parts = [text]
    big_step = 2.5 if body.ocr else 0.9  # OCR layers only estimate type sizes
    looks_special = heavy or italic or size >= body.size + big_step
    while looks_special and count < 3 and i + count < len(lines) and not parts[-1].endswith("."):
        nxt = lines[i + count]
        if (i + count) in skip or nxt.page != dl.page or nxt.column_start:
            break
        nh, ni, _ = _style(nxt, body)
        if abs(nxt.line.size - size) > 0.3 or nh != heavy or ni != italic:
            break
        if nxt.line.bottom - lines[i + count - 1].line.bottom > 1.7 * max(size, 4.0):
            break
        if _CAPTION.match(nxt.line.text) or parse_number(nxt.line.text)[0]:
            break
        if len(nxt.line.text.split()) > 10:  # a heading's continuation is short
            break
        parts.append(nxt.line.text)
        count += 1
    if "  " in parse_number(ln.text.strip())[1].strip():
        return None  # wide gaps inside the text: a table row
    text = join_lines(parts)
    number, title = parse_number(text)
    if title.endswith("-"):
        return None  # a wrapped line of text, not a whole heading
    letters = sum(1 for c in title if c.isalpha())
    words = title.split()
    if letters < 2 or len(words) > 16 or len(title) > 130:
        return None
    if sum(1 for w in words if len(w) == 1) > 0.4 * len(words) and len(words) > 2:
        return None  # "S i s n and 1 Sjsm." (OCR of a formula)
    if re.search(r"[,;:]$", title) or re.search(r"[=<>{}\[\]|←→−×∑∈≤≥+]|\.\.\.", title):
        return None
    if not re.search(r"[A-Za-z]{3}", title) and not KNOWN.match(title):
        return None
    if not number and not re.match(r"[A-Z0-9\"“']", title):
        return None
    if re.match(r"^(?:\d+(?:\.\d+)*\s*){1,}$", title) or re.search(r"https?://|www\.", title):
        return None
    rel = size - body.size
    big = rel >= big_step
    fam_heading = (
        fam != body.family and not _MONO.search(fam) and big_fams.get(fam, 0) > 0
        and rel >= -0.3 and len(words) <= 12
    )
    styled = big or heavy or (italic and (bool(number) or len(words) <= 10)) or fam_heading
    if re.search(r"\s(?:the|of|and|or|in|on|to|for|with|a|an|as|by|at|from)$", title):
        return None  # cut mid-phrase: a wrapped list item, not a heading
    known_alone = bool(KNOWN.match(title)) and len(words) <= 4 and not number
    if rel < -1.2 and not ((number or known_alone) and (heavy or caps)):
        return None
    theorem = re.match(_THEOREM, title) and not (number and re.fullmatch(r"\w+", title))
    if theorem or re.match(r"(?i)(edited|communicated) by\b", title):
        return None
    # A wrapped body paragraph in the heading style is not a heading.
    after = i + count
    # An italic line heads a paragraph only when a new block follows it.
    only_italic = styled and italic and not (big or heavy or fam_heading or number)
    if only_italic and after < len(lines) and not _next_is_indented(lines, i, after):
        return None
    if (
        styled
        and after < len(lines)
        and lines[after].page == dl.page
        and not lines[after].starts_block
        and _style(lines[after], body)[:2] == (heavy, italic)
        and abs(lines[after].line.size - size) < 0.3
        and not big
    ):
        return None
    if not styled and known_alone:
        if after < len(lines) and not lines[after].starts_block and not _next_is_indented(
            lines, i, after
        ):
            return None
    elif not styled:
        # Plain-looking numbered headings (OCR scans, some journals): short, alone on their line,
        # followed by a new block.
        if not number or len(words) > 10 or (title.endswith(".") and len(words) > 1):
            return None
        if not re.match(r"[A-Z]", title) or len(words) > 7 or re.search(r"[.!?]$", title):
            return None
        if ln.width > 0.5 * body.line_width and not _next_is_indented(lines, i, after):
            return None
    if not number and not KNOWN.match(title):
        # Unnumbered headings must be set in a heading-like family (not figure/code fonts).
        if _MONO.search(fam) or dl.in_figure:
            return None
        if fam != body.family and big_fams.get(fam, 0) == 0 and not big:
            # A bold line in a foreign font heads body text (a sidebar heading), or is a
            # label inside a figure.
            follower = lines[after].line if after < len(lines) else None
            if (
                follower is None
                or abs(follower.size - body.size) > 0.5
                or len(follower.text) < 25
            ):
                return None
        if title.endswith(".") or not _followed_by_text(lines, after, body):
            return None
    return Candidate(
        index=i, count=count, text=text, number=number, title=title, size=size, heavy=heavy,
        italic=italic, caps=caps, fam=fam, page=dl.page, styled=styled,
    )


def _heading_after_sentence(lines: list[DocLine], i: int, body: BodyStyle) -> bool:
    """A bold numbered line right after a finished sentence, set without extra space."""
    if i == 0 or lines[i - 1].page != lines[i].page:
        return False
    ln = lines[i].line
    prev = lines[i - 1].line
    if _in_caption(lines, i):
        return False  # "24 hours. The intervals ..." wrapped inside a bold caption
    prev_heading = letter_spans_all(prev, body.heavy) or prev.size >= body.size + 0.9
    return (
        (bool(re.search(r"[.!?:]['\")]?$", prev.text)) or prev_heading)
        and parse_number(ln.text)[0] is not None
        and not body.bold
        and (letter_spans_all(ln, body.heavy) or letter_spans_all(ln, lambda s: s.italic))
        and len(ln.text.split()) <= 10
    )


def _in_caption(lines: list[DocLine], i: int) -> bool:
    """Whether line `i` continues a block that opens with a figure/table label."""
    k = i
    while k > 0 and i - k < 25 and not lines[k].starts_block and lines[k - 1].page == lines[i].page:
        k -= 1
        if abs(lines[k].line.size - lines[i].line.size) > 0.4:
            return False
    return k < i and bool(_CAPTION.match(lines[k].line.text))


def _followed_by_text(lines: list[DocLine], after: int, body: BodyStyle) -> bool:
    """A heading leads into prose (or a sub-heading); table and figure labels do not."""
    if after >= len(lines):
        return False
    nxt = lines[after].line
    if "  " in nxt.text or _CAPTION.match(nxt.text):
        return False  # cells of a table row (wide gaps), or a label right above its caption
    if len(nxt.text.split()) >= 5 and nxt.width >= 0.45 * body.line_width:
        return True
    heavy, italic, _ = _style(lines[after], body)
    return (heavy or italic or nxt.size >= body.size + 0.9) and len(nxt.text.split()) <= 12


def _next_is_indented(lines: list[DocLine], i: int, after: int) -> bool:
    """The line after a plain heading starts a paragraph (indented or a new block)."""
    a, b = lines[i].line, lines[after].line
    return b.x0 - a.x0 > 0.8 * max(a.size, 4.0) or lines[after].starts_block


def _frontmatter_noise(c: Candidate, lines: list[DocLine], page1_end: int) -> bool:
    """Title, author and affiliation lines at the top of the first page are not headings."""
    if KNOWN.match(c.title):
        return False
    if c.index < page1_end:
        return not (c.number and c.number[0].isdigit())
    if c.page != lines[0].page or c.number:
        return False
    t = c.title
    names = re.findall(r"\b[A-Z][a-z]+\b", t)
    return bool(
        _AUTHORISH.search(t)
        or (re.search(r",.*,|&| and [A-Z]", t) and len(names) >= 2)
        or (re.search(r"\d", t) and len(names) >= 2)
    )


def _has_row_neighbour(c: Candidate, lines: list[DocLine]) -> bool:
    """Table cells share their baseline with other cells in the same column; headings don't."""
    ln = lines[c.index].line
    em = max(ln.size, 4.0)
    lo = max(c.index - 12, 0)
    for k in range(lo, min(c.index + 12, len(lines))):
        if c.index <= k < c.index + c.count:
            continue
        other = lines[k].line
        if lines[k].page != c.page or other.col != ln.col:
            continue
        overlap = min(other.bottom, ln.bottom) - max(other.top, ln.top)
        same_row = abs(other.base - ln.base) < 0.4 * em or overlap > 0.25 * min(
            other.height, ln.height
        )
        if same_row:
            return True
    return False


def _appendix_letters(cands: list[Candidate]) -> list[Candidate]:
    """A lone capital ("A Simple Example") is an appendix number only in appendix context."""
    later = {c.number.split(".")[0] for c in cands if c.number and "." in c.number}
    appendix = _roman_mode(cands)
    out = []
    for c in cands:
        if not c.number and re.match(r"(?i)references|bibliography|appendix", c.title):
            appendix = True
        if c.number and re.fullmatch(r"[A-H]", c.number):
            if appendix or c.number in later or re.match(r"(?i)appendix", c.title):
                appendix = True
            else:
                c.number, c.title = None, c.text
                if not (c.heavy or c.size > 0) or len(c.title.split()) > 8 or not c.styled:
                    continue
                if re.search(r"[.,;:-]$", c.title):
                    continue
        out.append(c)
    return out


def _roman_mode(cands: list[Candidate]) -> bool:
    """IEEE style: sections "IV." and subsections "A." (letters are not appendices)."""
    return sum(1 for c in cands if c.number and re.fullmatch(r"[IVX]+", c.number)) >= 2


def _filter_numbering(cands: list[Candidate]) -> list[Candidate]:
    """Drop numbered candidates that break the section sequence (list items, equations)."""
    out: list[Candidate] = []
    last: tuple[int, ...] | None = None
    roman = _roman_mode(cands)
    for c in cands:
        if c.number is None:
            out.append(c)
            continue
        parts = number_parts(c.number)
        if roman and parts[0] > 100 and len(parts) == 1 and last is not None:
            parts = (last[0], parts[0] - 100)  # "B." under section "III." is 3.2
        is_letter = parts[0] > 100
        if last is None:
            ok = parts[0] <= 2 or is_letter or c.styled
        else:
            ok = _plausible_next(last, parts) or (c.styled and parts > last and len(parts) <= 4)
        if not c.styled and not ok:
            continue
        if not ok and last is not None and parts <= last:
            continue
        last = parts
        out.append(c)
    return out


def _drop_stray_numbers(cands: list[Candidate]) -> list[Candidate]:
    """One or two "numbered" lines in a paper headed without numbers are list items or cells."""
    numbered = [c for c in cands if c.number]
    plain = [c for c in cands if not c.number and not KNOWN.match(c.title)]
    if 0 < len(numbered) <= 2 and len(plain) >= 4:
        return [c for c in cands if not c.number]
    return cands


def _plausible_next(last: tuple[int, ...], parts: tuple[int, ...]) -> bool:
    for depth in range(len(last), 0, -1):
        prefix = last[: depth - 1]
        if parts[: depth - 1] == prefix and len(parts) == depth and 0 < parts[-1] - last[
            depth - 1
        ] <= 2:
            return True
    if len(parts) == len(last) + 1 and parts[:-1] == last and parts[-1] in (0, 1, 2):
        return True
    if parts[0] > 100 and len(parts) == 1:
        return True
    return len(parts) == 1 and last[0] < 100 and parts[0] == last[0] + 1


def _assign_levels(cands: list[Candidate]) -> None:
    for c in cands:
        c.sig = (round(c.size * 2) / 2, c.heavy, c.italic, c.caps)
    by_sig: dict[tuple[float, bool, bool, bool], Counter[int]] = defaultdict(Counter)
    numbered = [c for c in cands if c.number]
    roman = _roman_mode(cands)
    for c in numbered:
        assert c.number is not None
        c.level = min(len(c.number.split(".")), 3)
        if roman and re.fullmatch(r"[A-H]", c.number):
            c.level = 2
        by_sig[c.sig][c.level] += 1
    if numbered:
        top_size = max((c.size for c in numbered if c.level == 1), default=0.0)
        parent = 0
        for c in cands:
            if c.number:
                parent = c.level
                continue
            if parent == 0:
                c.level = 1  # front matter (Abstract, Keywords, ...) has no parent section
            elif c.sig in by_sig:
                levels = by_sig[c.sig]
                c.level = levels.most_common(1)[0][0]
                if KNOWN.match(c.title):
                    # Sections and subsections set alike: "References" after "7.2" is a
                    # section of its own, not a subsection.
                    c.level = min(levels)
            elif KNOWN.match(c.title) or c.size >= top_size - 0.2:
                c.level = 1
            else:
                c.level = min(max(parent, 1) + 1, 3)
        return
    sigs = sorted({c.sig for c in cands}, key=lambda s: (-s[0], not s[1], s[2], not s[3]))
    rank = {s: min(i + 1, 3) for i, s in enumerate(sigs)}
    for c in cands:
        c.level = rank[c.sig]


def find_captions(lines: list[DocLine], body: BodyStyle, headings: set[int]) -> list[Caption]:
    """Figure/table captions: a label that opens a block, styled the way the paper styles them."""
    raw: list[tuple[int, str, bool, bool, bool, bool]] = []
    for i, dl in enumerate(lines):
        if i in headings:
            continue
        m = _CAPTION.match(dl.line.text)
        if not m:
            continue
        ln = dl.line
        label = re.sub(r"\s+", " ", m.group("label")).strip()
        first = next((s for s in ln.spans if s.text.strip()), None)
        bold_label = first is not None and body.heavy(first) and not body.bold
        small = ln.size < body.size - 0.4
        bare = ln.text.strip().rstrip(".:") == m.group("label").strip()
        punct = bool(m.group("sep").strip()) or bare or bold_label or small
        raw.append((i, label, bold_label, small, punct, bare))
    strong = [r for r in raw if r[4] and lines[r[0]].starts_block]
    need_bold = bool(strong) and sum(1 for r in strong if r[2]) >= 0.6 * len(strong)
    need_small = bool(strong) and sum(1 for r in strong if r[3]) >= 0.6 * len(strong)
    out: list[Caption] = []
    seen: set[str] = set()
    for i, label, bold_label, small, punct, bare in raw:
        dl = lines[i]
        m = _CAPTION.match(dl.line.text)
        assert m is not None
        if need_bold:
            ok = bold_label or bare
        elif need_small:
            ok = small or bold_label or bare
        else:
            colon = m.group("sep").strip() == ":"  # "Figure 3:" opens a caption, not a sentence
            ok = punct and (dl.starts_block or bold_label or small or colon)
        if not ok:
            continue
        key = _label_key(label)
        if key in seen:
            continue
        seen.add(key)
        count = 1
        size = dl.line.size
        while i + count < len(lines) and count < 25:
            nxt = lines[i + count]
            if (i + count) in headings or nxt.page != dl.page or _CAPTION.match(nxt.line.text):
                break
            if abs(nxt.line.size - size) > 0.4 or nxt.starts_block:
                break
            if nxt.line.x1 < dl.line.x0 or nxt.line.x0 > dl.line.x1:
                break  # a caption set beside this one
            count += 1
        if bare and count == 1:
            count += _centred_title(lines, i, headings)
        out.append(Caption(i, count, label, "", dl.page))
    return out


def _centred_title(lines: list[DocLine], i: int, headings: set[int]) -> int:
    """Lines of a caption title centred under a bare label ("TABLE I" over "SUMMARY OF ...").

    Such a title is often set in another size (small capitals) or after a little space, so
    it opens a block of its own; it still belongs to the label when it is centred on the
    same axis and follows closely.
    """
    label = lines[i].line
    axis = (label.x0 + label.x1) / 2
    em = max(label.size, 4.0)
    taken = 0
    prev = label
    size = 0.0
    while taken < 6 and i + 1 + taken < len(lines):
        k = i + 1 + taken
        ln = lines[k].line
        if k in headings or lines[k].page != lines[i].page or _CAPTION.match(ln.text):
            break
        if not 0 < ln.base - prev.base <= 1.8 * max(prev.size, em):
            break
        if abs((ln.x0 + ln.x1) / 2 - axis) > 1.5 * em or ln.width < 0.8 * label.width:
            break
        if (size and abs(ln.size - size) > 0.4) or "  " in ln.text.strip():
            break
        size = ln.size
        prev = ln
        taken += 1
    return taken


def _label_key(label: str) -> str:
    s = label.lower().replace(".", " ")
    kind = "t" if s.startswith("tab") else "f"
    return kind + re.sub(r"^[a-z]+\s*", "", s).strip()
