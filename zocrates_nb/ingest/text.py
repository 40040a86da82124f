"""Markdown and plain-text converters (also used for Zotero's `.zotero-ft-cache` fallback).

Markdown is kept as written (headings by `#` count); plain text is hard-wrapped, so its lines
are joined back into paragraphs and obviously numbered headings ("2.1 Data model") are promoted.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from pathlib import Path
from statistics import median

from zocrates_nb.ingest.bundle import Bundle, ConversionError
from zocrates_nb.ingest.toc import TocInfo, make_bundle, normalize_text, split_number
from zocrates_nb.library.encoding import DecodedText, decode_text
from zocrates_nb.text import BROKEN_WORD_RE

# Text, Markdown and HTML files are read whole: beyond this they are data dumps, not documents.
MAX_TEXT_BYTES = 64 * 1024 * 1024

_SETEXT = re.compile(r"^(=+|-+)\s*$")
_NUMBERED_HEADING = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,2})\.?\s+([A-Z][^\n]{1,80})$")
_NAMED_HEADING = re.compile(
    r"^(abstract|introduction|background|related work|conclusions?|discussion|results|methods"
    r"|acknowledge?ments?|references|bibliography|appendix(?: [A-Z])?)$",
    re.IGNORECASE,
)


def read_bytes(path: Path) -> bytes:
    """A text-like file's bytes, refusing empty files and data dumps with a plain reason."""
    size = path.stat().st_size
    if size > MAX_TEXT_BYTES:
        raise ConversionError(
            f"text file too large to index ({size / 2**20:,.0f} MB; the limit is "
            f"{MAX_TEXT_BYTES // 2**20} MB)"
        )
    data = path.read_bytes()
    if not data:
        raise ConversionError("empty file (0 bytes)")
    if not data.strip():
        raise ConversionError(f"empty file (only white space, {len(data)} bytes)")
    return data


def read_text(path: Path) -> DecodedText:
    """Decoded by its byte-order mark, else as UTF-8 (see `library.encoding`)."""
    decoded = decode_text(read_bytes(path))
    if not decoded.text.strip():
        raise ConversionError("no text in the file (only control characters)")
    return decoded


_HEAD_RE = re.compile(r"([^\W\d_]+)-$")
_TAIL_RE = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)*")
_FORM_RE = re.compile(r"\w+(?:-\w+)*")


def word_forms(texts: Iterable[str]) -> frozenset[str]:
    """How a document writes its words inside its lines, lower case, compounds whole
    ("proof-of-work", "appendentries"): what a word broken at a line end is, by the document's
    own usage."""
    return frozenset(w.lower() for t in texts for w in _FORM_RE.findall(t))


def join_lines(lines: list[str], forms: Collection[str] = frozenset()) -> str:
    """One paragraph from wrapped lines, re-joining words hyphenated across line ends.

    A broken word is joined as the document writes it elsewhere (`forms`): "proof-" +
    "of-work" keeps its hyphen, "Append-" + "Entries" is "AppendEntries". Otherwise "distri-"
    + "buted" is one word and "globally-" + "distributed" or "non-" + "Gaussian" keeps its
    hyphen. Linear in the paragraph's length: only the end of the previous line is looked at (a
    table run together into one paragraph has thousands of lines).
    """
    parts: list[str] = []
    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        prev = parts[-1] if parts else ""
        if prev and BROKEN_WORD_RE.search(prev[-2:]) and line[0].isalpha():
            head, tail = _HEAD_RE.search(prev), _TAIL_RE.match(line)
            pair = (head.group(1).lower(), tail.group(0).lower()) if head and tail else ("", "")
            if pair[0] and f"{pair[0]}-{pair[1]}" in forms:
                keep = True
            elif pair[0] and f"{pair[0]}{pair[1]}" in forms:
                keep = False
            else:
                keep = not line[0].islower() or prev.endswith("ly-")
            if not keep:
                parts[-1] = prev[:-1]
            parts.append(line)
        elif prev:
            parts.append(" ")
            parts.append(line)
        else:
            parts.append(line)
    return re.sub(r"[ \t]+", " ", "".join(parts))


# ----------------------------------------------------------------------------- markdown


