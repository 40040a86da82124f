"""The parts of a question: what a comparison or a compound question asks about each thing.

"How do the masters of MapReduce, Bigtable and GFS find out that a worker died?" is three
questions, one per system; "Which hash does Dynamo use, and which does Apache Cassandra's
partitioner use?" is two, and the library may answer only one. Searching once for the whole
sentence reads one paper and leaves the others unread; answering "no evidence" because one
name is missing hides what the library does hold. So the pipeline splits such questions into
parts, searches and reads for each, and the answer covers each part or names it as a gap.

Decomposition is generic: named things (capitalised names, acronyms, CamelCase) and the names
of library items (a title's head before its colon, its leading phrase, its acronym, a
CamelCase word in it, an author's surname) are found in the question; two or more of them
joined only by connectives ("X and Y", "X, Y and Z", "in X and in Y", "X with Y") make a
comparison, one part per thing; clauses that each bring a new named thing ("…, and which hash
does Cassandra use?", "Compare what X says … with what Y reports …") are parts of their own.
A question that is neither stays whole (no parts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from zocrates_nb.text import STOPWORDS, entities, stem

# Words that start an instruction or a question: never a name, whatever their case.
IMPERATIVES = frozenset(
    [
        "compare",
        "contrast",
        "explain",
        "describe",
        "summarize",
        "summarise",
        "list",
        "give",
        "name",
        "show",
        "tell",
        "discuss",
        "outline",
        "define",
        "identify",
        "evaluate",
        "analyze",
        "analyse",
        "state",
        "find",
        "consider",
        "note",
        "assume",
        "suppose",
        "please",
        "what",
        "how",
        "why",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "does",
        "do",
        "did",
        "is",
        "are",
        "was",
        "were",
        "can",
        "could",
        "would",
        "should",
        "according",
        "regarding",
    ]
)
# Between two coordinated names only these may stand ("Dynamo and chain replication",
# "MapReduce, Bigtable and GFS", "in Bigtable and in Spanner", "Raft with Zab").
_CONNECTIVES = frozenset(
    [
        "and",
        "or",
        "with",
        "in",
        "of",
        "the",
        "a",
        "an",
        "both",
        "between",
        "versus",
        "vs",
        "to",
        "from",
        "as",
        "well",
        "also",
        "paper",
        "papers",
    ]
)
_TITLE_SPLIT_RE = re.compile(r"\s*(?::|—|–|\s-\s)\s*")
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")
_LEADING_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "for",
        "in",
        "on",
        "at",
        "to",
        "with",
        "by",
        "from",
        "using",
        "via",
        "and",
        "or",
        "as",
        "is",
        "are",
        "towards",
        "toward",
        "into",
        "over",
        "under",
        "about",
        "through",
    ]
)
_WH_START = frozenset(
    ["how", "what", "why", "which", "who", "when", "where", "is", "are", "can", "do", "does"]
)
# Clause boundaries inside a sentence: ", and which …", "; how …", " with what …".
_CLAUSE_RE = re.compile(
    r"(?:,\s*(?:and|but|while|whereas)\s+|;\s*(?:and\s+)?|\s+and\s+|\s+with\s+)"
    r"(?=(?:(?:to|in|on|for|by|at|from|of)\s+)?(?:what|which|how|why|when|where|who|whom|"
    r"whose|does|do|did|is|are)\b)",
    re.I,
)
_FOLLOW_UP_RE = re.compile(r"\s*\(Follow-up to the earlier question:.*$", re.S)


@dataclass(frozen=True)
class CatalogueItem:
    key: str
    title: str
    authors: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Name:
    tokens: tuple[str, ...]  # stemmed, lower case
    key: str
    strict_case: bool  # a single plain word: only its capitalised spelling names the item
    acronym: bool = False


@dataclass
class Mention:
    """A named thing in the question: where it is, how it is written, which items it names."""

    start: int  # token positions [start, end)
    end: int
    surface: str
    keys: tuple[str, ...] = ()  # library items it names (empty: a name the catalogue lacks)


@dataclass
class Part:
    """One part of a question: its own standalone question and what it is about."""

    text: str
    subject: str = ""  # the named thing this part asks about ("" when the clause has none)
    items: list[str] = field(default_factory=list)  # library items the subject names
    titles: list[str] = field(default_factory=list)


def _tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _stems(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(stem(w.lower()) for w in words)


class Catalogue:
    """The names by which a question may refer to the library's items."""

    def __init__(self, items: Iterable[CatalogueItem]) -> None:
        self.items = {it.key: it for it in items}
        self.names: list[_Name] = []
        surnames: dict[str, set[str]] = {}
        for it in self.items.values():
            for words in self._title_names(it.title):
                plain = len(words) == 1 and not _distinctive(words[0])
                self.names.append(_Name(_stems(words), it.key, strict_case=plain))
            acro = _acronym(it.title)
            if acro:
                self.names.append(_Name(_stems([acro]), it.key, True, acronym=True))
            for a in it.authors:
                last = a.replace(",", " ").split()
                if last:
                    # "Last, First" or "First Last"
                    name = a.split(",")[0].strip() if "," in a else last[-1]
                    if len(name) >= 3:
                        surnames.setdefault(name, set()).add(it.key)
        for name, keys in surnames.items():
            if len(keys) == 1:
                self.names.append(_Name(_stems([name]), next(iter(keys)), strict_case=True))

    @staticmethod
    def _title_names(title: str) -> list[list[str]]:
        """A title's head before a colon or dash, its leading phrase, the whole of a short
        title, and the CamelCase words in it."""
        out: list[list[str]] = []
        pieces = _TITLE_SPLIT_RE.split(title.strip(), maxsplit=1)
        if len(pieces) == 2:
            head = [w for w, _, _ in _tokens(pieces[0])]
            if 1 <= len(head) <= 6:
                out.append(head)
                joined = re.split(r"\s+and\s+", pieces[0])
                if len(joined) > 1:
                    out.extend([w for w, _, _ in _tokens(j)] for j in joined)
        words = [w for w, _, _ in _tokens(title)]
        while words and words[0].lower() in ("a", "an", "the"):
            words = words[1:]
        if words and 2 <= len(words) <= 4 and len(pieces) == 1:
            out.append(words)
        if words and words[0].lower() not in _WH_START and words[0].lower() not in _LEADING_STOP:
            lead: list[str] = []
            for w in words:
                if w.lower() in _LEADING_STOP:
                    break
                lead.append(w)
            if 2 <= len(lead) <= 5:
                out.append(lead)
        out.extend([w] for w in words if re.fullmatch(r"[A-Z][a-z]+[A-Z][A-Za-z]*", w))
        # In a sentence-case title, a capitalised word inside it is a name ("The Chubby lock
        # service…", "…using de Bruijn graphs", "What is a hidden Markov model?").
        tail = [w for w, _, _ in _tokens(pieces[-1])][1:]
        if tail and sum(w[:1].islower() for w in tail) >= 0.6 * len(tail):
            out.extend([w] for w in tail if w[:1].isupper() and not (w.isupper() and len(w) <= 3))
        unique: list[list[str]] = []
        for n in out:
            if n not in unique:
                unique.append(n)
        return unique

    def mentions(self, text: str, context: str = "") -> list[Mention]:
        """Library names and other named things in `text`, not overlapping (the longest
        wins); a name two items share goes to the one no other mention in `context` claims."""
        found = self._find(text)
        around = self._find(context) if context and context != text else found
        claimed = {k for m in around if len(m.keys) == 1 for k in m.keys}
        return _disambiguate(found, claimed)

    def _find(self, text: str) -> list[Mention]:
        toks = _tokens(text)
        low = _stems(w for w, _, _ in toks)
        found: list[Mention] = []
        taken: set[int] = set()
        spans: dict[tuple[int, int], set[str]] = {}
        for name in self.names:
            n = len(name.tokens)
            for i in range(len(toks) - n + 1):
                if low[i : i + n] != name.tokens:
                    continue
                word = toks[i][0]
                if name.acronym and not word.isupper():
                    continue
                if name.strict_case and not word[:1].isupper():
                    continue
                if n == 1 and word.lower() in IMPERATIVES | STOPWORDS:
                    continue
                spans.setdefault((i, i + n), set()).add(name.key)
        for (i, j), keys in sorted(spans.items(), key=lambda kv: (kv[0][0] - kv[0][1], kv[0])):
            if any(p in taken for p in range(i, j)):
                continue
            taken.update(range(i, j))
            found.append(Mention(i, j, text[toks[i][1] : toks[j - 1][2]], tuple(sorted(keys))))
        # Named things the catalogue does not know (runs of capitalised words, acronyms), and
        # a capitalised first word coordinated with another name ("Raft and Paxos …").
        names = {e for e in entities(text) if e.lower() not in IMPERATIVES}
        for k, (w, _, end) in enumerate(toks[:-2]):
            if (k == 0 or text[toks[k - 1][2] : toks[k][1]].strip() in (".", "?", "!")) and (
                w[:1].isupper() and w.lower() not in IMPERATIVES | STOPWORDS
            ):
                after = text[end : toks[k + 1][1]]
                nxt = toks[k + 2][0] if toks[k + 1][0] == "and" else toks[k + 1][0]
                if (after.strip() == "," or toks[k + 1][0] == "and") and nxt[:1].isupper():
                    names.add(w)

        def named(word: str) -> bool:
            return word in names or re.sub(r"['’]s$", "", word) in names

        i = 0
        while i < len(toks):
            word = toks[i][0]
            if i in taken or not named(word):
                i += 1
                continue
            j = i + 1
            while j < len(toks) and j not in taken and named(toks[j][0]):
                if text[toks[j - 1][2] : toks[j][1]].strip(" -"):
                    break  # punctuation between them: two names
                j += 1
            found.append(Mention(i, j, text[toks[i][1] : toks[j - 1][2]]))
            taken.update(range(i, j))
            i = j
        found.sort(key=lambda m: m.start)
        return found


