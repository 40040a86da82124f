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

from zocrates_nb.agents.catalogue import (
    Catalogue,
    CatalogueItem,
    Mention,
    catalogue_of,
    resolve_names,
    tokens,
)
from zocrates_nb.text import stem

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
# Clause boundaries inside a sentence: ", and which …", "; how …", " with what …", ", and say
# how …".
_CLAUSE_RE = re.compile(
    r"(?:,\s*(?:and|but|while|whereas)\s+|;\s*(?:and\s+)?|\s+and\s+|\s+with\s+)"
    r"(?=(?:(?:to|in|on|for|by|at|from|of)\s+)?(?:what|which|how|why|when|where|who|whom|"
    r"whose|does|do|did|is|are|say|explain|describe|tell|state|note|compare|contrast|give|"
    r"list|show|discuss)\b)",
    re.I,
)
_FOLLOW_UP_RE = re.compile(r"\s*\(Follow-up to the earlier question:.*$", re.S)
# Where a follow-up's goal notes the earlier goal it builds on ("why? — regarding: How does Raft
# elect a leader?"): the question's own words are before it.
REGARDING = " — regarding: "


def core_goal(goal: str) -> str:
    """A goal without the note of what it refers to (a rewrite never nests; parts, headings
    and aspects come from the question's own words)."""
    goal = goal.split(REGARDING, 1)[0]
    return " ".join(_FOLLOW_UP_RE.sub("", goal).split())


@dataclass
class Part:
    """One part of a question: its own standalone question and what it is about."""

    text: str
    subject: str = ""  # the named thing this part asks about ("" when the clause has none)
    items: list[str] = field(default_factory=list)  # library items the subject names
    titles: list[str] = field(default_factory=list)
    heading: str = ""  # "Raft: electing a new leader after a failure" (never the question)


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
    toks = tokens(text)
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
    toks = tokens(text)
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


_ASKING_RE = re.compile(
    r"^(?:(?:please|compare|contrast|say|explain|describe|tell(?: me)?|state|note|give|list|"
    r"show|discuss|outline|summari[sz]e)\s+)+",
    re.I,
)


def _clean(text: str) -> str:
    text = _ASKING_RE.sub("", text.strip()) if re.match(r"^\w+\s+(how|what|which|why|when|"
                                                         r"where|whether|if)\b", text.strip(),
                                                         re.I) else text  # fmt: skip
    text = re.sub(r"(^|,\s*)(compare|contrast)\s+", r"\1", text, flags=re.I)
    text = re.sub(r"\b(both|respectively)\b\s*", "", text, flags=re.I)
    text = re.sub(r"\b(does|did|do|has|have|is|was) each\b", r"\1 it", text, flags=re.I)
    text = re.sub(r"\beach\s+(?=[,.?;])", "", text, flags=re.I)
    text = re.sub(r"\s+([,.?;])", r"\1", " ".join(text.split()))
    return text[:1].upper() + text[1:]


@dataclass
class _Unit:
    sentence: int
    text: str
    mentions: list[Mention]


def decompose(question: str, catalogue: Catalogue | None = None) -> list[Part]:
    """The parts of a comparison or compound question, or [] when it asks one thing.

    The question is cut into clauses ("Compare how Raft and Zab elect a leader", "say how
    Chubby's fail-over differs"); a clause naming two or more things joined by connectives is
    one part per thing, a clause naming a new thing is a part of its own, and a clause naming
    nothing new belongs to the part(s) before it (or, before any part, to the first)."""
    q = core_goal(question)
    cat = catalogue or Catalogue([])
    units = [
        _Unit(si, c, _without_modifiers(c, cat.mentions(c, q)))
        for si, sent in enumerate(_sentences(q))
        for c in _clauses(sent)
    ]
    parts: list[Part] = []
    last: list[Part] = []
    pending: list[_Unit] = []
    seen: set[tuple[str, ...]] = set()
    own: dict[int, _Unit] = {}  # id(part) → the clause that names it
    for u in units:
        group = [m for m in _group(u.text, u.mentions) if _subject(m) not in seen]
        new = [m for m in u.mentions if _subject(m) not in seen]
        if len(group) >= 2:
            toks = tokens(u.text)
            lo, hi = toks[group[0].start][1], toks[group[-1].end - 1][2]
            last = []
            after = re.sub(r"^\s+papers?\b", "", u.text[hi:])  # "X and the Y paper both…"
            for m in group:
                text = u.text[:lo] + m.surface + after
                if len(tokens(_clean(text))) <= len(tokens(m.surface)) + 1:
                    text = ""  # "Compare Raft with Zab.": the rest of the question says what
                part = _part(_join(pending, _Unit(u.sentence, text, [])), m, cat)
                own[id(part)] = _Unit(u.sentence, text, [m])
                last.append(part)
            parts.extend(last)
            pending = []
        elif len(compared := _compared(u, seen)) >= 2:
            last = []
            for m in compared:
                part = _part(_join(pending, u), m, cat)
                own[id(part)] = u
                last.append(part)
            parts.extend(last)
            pending = []
        elif new:
            part = _part(_join(pending, u), new[0], cat)
            own[id(part)] = u
            last = [part]
            parts.append(part)
            pending = []
        elif last:
            for part in last:
                part.text = _append(part.text, u.text, same_sentence=u.sentence == _last_sentence(
                    part, own, u))  # fmt: skip
        else:
            pending.append(u)
        seen.update(_subject(m) for m in u.mentions)
    if len(parts) < 2:
        return []
    rest = " ".join(u.text for u in pending)
    for part in parts:
        if rest:
            part.text = _append(part.text, rest, same_sentence=False)
        if not part.text.strip():
            part.text = part.subject
        part.text = part.text if part.text.endswith(("?", ".")) else part.text + "?"
        clause = own.get(id(part))
        titles = [it.title for it in cat.items.values()]
        part.heading = heading(clause.text if clause and clause.text else q, part.subject, titles)
    return parts


