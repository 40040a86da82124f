"""Plain-text helpers for every layer that reads paper text: one stopword list, one word
tokenizer, one stemmer, one sentence splitter (reranking, the offline engine, citation checks).

Passages come from PDFs converted to Markdown, so sentences cross line breaks, words are split
by hyphens at line ends, and papers carry their own bracketed reference markers (`[12]`) that
must never be mistaken for our citations. The stemmer is Porter's, as SQLite FTS5's `porter`
tokenizer applies it, so a term here is the term the lexical index matched.

A base module: it imports nothing of zocrates_nb, so index, retrieval and agents may all use it.
"""

from __future__ import annotations

import functools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

_STOPWORDS_TEXT = """
a about above after again against all almost also although always am among an
and another any are aren't as at be because been before being below between both
but by can cannot could did do does doing done down during each either else
enough etc even ever every few for from further get gets given got had has have
having he her here hers herself him himself his how however i if in into is
isn't it its itself just least less let like made make makes many may me might
more most much must my myself near need needs neither no nor not now of off
often on once one only onto or other others otherwise our ours ourselves out
over own per perhaps rather really same say says see seem seems several shall
she should since so some such than that the their theirs them themselves then
there therefore these they this those though through thus to too toward towards
under until up upon us use used uses using very via was wasn't way we well were
what whatever when whenever where whereas whether which while who whom whose why
will with within without would yet you your yours yourself yourselves paper
papers work approach method methods show shows shown according describe
described explain explains tell tells does did question questions answer library
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9'’\-]*[A-Za-z0-9]|[A-Za-z]|\d+(?:\.\d+)?")
# A citation's numbers start at 1: "[0, 30]" is an interval ("a scale ranging from [0, 30]").
_REF_MARKER_RE = re.compile(r"\s?\[(?:[1-9]\d{0,2}(?:\s*[,–-]\s*\d{1,3})*)\]")
_ABBREV = (
    "e.g.",
    "i.e.",
    "et al.",
    "Fig.",
    "Figs.",
    "fig.",
    "Eq.",
    "Eqs.",
    "eq.",
    "Sec.",
    "sec.",
    "vs.",
    "cf.",
    "Tab.",
    "resp.",
    "approx.",
    "No.",
    "no.",
    "Dr.",
    "Mr.",
    "Ms.",
    "Prof.",
    "St.",
    "Inc.",
    "Ltd.",
    "Jr.",
    "Sr.",
    "al.",
    "etc.",
    "ca.",
    "Ref.",
    "Refs.",
    "ref.",
    "refs.",
    "Eqn.",
    "eqn.",
    "viz.",
    "Ch.",
    "Vol.",
    "pp.",
)
_ABBREV_RE = re.compile(
    r"(?<![A-Za-z])(?:"
    + "|".join(re.escape(a) for a in sorted(_ABBREV, key=len, reverse=True))
    + ")"
)
_PLACEHOLDER = "\u2063"  # invisible separator: stands in for abbreviation dots while splitting
_NUMBERED_RE = re.compile(r"\d{1,2}[.)]\s")  # a numbered list item's line
# A list's number after a colon or alone ("The master proceeds: 1.", "2."): the item follows.
_LIST_MARK_RE = re.compile(r"(?:^|[:;]\s*)\(?\d{1,2}[.)]$")
_SPLIT_RE = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“(\[]?[A-Z0-9])")

# Snowball's stemmers keep their working string on the object: one per process, behind a lock,
# with the answers cached (a library's vocabulary is small next to how often words recur).
_PORTER_LOCK = threading.Lock()


@functools.cache
def _porter_stemmer() -> Any:
    """Loaded on first use: importing snowballstemmer loads every language's stemmer, which
    the command line's start (`--help`, the terminal-safe streams) has no use for."""
    import snowballstemmer

    return snowballstemmer.stemmer("porter")


@functools.lru_cache(maxsize=1 << 16)
def _porter(word: str) -> str:
    with _PORTER_LOCK:
        return str(_porter_stemmer().stemWord(word))


# Control characters (C0 but tab/newline, DEL, C1) and NUL become spaces; lone surrogates (from
# JSON "\\ud800" escapes or undecodable argv bytes) cannot be encoded and become U+FFFD.
CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SURROGATE_RE = re.compile(r"[\ud800-\udfff]")


class TextTooLong(ValueError):
    """User text over a cap; the message says how long it was and what the cap is."""