def _distinctive(word: str) -> bool:
    """CamelCase, an acronym, or a word with a digit: unlikely to be an ordinary word."""
    return bool(re.search(r"[a-z][A-Z]|[A-Z]{2}|\d", word))


def _acronym(title: str) -> str:
    words = [w for w, _, _ in _tokens(title) if w.lower() not in _LEADING_STOP]
    if not 3 <= len(words) <= 6:
        return ""
    return "".join(w[0] for w in words).upper()


def _disambiguate(mentions: list[Mention], claimed: set[str]) -> list[Mention]:
    """A name two items share ("de Bruijn graphs") names the one no other mention claims."""
    out = []
    for m in mentions:
        if len(m.keys) > 1:
            rest = tuple(k for k in m.keys if k not in claimed)
            if rest:
                m = Mention(m.start, m.end, m.surface, rest)
        out.append(m)
    return out


# ------------------------------------------------------------------------------ decomposition
def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip()) if s.strip()]


def _clauses(sentence: str) -> list[str]:
    out = [c.strip(" ,;") for c in _CLAUSE_RE.split(sentence)]
    return [c for c in out if c]


def _subject(m: Mention) -> tuple[str, ...]:
    """What a mention is about: its items, or (unknown to the catalogue) its own name."""
    return m.keys or ("name:" + m.surface.lower(),)