_COMPARES_RE = re.compile(r"\b(compared?|differs?|versus|vs|unlike|whereas|than|relative to|"
                          r"contrast)\b", re.I)  # fmt: skip


def _compared(u: _Unit, seen: set[tuple[str, ...]]) -> list[Mention]:
    """The library items one clause compares without joining them ("How does Bigtable's
    tablet location compare with Spanner's directory placement?"), none already a part."""
    if not _COMPARES_RE.search(u.text):
        return []
    out: list[Mention] = []
    for m in u.mentions:
        if m.keys and _subject(m) not in seen | {_subject(x) for x in out}:
            out.append(m)
    return out


def _last_sentence(part: Part, own: dict[int, _Unit], u: _Unit) -> int:
    o = own.get(id(part))
    return o.sentence if o is not None else -1


def _join(pending: list[_Unit], u: _Unit) -> str:
    texts = [p.text for p in pending] + ([u.text] if u.text else [])
    return _clean(" ".join(texts)) if texts else ""


def _append(text: str, more: str, *, same_sentence: bool) -> str:
    more = _clean(more)
    if not text:
        return more
    if same_sentence:
        return f"{text.rstrip('?.')}, {more[:1].lower()}{more[1:]}"
    return f"{text.rstrip() if text.endswith(('?', '.')) else text.rstrip() + '?'} {more}"


_PARTICLE_RE = re.compile(r"\b(de|van|von|der|den|di|du|la|le|da|del)\s+$", re.I)


def _part(text: str, m: Mention, cat: Catalogue) -> Part:
    items = list(m.keys)
    titles = [cat.items[k].title for k in items if k in cat.items]
    subject = m.surface
    at = text.find(subject)
    if at > 0 and (p := _PARTICLE_RE.search(text[:at])):
        subject = f"{p.group(1)} {subject}"  # "de Bruijn", "van Renesse"
    return Part(text=text, subject=subject, items=items, titles=titles)


# ------------------------------------------------------------------------------ headings
_AUX = r"(?:does|do|did|can|could|would|will|should|is|are|was|were|has|have|had)"
_NOT_VERBS = frozenset(
    ["and", "or", "with", "of", "in", "on", "for", "to", "from", "as", "is", "are", "was", "were",
     "the", "a", "an", "its"]
)  # fmt: skip
_POSSESSED_END = (r"(?:compared?|differs?|with|and|versus|vs|in|on|is|are|does|do|than|"
                  r"relative)\b")  # fmt: skip
_DOUBLE_FINAL_RE = re.compile(r"[^aeiou]*[aeiou][bdgmnprt]")
HEADING_WORDS = 12


def gerund(verb: str) -> str:
    """"elect" → "electing", "handle" → "handling", "run" → "running", "die" → "dying"."""
    v = verb.lower()
    if v in ("be", "see", "flee", "agree"):
        return v + "ing"
    if v.endswith("ie"):
        return v[:-2] + "ying"
    if v.endswith("e") and not v.endswith(("ee", "ye", "oe")) and len(v) > 2:
        return v[:-1] + "ing"
    if len(v) <= 4 and _DOUBLE_FINAL_RE.fullmatch(v):
        return v + v[-1] + "ing"
    return v + "ing"


def third_person(verb: str) -> str:
    """"use" → "uses", "apply" → "applies", "do" → "does"."""
    v = verb.lower()
    if v in ("be", "have"):
        return {"be": "is", "have": "has"}[v]
    if re.search(r"[^aeiou]y$", v):
        return v[:-1] + "ies"
    if v.endswith(("s", "sh", "ch", "x", "z", "o")):
        return v + "es"
    return v + "s"


def heading(clause: str, subject: str, titles: Iterable[str] = ()) -> str:
    """A part's own short heading, its subject capitalised (see `_heading`). `titles`: the
    library's titles, where a name that modifies a noun is written so ("de Bruijn graphs")."""
    text = " ".join(_ASKING_RE.sub("", _clean(clause)).split()).rstrip(" ?.!")
    m = re.search(rf"\b{re.escape(subject)}\s+([a-z][\w-]*)", text) if subject else None
    if m and any(re.search(rf"\b{re.escape(subject)}\s+{re.escape(stem(m.group(1)))}", t, re.I)
                 for t in titles):  # fmt: skip
        # "de Bruijn graph assemblers": the name modifies a noun, as the library writes it.
        plain = re.sub(rf"^(how|what|which|why|when|where)\s+{_AUX}\s+", r"\1 ", text, flags=re.I)
        out = f"{subject}: {_clip(plain)}"
    else:
        out = _heading(text, subject)
    return _capital(out) if out.startswith(subject) else out


