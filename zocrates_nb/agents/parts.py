"""The parts of a question: what a comparison or a compound question asks about each thing.

"How do the masters of MapReduce, Bigtable and GFS find out that a worker died?" is three
questions, one per system; "Which hash does Dynamo use, and which does Apache Cassandra's
partitioner use?" is two, and the library may answer only one. Searching once for the whole
sentence reads one paper and leaves the others unread; answering "no evidence" because one
name is missing hides what the library does hold. So the pipeline splits such questions into
parts, searches and reads for each, and the answer covers each part or names it as a gap.

Decomposition reads the question through the library's names (`index/names.py`: titles,
authors and their initials, the names introductions give their systems) and other named
things (capitalised names, acronyms, "TCP/IP" whole); two or more of them joined only by
connectives ("X and Y", "X, Y and Z", "in X and in Y") make a comparison, one part per thing;
clauses that each bring a new named thing ("…, how does Bigtable locate tablets, and …") are
parts of their own, the one the library knows being what the clause asks about. A question
that is neither stays whole (no parts). A part's heading is its name ("Paxos Made Simple
(Lamport)" for an author's paper) and, where the question has one, the clean span of its own
words that says what is asked of it: never words glued or conjugated into a new phrase.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from zocrates_nb.agents import list_items
from zocrates_nb.agents.headings import (
    AUX_WORDS,
    COLLEAGUES,
    WH_WORDS,
    aspect_span,
    capital,
    casual_form,
    clip,
    sentences,
    short_title,
)
from zocrates_nb.agents.own_notes import asks_own_notes
from zocrates_nb.index.library_names import catalogue_of
from zocrates_nb.index.names import Catalogue, CatalogueItem, Mention, resolve_names, tokens
from zocrates_nb.text import STOPWORDS

# Between two coordinated names only these may stand ("Dynamo and chain replication",
# "MapReduce, Bigtable and GFS", "in Bigtable and in Spanner", "Raft with Zab").
_CONNECTIVES = frozenset([
    "and", "or", "with", "in", "of", "the", "a", "an", "both", "between", "versus", "vs", "to",
    "from", "as", "well", "also", "paper", "papers",
    "primer",  # "Eddy's HMM primer and the Smith-Waterman paper"
])  # fmt: skip
# Clause boundaries inside a sentence: ", and which …", "; how …", " with what …", ", and say
# how …".
_CLAUSE_START = (
    r"(?:what|which|how|why|when|where|who|whom|whose|if|does|do|did|is|are|say|explain|"
    r"describe|tell|state|note|compare|contrast|give|list|show|discuss)\b"
)
_CLAUSE_RE = re.compile(
    # after punctuation the new clause may open on where it asks ("…, and in chain
    # replication, which server …"); after a bare "and" that is a comparison's second name
    # ("in few-shot prototypical networks and in MoCo, what …")
    rf"(?:,\s*(?:(?:and|but|while|whereas)\s+)?|;\s*(?:and\s+)?)"
    rf"(?=(?:(?:to|in|on|for|by|at|from|of)\s+(?:[\w'’-]+,?\s+){{0,4}}?)?{_CLAUSE_START})|"
    rf"(?:\s+and\s+|\s+with\s+)"
    rf"(?=(?:(?:to|in|on|for|by|at|from|of)\s+(?:[\w'’-]+\s+){{0,4}}?)?{_CLAUSE_START})",
    re.I,
)
_ASKS_RE = re.compile(r"\b(?:what|which|how|why|when|where|who|whom|whose|does|do|did|is|are|"
                      r"was|were|can|could|has|have)\b", re.I)  # fmt: skip
_PREAMBLE_RE = re.compile(rf"^[^:?]{{1,60}}:\s+(?={_ASKS_RE.pattern})", re.I)
_FOLLOW_UP_RE = re.compile(r"\s*\(Follow-up to the earlier question:.*$", re.S)
# Sessions recorded before a follow-up's earlier subject was a typed field (`FollowUp`) noted it
# in the goal ("why? — regarding: How does Raft elect a leader?"): the own words are before it.
_REGARDING = " — regarding: "


def core_goal(goal: str) -> str:
    """A goal without the note of what it refers to (a rewrite never nests; parts, headings
    and aspects come from the question's own words)."""
    goal = goal.split(_REGARDING, 1)[0]
    return " ".join(_FOLLOW_UP_RE.sub("", goal).split())


@dataclass
class Part:
    """One part of a question: its own standalone question and what it is about."""

    text: str
    subject: str = ""  # the named thing this part asks about ("" when the clause has none)
    items: list[str] = field(default_factory=list)  # library items the subject names
    titles: list[str] = field(default_factory=list)
    heading: str = ""  # "Raft: elect a new leader after a failure" (never the question)
    name: str = ""  # what the heading calls it: the subject, or "Paxos Made Simple (Lamport)"


# ------------------------------------------------------------------------------ decomposition
def _clauses(sentence: str) -> list[str]:
    out = [c.strip(" ,;") for c in _CLAUSE_RE.split(sentence)]
    return [c for c in out if c]


def _subject(m: Mention) -> tuple[str, ...]:
    """What a mention is about: its items, or (unknown to the catalogue) its own name."""
    return m.keys or ("name:" + m.surface.lower(),)


def _without_modifiers(text: str, ms: list[Mention]) -> list[Mention]:
    """ "Amazon's Dynamo", "Google's Spanner": a name followed by another is its modifier.
    An author's or a paper's own name modifies a name the library lacks, or one only abstracts
    use, into that paper's ("Kleinberg's HITS": the paper never calls its method so, but its
    author's name says which it is; "Okapi's BM25", though another abstract names BM25)."""
    toks = tokens(text)
    out: list[Mention] = []
    skip = -1
    for i, a in enumerate(ms):
        if i == skip:
            continue
        b = ms[i + 1] if i + 1 < len(ms) else None
        if b is not None:
            gap = text[toks[a.end - 1][2] : toks[b.start][1]]
            strong = a.keys and (a.author or not a.weak)
            if re.fullmatch(r"['’]s\s+", gap) and strong and (not b.keys or b.weak):
                out.append(dataclasses.replace(b, keys=a.keys))
                skip = i + 1
                continue
            if re.fullmatch(r"['’]s\s+", gap) or (not a.keys and not gap.strip()):
                continue
        out.append(a)
    return out


def _within_titles(text: str, ms: list[Mention], cat: Catalogue) -> list[Mention]:
    """A question that names a paper by its whole title names one thing: the words of the
    title that are names of their own ("Self-Attention in Vision Models") are not others."""
    toks = tokens(text)
    low = text.casefold()
    spans: dict[tuple[int, int], Mention] = {}  # a title's place → the first name of it
    for m in ms:
        for key in m.keys:
            title = " ".join(cat.items[key].title.split()).casefold() if key in cat.items else ""
            at = low.find(title) if len(title.split()) >= 2 else -1
            if at >= 0:
                spans.setdefault((at, at + len(title)), m)
    return [m for m in ms if not any(
        owner is not m and lo <= toks[m.start][1] and toks[m.end - 1][2] <= hi
        for (lo, hi), owner in spans.items())]  # fmt: skip


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
    if asks_own_notes(q):
        return []  # the researcher's note is what is asked, whatever papers it names
    cat = catalogue or Catalogue([])
    units = [
        _Unit(si, c, _within_titles(c, _without_modifiers(c, _named(cat.mentions(c, q))), cat))
        for si, sent in enumerate(sentences(q))
        for c in _clauses(sent)
    ]
    _reported(units)
    parts: list[Part] = []
    last: list[Part] = []
    pending: list[_Unit] = []
    seen: set[tuple[str, ...]] = set()
    own: dict[int, _Unit] = {}  # id(part) → the clause that names it
    prev: _Unit | None = None
    for u in units:
        group = [m for m in _group(u.text, u.mentions) if _subject(m) not in seen]
        new = [m for m in u.mentions if _subject(m) not in seen]
        # "Kleinberg's output (as Clever) with Yahoo!": names the library lacks, compared in a
        # clause naming a paper by its author, are what that paper reports on, not parts.
        reported = (len(group) >= 2 and not any(m.keys for m in group)
                    and any(m.author and m.keys for m in new))  # fmt: skip
        if len(group) >= 2 and not reported:
            toks = tokens(u.text)
            lo, hi = toks[group[0].start][1], toks[group[-1].end - 1][2]
            hi = _past_own_paper(u, group, hi)
            whose = re.search(r"[\w-]+['’]s\s+$", u.text[:lo])  # "Okapi's BM25 and …"
            lo -= len(whose.group(0)) if whose else 0
            last = []
            # "X and the Y paper both…", "How do GFS and Bigtable each use…"
            # "… Kleinberg's hubs/authorities method: where …": that name's, not what is asked
            after = re.sub(r"^['’]s\s+[^:;,?]{1,60}?[:;,]\s*(?=\S)", " ", u.text[hi:])
            after = re.sub(r"^\s+(?:papers?\b\s*)?(?:each\b)?", " ", after)
            after = after if after.strip() else ""
            for m in group:
                own_whose = whose.group(0) if whose and m is group[0] else ""
                text = u.text[:lo] + own_whose + m.surface + after
                if len(tokens(_clean(text))) <= len(tokens(m.surface)) + 1:
                    text = ""  # "Compare Raft with Zab.": the rest of the question says what
                part = _part(_join(pending, _Unit(u.sentence, text, [])), m, cat)
                own[id(part)] = _Unit(u.sentence, text, [m])
                last.append(part)
            parts.extend(last)
            pending = []
        elif not reported and len(compared := _compared(u, seen)) >= 2:
            last = []
            for m in compared:
                part = _part(_join(pending, u), m, cat)
                own[id(part)] = u
                last.append(part)
            parts.extend(last)
            pending = []
        elif (new and not any(m.keys for m in new) and prev is not None and len(last) == 1
              and last[0].items and own.get(id(last[0])) is prev and prev.sentence == u.sentence
              and not _ASKS_RE.search(prev.text) and _ASKS_RE.search(u.text)):  # fmt: skip
            # "According to the Spanner authors, why did … stick with Megastore?": the clause
            # before asked nothing; it said whose answer this one asks for.
            last[0].text = _append(last[0].text, u.text, same_sentence=True)
        elif new:
            # The thing the library knows is what the clause asks about ("Does TCP/IP appear
            # in the Bitcoin paper?"): an unknown name beside it is part of its question.
            part = _part(_join(pending, u), next((m for m in new if m.keys), new[0]), cat)
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
        prev = u
    if len(parts) < 2:
        return _by_named_items(q, units, cat)
    rest = " ".join(u.text for u in pending)
    for part in parts:
        if rest:
            part.text = _append(part.text, rest, same_sentence=False)
        if not part.text.strip():
            part.text = part.subject
        part.text = part.text if part.text.endswith(("?", ".")) else part.text + "?"
    _headings(parts, own, q)
    return parts


_OF_PAPER = frozenset({"from", "in", "of", "by", "the", "a", "s"})


def _past_own_paper(u: _Unit, group: list[Mention], hi: int) -> int:
    """Where a comparison's names end: past the paper named for them ("TW-IDF from the
    graph-of-word paper each …")."""
    toks, end = tokens(u.text), group[-1].end
    for m in (m for m in u.mentions if m.start >= end):
        gap = [w.lower() for w, _, _ in toks[end : m.start]]
        if _subject(m) not in {_subject(g) for g in group} or not gap or not all(
                w in _OF_PAPER for w in gap):  # fmt: skip
            break
        hi, end = toks[m.end - 1][2], m.end
    return hi


def _named(ms: list[Mention]) -> list[Mention]:
    """The mentions that can be what a part is about: not a word only abstracts use that
    names no one paper ("ImageNet", a data set several papers train on)."""
    return [m for m in ms if not m.shared_word]


# What joins two things a question asks about: a connective, a comparison, a list.
_JOINS_RE = re.compile(r"\b(?:and|or|vs\.?|versus|compar\w*|than|like|the way|both|each|"
                       r"between|unlike|whereas|while|differ\w*)\b|[,;]", re.I)


def _joins(units: list[_Unit]) -> bool:
    """Whether the question joins the things it names, outside the names themselves ("Pevzner
    and Tesler" is one paper's authors). Two names side by side with nothing joining them are
    one paper and what it is asked about: "What BLEU score does BERT get …", "… cost Google to
    run one Chubby cell"."""
    for u in units:
        toks = tokens(u.text)
        text, at = "", 0
        for m in sorted(u.mentions, key=lambda m: m.start):
            text += u.text[at : toks[m.start][1]] + " "
            at = toks[m.end - 1][2]
        if _JOINS_RE.search(text + u.text[at:]):
            return True
    return False


def _by_named_items(q: str, units: list[_Unit], cat: Catalogue) -> list[Part]:
    """A question naming two or more of the library's papers, however its sentence joins
    them ("Does SimCLRv2 keep a memory … the way MoCo does", "a Chubby cell, a Raft cluster
    and MapReduce's input storage", "Lamport's paper and Ongaro and Ousterhout's"): one part
    per paper, asking the clauses that name it and those that name no paper, headed by its
    name alone (no clean span of the question says what is asked of each). A name several
    papers share and a name the library lacks are not papers of their own here."""
    subjects: list[Mention] = []
    for u in units:
        for m in u.mentions:
            if len(m.keys) != 1 or _owned(u.text, m):
                continue  # "Paxos groups" in a question on Spanner: a name two papers share
            if any(set(m.keys) & set(s.keys) for s in subjects):
                continue  # "Ongaro and Ousterhout": one paper, named twice
            subjects.append(m)
    if len(subjects) < 2 or not _joins(units):
        return []

    def names(u: _Unit, m: Mention) -> bool:
        return any(set(x.keys) & set(m.keys) for x in u.mentions)

    def asks(m: Mention) -> str:
        own = [_without_others(u, m) for u in units if names(u, m)
               or not any(names(u, s) for s in subjects)]  # fmt: skip
        return _clean(" ".join(own)) if own else _clean(q)

    parts = [_part(asks(m), m, cat) for m in subjects]
    for part in parts:
        part.heading = part.name
    return parts


# What a paper is said to say: "What do Ongaro and Ousterhout say …", "Lamport argues …",
# "the Spanner authors report …", "According to Lamport, …".
_SAYS_RE = re.compile(
    COLLEAGUES + r"(?:['’]s?)?(?:\s+(?:paper|papers|authors|team|article))?\s+(?:\w+ly\s+)?"
    r"(?:say|says|said|argue[sd]?|claim(?:s|ed)?|report(?:s|ed)?|write|writes|wrote|"
    r"conclude[sd]?|(?:find|finds|found)(?!\s+out)|suggest(?:s|ed)?|explain(?:s|ed)?|mean|means|meant|"
    r"think|thinks|believe[sd]?|observe[sd]?|propose[sd]?)\b",
    re.I,
)


def _reported(units: list[_Unit]) -> None:
    """The names in what one paper is said to say are what it says, not parts: "What do Ongaro
    and Ousterhout say makes Raft easier to understand than Paxos?" asks their paper, and so
    does "According to Lamport, why is Paxos …" (the clause after one that asks nothing)."""
    carried: tuple[int, Mention] | None = None
    for u in units:
        toks = tokens(u.text)
        joined = _group(u.text, u.mentions)  # "How do MapReduce, Bigtable and GFS find …"
        sayers = [m for m in u.mentions if len(m.keys) == 1 and m not in joined and (
            _SAYS_RE.match(u.text[toks[m.end - 1][2]:])
            or re.search(r"\baccording\s+to\s+(?:the\s+)?$", u.text[: toks[m.start][1]], re.I))]
        if not sayers and carried is not None and carried[0] == u.sentence:
            sayers = [carried[1]]
        if len({m.keys for m in sayers}) != 1:
            continue
        u.mentions = [m for m in u.mentions if m.keys == sayers[0].keys]
        carried = (u.sentence, sayers[0]) if not _ASKS_RE.search(u.text) else None


def _owned(text: str, m: Mention) -> bool:
    """A name that modifies a noun of something else's ("… loses its exclusive Chubby lock"):
    the thing asked about owns it; it is not a paper asked about."""
    toks = tokens(text)
    before = [w for w, _, _ in toks[max(0, m.start - 3) : m.start]]
    owner = next((i for i, w in enumerate(before) if w.lower() in ("its", "their")), None)
    after = toks[m.end][0] if m.end < len(toks) else ""
    gap = text[toks[m.end - 1][2] : toks[m.end][1]] if after else ""
    return (owner is not None and all(w.islower() for w in before[owner + 1 :])
            and after.islower() and gap == " " and after not in _CONNECTIVES)  # fmt: skip


def _without_others(u: _Unit, m: Mention) -> str:
    """A clause as one part asks it: the other papers coordinated with it left out ("How do
    Lamport's paper and Ongaro and Ousterhout's paper keep …" asks Raft's part "How do Ongaro
    and Ousterhout's paper keep …"); a paper the clause names otherwise ("the way MoCo does")
    stays, as what is asked."""
    toks = tokens(u.text)
    cut: list[tuple[int, int]] = []
    named = sorted(u.mentions, key=lambda x: x.start)
    for i, o in enumerate(named):
        if set(o.keys) & set(m.keys) or not o.keys:
            continue
        beside = [x for x in (named[i - 1] if i else None, named[i + 1] if i + 1 < len(named)
                              else None) if x is not None]  # fmt: skip
        for x in beside:
            lo, hi = (x.end, o.start) if x.start < o.start else (o.end, x.start)
            gap = [w.lower() for w, _, _ in toks[lo:hi]]
            if all(w in _CONNECTIVES or w == "s" for w in gap):
                if x.start < o.start:  # "X's paper and O's paper": from X's end to O's
                    a, b = toks[x.end - 1][2], toks[o.end - 1][2]
                    tail = re.match(r"['’]s(?:\s+papers?)?\b", u.text[b:])
                    b += tail.end() if tail else 0
                else:  # "O and X": from O to X
                    a, b = toks[o.start][1], toks[x.start][1]
                cut.append((a, b))
                break
        else:  # "a Chubby cell, a Raft cluster and MapReduce's input storage": a list of
            # things, not of names alone; another paper's item says nothing of this one
            after = next((x for x in named[i + 1 :] if x.keys and set(x.keys) != set(o.keys)),
                         None)  # fmt: skip
            span = list_items.item_span(
                u.text, (toks[o.start][1], toks[o.end - 1][2]),
                (toks[after.start][1], toks[after.end - 1][2]) if after else None)  # fmt: skip
            cut += [span] if span else []
    keep = [toks[x.start][1] for x in named if set(x.keys) & set(m.keys)]
    return list_items.without(u.text, cut, keep)


def _headings(parts: list[Part], own: dict[int, _Unit], q: str) -> None:
    """Each part's heading from its own clause (or, where that says nothing of it, its whole
    text); parts compared in one clause share the span that names none of them."""
    subjects = [p.subject.lower() for p in parts if p.subject]
    aspects: dict[int, str] = {}
    for part in parts:
        clause = own.get(id(part))  # first, unless it asks nothing ("In Okapi's interface")
        texts = [clause.text] if clause and _ASKS_RE.search(clause.text) else []
        for text in [*texts, part.text, q]:
            span = aspect_span(_plain(text), part.subject) if part.subject else ""
            if span:
                aspects[id(part)] = span
                break
    for part in parts:
        span = aspects.get(id(part), "")
        others = [sub for sub in subjects if sub != part.subject.lower()]
        if " … " in span and any(sub in span.lower() for sub in others):
            span = span.partition(" … ")[0]  # "how much … gain from adopting MoCo's memory"
        if any(sub in span.lower() for sub in others):
            clause = own.get(id(part))
            siblings = [aspects.get(id(o), "") for o in parts if o is not part
                        and own.get(id(o)) is clause]  # fmt: skip
            span = next((a for a in siblings if a and not any(
                sub in a.lower() for sub in subjects)), "")  # fmt: skip
        if not span and (borrowed := _elided(part, parts, aspects, subjects)):
            # "How many heads does the Transformer use, and how many does BERT-base?": the
            # second clause asks the first's question of its own thing.
            span = borrowed
            part.text = f"{part.text.rstrip(' ?.')} ({borrowed})?"
        part.heading = f"{part.name}: {span}" if span else part.name


def _elided(part: Part, parts: list[Part], aspects: dict[int, str], subjects: list[str]) -> str:
    """The aspect a clause leaves out because a sibling clause said it: the first other
    part's span, when this part's own words say nothing but its name."""
    own = [w for w, _, _ in tokens(part.text) if w.lower() not in STOPWORDS | AUX_WORDS
           | WH_WORDS and w.lower() not in part.subject.lower()]  # fmt: skip
    if len(own) > 1:
        return ""
    for other in parts:
        span = aspects.get(id(other), "")
        if other is not part and span and not any(sub in span.lower() for sub in subjects):
            return span
    return ""


def _plain(text: str) -> str:
    text = _PREAMBLE_RE.sub("", text.strip())  # "Two unrelated things: what does …"
    return " ".join(_ASKING_RE.sub("", text).split()).rstrip(" ?.!")


_COMPARES_RE = re.compile(r"\b(compared?|differs?|versus|vs|unlike|whereas|than|relative to|"
                          r"contrast)\b", re.I)  # fmt: skip


def _compared(u: _Unit, seen: set[tuple[str, ...]]) -> list[Mention]:
    """The library items one clause compares without joining them ("How does Bigtable's
    tablet location compare with Spanner's directory placement?"), none already a part."""
    if not _COMPARES_RE.search(u.text):
        return []
    out: list[Mention] = []
    for m in u.mentions:  # a name the library lacks is compared too, and said to be missing
        if _subject(m) not in seen | {_subject(x) for x in out}:
            out.append(m)
    return out if any(m.keys for m in out) else []


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
    name = capital(subject)
    if len(titles) == 1 and not m.author and casual_form(subject, short_title(titles[0])):
        name = short_title(titles[0])  # "weight-normalized networks": Weight Normalization
    if m.author and len(titles) == 1:
        # "Lamport's paper", "FLP": the paper is what the part is about, and its title is what
        # its text can answer to (the paper never calls itself so).
        if not subject.isupper():
            name = f"{short_title(titles[0])} ({subject})"
        text = re.sub(rf"(?:\bthe\s+)?(?:\bpaper\s+by\s+)?\b{re.escape(m.surface)}\b{COLLEAGUES}"
                      r"(?:['’]s\b|['’](?=\s))?"
                      r"(?:\s+(?:paper|article|result|theorem|proof)\b)?", f"“{titles[0]}”", text,
                      count=1)  # fmt: skip
    return Part(text=text, subject=subject, items=items, titles=titles, name=name)


def heading(clause: str, subject: str, name: str = "") -> str:
    """A part's heading: the name of what it is about and, where the question has one, the
    clean span of its own words that says what is asked of it ("Raft: elect a new leader after
    the old one fails", "Paxos Made Simple (Lamport): what are the two phases of the
    algorithm"), never words glued or conjugated into a phrase the question does not hold."""
    name = name or capital(subject)
    text = _plain(clause)
    aspect = aspect_span(text, subject) if subject else clip(text)
    return f"{name}: {aspect}" if aspect else name



# ------------------------------------------------------------------------------ prompt form
PARTS_HEADING = "Parts of the Question"


def render_parts(parts: Sequence[Part], include_keys: bool) -> str:
    """The parts as a numbered list (keys only for the search agent)."""
    lines = []
    for i, p in enumerate(parts, 1):
        lines.append(f"{i}. {p.text}")
        if p.subject:
            lines.append(f"   - about: {p.name or p.subject}")
        if p.items:
            named = ", ".join(
                (f"[Key: {k}] " if include_keys else "") + f'"{t}"'
                for k, t in zip(p.items, p.titles, strict=False)
            )
            lines.append(f"   - library papers named: {named}")
    return "\n".join(lines)


__all__ = [
    "PARTS_HEADING",
    "Catalogue",
    "CatalogueItem",
    "Mention",
    "Part",
    "catalogue_of",
    "core_goal",
    "decompose",
    "heading",
    "render_parts",
    "resolve_names",
]