def _without_modifiers(text: str, ms: list[Mention]) -> list[Mention]:
    """ "Amazon's Dynamo", "Google's Spanner": a name followed by another is its modifier."""
    toks = _tokens(text)
    out = []
    for i, a in enumerate(ms):
        b = ms[i + 1] if i + 1 < len(ms) else None
        if b is not None:
            gap = text[toks[a.end - 1][2] : toks[b.start][1]]
            if re.fullmatch(r"['’]s\s+", gap) or (not a.keys and not gap.strip()):
                continue
        out.append(a)
    return out


def _group(text: str, ms: list[Mention]) -> list[Mention]:
    """The longest run of distinct things joined only by connectives (a comparison)."""
    toks = _tokens(text)
    best: list[Mention] = []
    run: list[Mention] = []
    for m in ms:
        if run:
            gap = [w.lower() for w, _, _ in toks[run[-1].end : m.start]]
            joined = all(w in _CONNECTIVES for w in gap)
            if joined and _subject(m) not in {_subject(r) for r in run}:
                run.append(m)
            elif not (joined and _subject(m) == _subject(run[-1])):
                run = [m]
        else:
            run = [m]
        if len(run) > len(best):
            best = list(run)
    return best if len(best) >= 2 else []


def _clean(text: str) -> str:
    text = re.sub(r"(^|,\s*)(compare|contrast)\s+", r"\1", text, flags=re.I)
    text = re.sub(r"\b(both|respectively)\b\s*", "", text, flags=re.I)
    text = re.sub(r"\b(does|did|do|has|have|is|was) each\b", r"\1 it", text, flags=re.I)
    text = re.sub(r"\beach\s+(?=[,.?;])", "", text, flags=re.I)
    text = re.sub(r"\s+([,.?;])", r"\1", " ".join(text.split()))
    return text[:1].upper() + text[1:]