def _heading(text: str, subject: str) -> str:
    """A part's own short heading: its subject and what is asked about it, never the whole
    question ("How does Raft elect a new leader?" → "Raft: electing a new leader")."""
    if not subject:
        return _clip(text)
    subj = re.escape(subject)
    text = re.sub(r"\b(their|theirs)\b", "its", text)
    m = re.search(r"\bdiffers?\s+(?:in|on|with respect to|regarding)\s+(.+)$", text, re.I)
    if m and re.search(subj, text[: m.start()]):  # "how do X and Y differ in Z?": Z
        return f"{subject}: {_clip(m.group(1))}"
    m = re.match(rf"^{subj}\s+(?:papers?\s+)?([a-z]+)\s+(.*)$", text, re.I)
    if m and m.group(1).lower() not in _NOT_VERBS:  # "X changes how a layer's weights are…"
        verb = re.sub(r"(?<=[^s])s$", "", m.group(1).lower())
        return f"{subject}: {_clip(gerund(verb) + ' ' + m.group(2))}"
    m = re.search(rf"\b{subj}['’]s\s+((?:(?!{_POSSESSED_END})[\w-]+\s*){{1,5}})", text, re.I)
    if m and re.search(r"\b(compared?|differs?|versus|vs|unlike|whereas|than)\b", text, re.I):
        return f"{subject}: {_clip(m.group(1))}"  # "X's tablet location compared with Y's…"
    mods = r"(?:(?:the|a|an|original|new|proposed)\s+){0,2}"
    m = re.search(rf"(^|,\s*)how\s+(?:{_AUX}\s+)?{mods}{subj}\s+(\w+)\b(.*)$", text, re.I)
    if m and not re.fullmatch(r"['’]s", m.group(2)):
        before = text[: m.start()].strip(" ,")  # "When a replica fails, how does X keep…"
        phrase = gerund(m.group(2)) + m.group(3) + (f", {before[:1].lower()}{before[1:]}"
                                                    if before else "")  # fmt: skip
        return f"{subject}: {_clip(phrase)}"
    m = re.match(rf"^(why|when|where)\s+(?:{_AUX}\s+)?(?:the\s+)?{subj}\s+(\w+)\b(.*)$", text,
                 re.I)  # fmt: skip
    if m:
        phrase = f"{m.group(1).lower()} it {third_person(m.group(2))}{m.group(3)}"
        return f"{subject}: {_clip(phrase)}"
    m = re.match(rf"^(what|which)\b(.*?)\s+{_AUX}\s+(?:the\s+)?{subj}\s+(\w+)\b(.*)$", text, re.I)
    if m:
        phrase = f"{m.group(1).lower()}{m.group(2)} it {third_person(m.group(3))}{m.group(4)}"
        return f"{subject}: {_clip(phrase)}"
    phrase = re.sub(rf"\b{subj}['’]s\b", "its", text)
    phrase = re.sub(rf"\s*\b(?:of|in|for|by|from)\s+(?:the\s+)?{subj}\b", "", phrase)
    # The subject standing alone becomes "it"; as the modifier of a noun ("de Bruijn graph
    # assemblers") it stays as written.
    phrase = re.sub(rf"\b(?:the\s+)?{subj}\b(?!\s+[a-z])", "it", phrase)
    phrase = re.sub(rf"^(how|what|which|why|when|where)\s+{_AUX}\s+", r"\1 ", phrase, flags=re.I)
    if not phrase.strip(" :,") or (len(phrase.split()) <= 3 and re.search(r"\bit\b", phrase)):
        return subject  # "Compare Raft with Zab": the subject is the heading
    return f"{subject}: {_clip(phrase)}"


def _capital(subject: str) -> str:
    return subject[:1].upper() + subject[1:]


def _clip(text: str) -> str:
    text = text.strip(" ,:;")
    head, sep, _ = text.partition(", ")
    if sep and len(head.split()) >= 3 and len(text.split()) > 8:
        text = head  # "who assigns the timestamps, two systems that keep…": the first clause
    words = text.split()
    if len(words) > HEADING_WORDS:
        cut = " ".join(words[:HEADING_WORDS])
        comma = cut.rfind(",")
        text = (cut[:comma] if comma > len(cut) // 2 else cut) + "…"
    if text[:2].isupper() or re.match(r"^[A-Z][a-z]*[A-Z]", text):
        return text  # an acronym or a name leads
    return text[:1].lower() + text[1:]


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


__all__ = [
    "PARTS_HEADING",
    "REGARDING",
    "Catalogue",
    "CatalogueItem",
    "Mention",
    "Part",
    "catalogue_of",
    "core_goal",
    "decompose",
    "gerund",
    "heading",
    "render_parts",
    "resolve_names",
]