def safe_text(text: object, *, max_chars: int | None = None, what: str = "the text") -> str:
    """Any user text made safe for every layer below (tokenizers, SQLite, JSON, the terminal).

    Lone surrogates become U+FFFD, NUL and control characters a space, the text NFC-normalised
    and trimmed; over `max_chars` it raises `TextTooLong` with a plain message (refusing beats
    silently answering a different question).
    """
    s = text if isinstance(text, str) else str(text)
    s = _SURROGATE_RE.sub("\ufffd", s)
    s = CONTROL_RE.sub(" ", unicodedata.normalize("NFC", s)).strip()
    if max_chars is not None and len(s) > max_chars:
        raise TextTooLong(
            f"{what} is too long ({len(s):,} characters; at most {max_chars:,}): shorten it"
        )
    return s


def stem(word: str) -> str:
    """Porter's stem of a lower-cased word, possessive dropped: 'elections' and 'election' →
    'elect', as FTS5's `porter` tokenizer stems it."""
    w = word.lower().replace("’", "'")
    if w.endswith("'s"):
        w = w[:-2]
    return _porter(w)


def words(text: str) -> list[str]:
    """The words of a text: letter runs (keeping inner hyphens and apostrophes) and numbers."""
    return _WORD_RE.findall(text)


def terms(text: str) -> list[str]:
    """Content terms (stemmed, lower case, stopwords and 1-letter tokens dropped)."""
    out = []
    for w in words(text):
        lw = w.lower().strip("'’-")
        if len(lw) < 2 or lw in STOPWORDS:
            continue
        out.append(stem(lw))
    return out


_DEFINED_RE = re.compile(
    r"((?:[A-Za-z][\w’'-]*\s+){0,6}[A-Za-z][\w’'-]*)\s+\(([A-Z][A-Za-z0-9]{1,8})\)"
)


def defined_acronyms(text: str) -> dict[str, str]:
    """The acronyms a text defines, with their long forms: "the Deep Q-Network (DQN)" gives
    DQN → Deep Q-Network (the initials of the words before it spell it; "of", "the" may sit
    between them)."""
    out: dict[str, str] = {}
    for m in _DEFINED_RE.finditer(text):
        short, letters = m.group(2), [c for c in m.group(2) if c.isupper() or c.isdigit()]
        if len(letters) < 2:
            continue
        pieces = re.split(r"[\s-]+", m.group(1))
        taken, want = 0, len(letters)
        for i in range(len(pieces) - 1, -1, -1):
            if pieces[i].lower() in STOPWORDS and taken:
                continue
            if pieces[i][:1].upper() != letters[want - 1 - taken]:
                break
            taken += 1
            if taken == want:
                out.setdefault(short, " ".join(pieces[i:]))
                break
    return out


def with_acronyms(question: str, defined: dict[str, str]) -> str:
    """The question with the other form of each acronym it uses or spells out ("deep
    Q-network" → "… DQN"): a paper that writes one form answers the other."""
    flat = " ".join(re.split(r"[\s-]+", question.lower()))
    extra = [long if re.search(rf"\b{re.escape(short)}\b", question) else short
             for short, long in defined.items()
             if re.search(rf"\b{re.escape(short)}\b", question) or long.lower() in flat]
    return " ".join([question, *extra])


_MARKUP = re.compile(r"([\\`*_\[\]<>#|~]|&(?=#?\w+;))")  # an & only where it opens an entity
_TAGS = re.compile(r"([\\`<>]|&(?=#?\w+;))")


def markdown_text(text: str) -> str:
    """Library text (a title, a name, a heading) as Markdown that shows it as written: every
    character Markdown or HTML would read as markup is escaped, so `<img src=x onerror=…>`
    stays those characters wherever the Markdown is rendered (the panel, a cell, a note)."""
    return _MARKUP.sub(r"\\\1", " ".join(str(text).split()))


def markdown_quote(text: str) -> str:
    """Quoted paper text as Markdown: its emphasis and brackets kept (they are the paper's),
    but no tag, entity, code span or link opened (a note's `[x](javascript:…)` stays text)."""
    return _TAGS.sub(r"\\\1", text).replace("](", "]\\(")


def shorten(text: str, n: int = 80) -> str:
    """One line of at most `n` characters, cut with an ellipsis."""
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1].rstrip() + "…"