def decompose(question: str, catalogue: Catalogue | None = None) -> list[Part]:
    """The parts of a comparison or compound question, or [] when it asks one thing."""
    q = _FOLLOW_UP_RE.sub("", " ".join(question.split())).strip()
    cat = catalogue or Catalogue([])
    sentences = _sentences(q)
    # 1. A comparison: two or more things joined by connectives → one part per thing.
    for si, sent in enumerate(sentences):
        ms = _without_modifiers(sent, cat.mentions(sent, q))
        group = _group(sent, ms)
        if not group:
            continue
        toks = _tokens(sent)
        lo, hi = toks[group[0].start][1], toks[group[-1].end - 1][2]
        found: list[Part] = []
        for m in group:
            own = sent[:lo] + m.surface + sent[hi:]
            rest = [s for k, s in enumerate(sentences) if k != si]
            core = _clean(own)
            if len(_tokens(core)) <= len(_tokens(m.surface)) + 1 and rest:
                text = f"{m.surface}: " + " ".join(rest)  # "Compare Raft with Zab."
            else:
                text = " ".join([*(sentences[k] for k in range(si)), core, *sentences[si + 1 :]])
            found.append(_part(_clean(text), m, cat))
        return found
    # 2. Clauses that each bring their own named thing.
    clauses: list[tuple[str, list[Mention]]] = []
    for sent in sentences:
        for c in _clauses(sent):
            clauses.append((c, _without_modifiers(c, cat.mentions(c, q))))
    if len(clauses) < 2:
        return []
    seen: set[tuple[str, ...]] = set()
    parts: list[Part] = []
    pending: list[str] = []  # clauses without a new thing join the part before them
    for c, ms in clauses:
        new = [m for m in ms if _subject(m) not in seen]
        seen.update(_subject(m) for m in ms)
        if new and (parts or not pending):
            parts.append(_part(_clean(c), new[0], cat))
        elif new:  # the first named clause: context sentences before it join it
            parts.append(_part(_clean(" ".join([*pending, c])), new[0], cat))
            pending = []
        elif parts:
            parts[-1].text = _clean(f"{parts[-1].text.rstrip('?.')}, {_clean(c)}")
        else:
            pending.append(c)
    return parts if len(parts) >= 2 else []


def _part(text: str, m: Mention, cat: Catalogue) -> Part:
    items = list(m.keys)
    titles = [cat.items[k].title for k in items if k in cat.items]
    return Part(
        text=text if text.endswith(("?", ".")) else text + "?",
        subject=m.surface,
        items=items,
        titles=titles,
    )


# ------------------------------------------------------------------------------ prompt form
PARTS_HEADING = "Parts of the Question"


def render_parts(parts: Sequence[Part], include_keys: bool) -> str:
    """The parts as a numbered list (keys only for the search agent)."""
    lines = []
    for i, p in enumerate(parts, 1):
        lines.append(f"{i}. {p.text}")
        if p.subject:
            lines.append(f"   - about: {p.subject}")
        if p.items:
            named = ", ".join(
                (f"[Key: {k}] " if include_keys else "") + f'"{t}"'
                for k, t in zip(p.items, p.titles, strict=False)
            )
            lines.append(f"   - library papers named: {named}")
    return "\n".join(lines)


_PART_LINE_RE = re.compile(r"^(\d+)\.\s+(.+)$")


def parse_parts(section: str) -> list[Part]:
    """`render_parts`'s list read back (the offline roles see only their prompts)."""
    parts: list[Part] = []
    for line in section.splitlines():
        m = _PART_LINE_RE.match(line.strip())
        if m and not line.startswith(" "):
            parts.append(Part(text=m.group(2).strip()))
            continue
        if not parts:
            continue
        s = line.strip()
        if s.startswith("- about:"):
            parts[-1].subject = s.removeprefix("- about:").strip()
        elif s.startswith("- library papers named:"):
            rest = s.removeprefix("- library papers named:")
            parts[-1].items = re.findall(r"\[Key:\s*([A-Za-z0-9]+)\]", rest)
            parts[-1].titles = re.findall(r'"([^"]+)"', rest)
    return parts


def catalogue_of(records: Iterable[object]) -> Catalogue:
    """A catalogue from the index's item records (notes and attachments left out)."""
    items = []
    for r in records:
        if getattr(r, "item_type", "") in ("note", "attachment"):
            continue
        items.append(
            CatalogueItem(
                str(getattr(r, "key", "")),
                str(getattr(r, "title", "")),
                tuple(getattr(r, "authors", ()) or ()),
            )
        )
    return Catalogue(items)


__all__ = [
    "PARTS_HEADING",
    "Catalogue",
    "CatalogueItem",
    "Mention",
    "Part",
    "catalogue_of",
    "decompose",
    "parse_parts",
    "render_parts",
]