def markdown_to_bundle(text: str, converter: str = "markdown") -> Bundle:
    text = normalize_text(text).replace("\r\n", "\n").replace("\r", "\n")
    title = ""
    m = re.match(r"^---\n(.*?)\n---\n", text, re.DOTALL)
    if m:  # YAML front matter: keep its title, drop the block
        t = re.search(r"^title:\s*[\"']?(.*?)[\"']?\s*$", m.group(1), re.MULTILINE)
        title = t.group(1) if t else ""
        text = text[m.end() :]
    lines = text.split("\n")
    out: list[str] = []
    in_fence = False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if (
            not in_fence
            and _SETEXT.match(line)
            and out
            and out[-1].strip()
            and not out[-1].startswith(("#", "|", "-", "*"))
            and (len(out) < 2 or not out[-2].strip())
        ):
            out[-1] = ("# " if line.startswith("=") else "## ") + out[-1].strip()
            continue
        out.append(line)
    info = TocInfo(converter=converter, title=title, plain_captions=True)
    return make_bundle("\n".join(out), info)


# ----------------------------------------------------------------------------- plain text


def _is_heading(line: str, prev: list[str]) -> tuple[int, str] | None:
    """(level, text) when a standalone line looks like a numbered or well-known heading."""
    s = line.strip()
    if not s or len(s) > 90 or (s.endswith((".", ",", ";")) and not re.match(r"^\d", s)):
        return None
    if _NAMED_HEADING.match(s):
        return 1, s
    m = _NUMBERED_HEADING.match(s)
    if not m or len(m.group(2).split()) > 12 or re.search(r"[.;,]$", m.group(2)):
        return None
    num = m.group(1)
    parts = [int(p) for p in num.split(".")]
    if not _follows(prev, parts):
        return None
    return len(parts), f"{num} {m.group(2)}"


def _follows(prev: list[str], parts: list[int]) -> bool:
    """Is `parts` the next number after the previous numbered heading (1 → 1.1 → 1.2 → 2)?"""
    if not prev:
        return parts in ([1], [1, 1]) or parts == [0]
    last = [int(p) for p in prev[-1].split(".")]
    for depth in range(len(last), 0, -1):
        if parts == [*last[: depth - 1], last[depth - 1] + 1]:
            return True
    return parts == [*last, 1]


def text_to_markdown(text: str) -> str:
    """Plain text → Markdown paragraphs with obvious headings as `#` lines."""
    text = normalize_text(text).replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n\n")
    raw = [line.rstrip() for line in text.strip().split("\n")]
    blank_share = sum(1 for line in raw if not line.strip()) / max(len(raw), 1)
    long_lens = [len(line) for line in raw if len(line) > 20]
    wrap = median(long_lens) if long_lens else 80
    blocks: list[str] = []
    para: list[str] = []
    numbers: list[str] = []

    def flush() -> None:
        if para:
            blocks.append(join_lines(para))
            para.clear()

    for line in raw:
        if not line.strip():
            flush()
            continue
        starts_block = (
            not para
            or re.search(r"[.!?:]\W?$", para[-1]) is not None
            or (blank_share < 0.05 and len(para[-1]) < 0.7 * wrap)
        )
        head = _is_heading(line, numbers) if starts_block else None
        if head:
            flush()
            level, htext = head
            num, _ = split_number(htext)
            if num and num[0].isdigit():
                numbers.append(num)
            blocks.append("#" * level + " " + htext)
            continue
        para.append(line)
        # Text without blank lines (e.g. extracted from a PDF): a short line that ends a
        # sentence closes the paragraph.
        if blank_share < 0.05 and len(line) < 0.7 * wrap and re.search(r"[.!?:]\W?$", line):
            flush()
    flush()
    return "\n\n".join(blocks)


def text_to_bundle(text: str, converter: str = "plain-text") -> Bundle:
    md = text_to_markdown(text)
    if not md.strip():
        raise ConversionError("no text")
    first = next((line for line in text.splitlines() if line.strip()), "")
    info = TocInfo(converter=converter, title=normalize_text(first).strip()[:300])
    return make_bundle(md, info)


def convert_markdown_file(path: Path) -> Bundle:
    decoded = read_text(path)
    bundle = markdown_to_bundle(decoded.text)
    bundle.toc.warnings.extend(decoded.warnings)
    return bundle


def convert_text_file(path: Path) -> Bundle:
    decoded = read_text(path)
    bundle = text_to_bundle(decoded.text)
    bundle.toc.warnings.extend(decoded.warnings)
    return bundle