# A paragraph that is not running prose: a figure or table caption (as the converter writes it,
# "**Figure 2:** …", or plain "Table 3: …"), an image, a table row, an HTML block.
_CAPTION_RE = re.compile(
    r"^(?:\*\*\s*)?(?:figure|fig\.|table|tab\.)\s*[A-Z]?\d+[a-z]?\s*[:.|]", re.I
)
_INTERLEAVED = ("![", "|", "<")
# A paragraph ends its sentence: terminal punctuation, possibly inside quotes or brackets.
_CLOSED_RE = re.compile(r"[.!?:][\"'”’)\]]*$")
_FUNCTION_WORDS_TEXT = """a an the this that these those of to in on for with by and or but as at
from its their our which whose is are was were be been has have than into via every each"""
_FUNCTION_WORDS = frozenset(_FUNCTION_WORDS_TEXT.split())


def is_caption(paragraph: str) -> bool:
    """A figure or table caption, an image, a table or an HTML block: text set beside the
    prose, which a page of the PDF may drop into the middle of a sentence."""
    p = paragraph.lstrip()
    return p.startswith(_INTERLEAVED) or bool(_CAPTION_RE.match(p))


def _open_prose(paragraph: str) -> bool:
    """A prose paragraph cut mid-sentence (at a page or column break, or by a caption)."""
    p = paragraph.rstrip()
    if not p or p.startswith(("#", "- ", "* ")) or is_caption(p):
        return False
    return not _CLOSED_RE.search(p)


BROKEN_WORD_RE = re.compile(r"[A-Za-z]-$")  # a line or paragraph ending in half a word
_MAX_HELD = 4  # a page's running head, address and figure labels; not the rest of a page


_HEAD_RE = re.compile(r"[A-Z0-9][A-Z0-9 .,:;&'’()/–-]{12,120}")


def is_running_head(paragraph: str) -> bool:
    """A page's running head or footer in capitals ("NATURE BIOTECHNOLOGY VOLUME 22 NUMBER
    10 OCTOBER 2004"): one line of three words or more, no lower-case letter."""
    p = paragraph.strip()
    return "\n" not in p and len(p.split()) >= 3 and bool(_HEAD_RE.fullmatch(p))


def _continues(prev: str, nxt: str) -> bool:
    """Whether `nxt` carries on the sentence `prev` breaks off: it starts in lower case, or
    `prev` stops on a word no sentence ends with ("… the", "… of every")."""
    n = nxt.lstrip()
    if not n or n.startswith(("#", "- ", "* ")) or is_caption(n):
        return False
    if n[0].islower():
        return True
    if BROKEN_WORD_RE.search(prev):
        return False  # "draw-" + "Sean R. Eddy is at …": not the word's other half
    last = re.sub(r"[^\w]", "", prev.split()[-1]).lower() if prev.split() else ""
    return last in _FUNCTION_WORDS


def _join(prev: str, nxt: str) -> str:
    prev, nxt = prev.rstrip(), nxt.lstrip()
    if re.search(r"[A-Za-z]-$", prev) and nxt[:1].islower():
        return prev[:-1] + nxt  # "pro-" + "gressively": a word the page break hyphenated
    return f"{prev} {nxt}"


def clean_passage(text: str) -> str:
    """Undo PDF line wrapping: join hyphenated breaks, unwrap lines inside paragraphs, and join
    a sentence that a page break or an interleaved caption cut in two (the caption is kept,
    after the joined paragraph)."""
    t = text.replace("\r", "")
    t = re.sub(r"(\w)-\n[ \t]*(\w)", r"\1\2", t)  # within a paragraph only
    t = re.sub(r"[ \t]+", " ", t)
    # A footnote's number after a full stop ("… following.4 We set …") is not a decimal.
    t = re.sub(r"(?<=[a-z]{3})\.\d{1,2}(?= [A-Z][a-z])", ".", t)
    paras = re.split(r"\n\s*\n", t)
    out: list[str] = []
    prose = -1  # index in `out` of the last prose paragraph, while it is still open
    held = 0  # paragraphs set aside since it; past _MAX_HELD it is closed
    for p in paras:
        lines = [ln.strip() for ln in p.split("\n") if ln.strip()]
        if not lines:
            continue
        # Keep list items, table rows and headings on their own lines.
        if any(ln.startswith(("|", "#", "- ", "* ")) or _NUMBERED_RE.match(ln) for ln in lines):
            para = "\n".join(lines)
        else:
            para = " ".join(lines)
        if prose >= 0 and held < _MAX_HELD and is_running_head(para):
            held += 1  # "NATURE BIOTECHNOLOGY VOLUME 22 …" between a sentence's halves
            continue
        if prose >= 0 and _continues(out[prose], para):
            out[prose] = _join(out[prose], para)
        elif (
            prose >= 0
            and held < _MAX_HELD
            and (is_caption(para) or BROKEN_WORD_RE.search(out[prose]))
        ):
            # Set aside: the sentence it interrupts may go on after it. A word broken at the
            # end ("just by draw-") goes on only in lower case ("ing an intuitive picture"),
            # never in the author's address or a figure's labels between them.
            out.append(para)
            held += 1
            continue
        else:
            out.append(para)
            prose, held = len(out) - 1, 0
        if not _open_prose(out[prose]):
            prose = -1
    return "\n\n".join(out)


def strip_reference_markers(text: str) -> str:
    """Remove the paper's own numeric reference markers: '[12]', '[3, 7]', '[4–6]'."""
    return _REF_MARKER_RE.sub("", text)


def split_sentences(text: str) -> list[str]:
    """Sentences of a passage (PDF-aware, abbreviation-aware), without Markdown headings, table
    rows or images."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n|\n(?=[#|*-] |\d{1,2}[.)] )", clean_passage(text)):
        para = para.strip()
        if not para or para.startswith(("|", "#", "![", "<")):
            continue
        if "\n" in para:
            para = " ".join(ln.lstrip("-* ").strip() for ln in para.split("\n"))
        protected = _ABBREV_RE.sub(lambda m: m.group(0).replace(".", _PLACEHOLDER), para)
        # Initials like 'J. Smith' and decimal numbers are not sentence ends.
        protected = re.sub(r"\b([A-Z])\.(?=\s+[A-Z])", "\\1" + _PLACEHOLDER, protected)
        pieces: list[str] = []
        for s in _SPLIT_RE.split(protected):
            s = s.replace(_PLACEHOLDER, ".").strip().lstrip("-*•· ").strip()
            if not s:
                continue
            if pieces and _LIST_MARK_RE.search(pieces[-1]):
                pieces[-1] = f"{pieces[-1]} {s}"  # "… proceeds: 1." opens a list, not a sentence
            else:
                pieces.append(s)
        out += pieces
    return out


def entities(question: str) -> list[str]:
    """Named things a question asks about: capitalised words not at a sentence start, acronyms,
    CamelCase (`Kademlia`, `XOR`, `ZooKeeper`, `MoCo`)."""
    found: list[str] = []
    for sent in re.split(r"(?<=[.!?])\s+", question.strip()):
        toks = re.findall(r"[A-Za-z][A-Za-z0-9\-’']*", sent)
        for i, tok in enumerate(toks):
            base = re.sub(r"['’]s$", "", tok).strip("'’-")
            base = re.sub(
                r"-(based|like|style|driven|aware|specific|level|scale|type|style)$", "", base
            )
            if len(base) < 2 or base.lower() in STOPWORDS:
                continue
            acronym = sum(c.isupper() for c in base) >= 2
            if acronym or (i > 0 and base[0].isupper()):
                found.append(base)
    return list(dict.fromkeys(found))


def mentions(text: str, entity: str) -> bool:
    """Whether `text` mentions `entity` (case-insensitive, plural/possessive tolerant both
    ways: "Wide-ResNets" asked is "Wide-ResNet" written; an acronym's capital S is no plural)."""
    forms = [entity]
    if re.search(r"[a-z]s$", entity) and not entity.endswith("ss") and len(entity) > 3:
        forms.append(entity[:-1])
    low = text.lower()
    for form in forms:
        pattern = r"(?<![a-z0-9])" + re.escape(form.lower()) + r"(?:s|es|'s|’s)?(?![a-z0-9])"
        if re.search(pattern, low):
            return True
    return False


class TermStats:
    """Inverse document frequencies over a small set of texts (the evidence of one answer)."""

    def __init__(self, docs: Iterable[Sequence[str]]) -> None:
        self.df: Counter[str] = Counter()
        self.n = 0
        for d in docs:
            self.n += 1
            self.df.update(set(d))

    def idf(self, term: str) -> float:
        return math.log(1 + (self.n + 1) / (self.df.get(term, 0) + 0.5))

    def overlap(self, query: Sequence[str], doc: Sequence[str]) -> float:
        """Share of the query's idf mass that the document contains (0..1)."""
        q = set(query)
        if not q:
            return 0.0
        d = set(doc)
        total = sum(self.idf(t) for t in q)
        return sum(self.idf(t) for t in q if t in d) / total if total else 0.0
