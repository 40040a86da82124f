"""The library's names: how a question refers to an item. A title's head before its colon, its
leading phrase, the whole of a short title, its acronym, a CamelCase word in it, a capitalised
word of a sentence-case title, an author's surname ("Lamport's paper", "the paper by Ongaro")
and the authors' initials ("FLP"), and the names its abstract and introduction give what the
paper presents ("Raft", "the Transformer", "a lock service called Chubby", "our method
(SimCLRv2)"), which resolve to the item whose text uses them most.

`index.library_names.names_for(index)` builds the catalogue once per index generation, so
every question is read through the library's own names, not English phrase rules.

`Catalogue.mentions` finds them (and other named things the catalogue does not know) in a
question, the longest first; `resolve_names` gives the items each mention names.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zocrates_nb.text import STOPWORDS, entities, stem

if TYPE_CHECKING:
    pass

# Words that start an instruction or a question: never a name, whatever their case.
IMPERATIVES = frozenset([
    "compare", "contrast", "explain", "describe", "summarize", "summarise", "list", "give",
    "name", "show", "tell", "discuss", "outline", "define", "identify", "evaluate", "analyze",
    "analyse", "state", "find", "consider", "note", "assume", "suppose", "please", "what",
    "how", "why", "which", "who", "whom", "whose", "when", "where", "does", "do", "did", "is",
    "are", "was", "were", "can", "could", "would", "should", "according", "regarding",
])  # fmt: skip
_TITLE_SPLIT_RE = re.compile(r"\s*(?::|—|–|\s-\s)\s*")
_TOKEN_RE = re.compile(r"[A-Za-z0-9]+")
_LEADING_STOP = frozenset([
    "a", "an", "the", "of", "for", "in", "on", "at", "to", "with", "by", "from", "using", "via",
    "and", "or", "as", "is", "are", "towards", "toward", "into", "over", "under", "about",
    "through",
])  # fmt: skip
_WH_START = frozenset(
    ["how", "what", "why", "which", "who", "when", "where", "is", "are", "can", "do", "does"]
)


@dataclass(frozen=True)
class CatalogueItem:
    key: str
    title: str
    authors: tuple[str, ...] = ()
    abstract: str = ""
    intro: str = ""  # the opening of its introduction, where a paper names what it presents
    tags: tuple[str, ...] = ()  # the researcher's own tags ("BM25" on Okapi at TREC-3)


@dataclass(frozen=True)
class _Name:
    tokens: tuple[str, ...]  # stemmed, lower case
    key: str
    strict_case: bool  # a single plain word: only its capitalised spelling names the item
    acronym: bool = False
    author: bool = False  # a creator's surname (or their initials): the item is their paper


@dataclass
class Mention:
    """A named thing in the question: where it is, how it is written, which items it names."""

    start: int  # token positions [start, end)
    end: int
    surface: str
    keys: tuple[str, ...] = ()  # library items it names (empty: a name the catalogue lacks)
    author: bool = False  # the name is an author's: it names the paper, not a system
    # Only an abstract uses it ("ImageNet", "CIFAR"): a data set or tool the papers share more
    # often than a name of what one of them presents.
    weak: bool = False

    @property
    def shared_word(self) -> bool:
        """A word only abstracts use, for several papers ("ImageNet", a data set they train
        on): it names no one paper, so it is neither a part nor a paper the question names."""
        return self.weak and len(self.keys) > 1


def tokens(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in _TOKEN_RE.finditer(text)]


def _stems(words: Iterable[str]) -> tuple[str, ...]:
    return tuple(stem(w.lower()) for w in words)


class Catalogue:
    """The names by which a question may refer to the library's items."""

    def __init__(self, items: Iterable[CatalogueItem]) -> None:
        self.items = {it.key: it for it in items}
        self.names: list[_Name] = []
        surnames: dict[str, list[tuple[int, str]]] = {}  # surname → (position, key)
        for it in self.items.values():
            for words in self._title_names(it.title):
                plain = len(words) == 1 and not _distinctive(words[0])
                self.names.append(_Name(_stems(words), it.key, strict_case=plain))
            acro = _acronym(it.title)
            if acro:
                self.names.append(_Name(_stems([acro]), it.key, True, acronym=True))
            for i, a in enumerate(it.authors):
                name = _surname(a)
                if len(name) >= 3:
                    surnames.setdefault(name, []).append((i, it.key))
        # Every creator's items, for a pair named together ("Smith-Waterman", "Fischer, Lynch
        # and Paterson"): each may have written several papers, the pair only one.
        self.creators: dict[str, set[str]] = {}
        for name, places in surnames.items():
            self.creators.setdefault(stem(name.lower()), set()).update(k for _, k in places)
        for name, places in surnames.items():
            # "Ghemawat's paper": the one paper they wrote, else the one they wrote first, else
            # (several firsts: "van Renesse") each, for the question's other names to choose.
            firsts = [k for i, k in places if i == 0]
            keys = firsts if len(firsts) == 1 else sorted({k for _, k in places})
            for key in keys:
                self.names.append(_Name(_stems([name]), key, strict_case=True, author=True))
        # A tag the researcher put on one item only, written as a name ("BM25", "TW-IDF"): their
        # own name for what it presents, though its title and abstract never use it.
        tagged: dict[str, set[str]] = {}
        for it in self.items.values():
            for tag in it.tags:
                tagged.setdefault(tag.strip(), set()).add(it.key)
        for tag, owners in tagged.items():
            words = [w for w, _, _ in tokens(tag)]
            if len(owners) == 1 and len(tag.split()) == 1 and len(tag) >= 3 and _distinctive(tag):
                self.names.append(_Name(_stems(words), next(iter(owners)), strict_case=True))
        for it in self.items.values():
            for words in _quoted_names(it):  # "our “MoCo v2” baselines"
                self.names.append(_Name(_stems(words), it.key, strict_case=False))
            initials = _initials(it.authors)
            if initials:  # "FLP": Fischer, Lynch and Paterson's result
                self.names.append(_Name(_stems([initials]), it.key, True, acronym=True,
                                        author=True))  # fmt: skip
        # Names an item's abstract uses for what it presents ("Raft is a consensus algorithm…
        # Raft separates…", "a new architecture, the Transformer"): capitalised words written
        # mid-sentence and never in lower case. The first word of a title that its abstract
        # names so ("Paxos" of "Paxos Made Simple") is a name of the title, unless the
        # abstracts of two other items use it too ("Google").
        found = {it.key: _abstract_names(it) for it in self.items.values()}
        users: dict[str, set[str]] = {}
        for key, names in found.items():
            for word in names:
                users.setdefault(stem(word.lower()), set()).add(key)
        self.abstract_names: dict[str, dict[str, int]] = {}  # stem → {key: count}
        for it in self.items.values():
            first = _first_word(it.title)
            if _own_name(first, it, users):  # "Okapi at TREC-3", no abstract: its introduction
                self.names.append(_Name(_stems([first]), it.key, strict_case=True))
            for word, n in found[it.key].items():
                st = stem(word.lower())
                titled = {k for k, x in self.items.items() if _first_word(x.title) == word}
                if word == first and len(users[st] - titled) < 2:
                    self.names.append(_Name(_stems([word]), it.key, strict_case=True))
                elif word != first:
                    self.abstract_names.setdefault(st, {})[it.key] = n

    @staticmethod
    def _title_names(title: str) -> list[list[str]]:
        """A title's head before a colon or dash, its leading phrase, the whole of a short
        title, and the CamelCase words in it."""
        out: list[list[str]] = []
        pieces = _TITLE_SPLIT_RE.split(title.strip(), maxsplit=1)
        if len(pieces) == 2:
            head = [w for w, _, _ in tokens(pieces[0])]
            if 1 <= len(head) <= 6:
                out.append(head)
                joined = re.split(r"\s+and\s+", pieces[0])
                if len(joined) > 1:
                    out.extend([w for w, _, _ in tokens(j)] for j in joined)
        words = [w for w, _, _ in tokens(title)]
        while words and words[0].lower() in ("a", "an", "the"):
            words = words[1:]
        if words and 2 <= len(words) <= 4 and len(pieces) == 1:
            out.append(words)
        if len(words) >= 3 and words not in out:
            out.append(words)  # the whole title, written out ("Attention Is All You Need")
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
        tail = [w for w, _, _ in tokens(pieces[-1])][1:]
        if tail and sum(w[:1].islower() for w in tail) >= 0.6 * len(tail):
            out.extend([w] for w in tail if w[:1].isupper() and not (w.isupper() and len(w) <= 3))
        unique: list[list[str]] = []
        for n in out:
            if n not in unique:
                unique.append(n)
        return unique

    def _by_abstract(self, stemmed: str) -> tuple[str, ...]:
        """The items an abstract-only name stands for: the one whose abstract uses it most,
        when it clearly does (twice the next), else the two that use it most."""
        counts = self.abstract_names.get(stemmed)
        if not counts:
            return ()
        ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        top = ranked[0][1]
        if len(ranked) == 1 or top >= 2 * ranked[1][1]:
            return (ranked[0][0],)
        return tuple(sorted(k for k, n in ranked[:2] if 2 * n >= top))

    def _coauthors(
        self, text: str, toks: list[tuple[str, int, int]], low: tuple[str, ...], taken: set[int]
    ) -> list[Mention]:
        """Creators named together ("Smith-Waterman", "Fischer, Lynch and Paterson's"): the
        one item they all wrote, though each alone may name several or none."""
        out: list[Mention] = []
        i = 0
        while i < len(toks):
            if i in taken or low[i] not in self.creators or not (
                toks[i][0][:1].isupper() or _casual_pair(text, toks, i)
            ):
                i += 1
                continue
            j, keys = i + 1, set(self.creators[low[i]])
            while j < len(toks) and j not in taken:
                gap = text[toks[j - 1][2] : toks[j][1]].strip()
                if gap == "" and toks[j][0] == "and":
                    j += 1  # "Lynch and Paterson"
                    continue
                if gap not in ("-", "–", ",", "&", "") or low[j] not in self.creators:
                    break
                if not toks[j][0][:1].isupper() and not toks[i][0].islower():
                    break
                keys &= self.creators[low[j]]
                j += 1
            while j > i + 1 and toks[j - 1][0] == "and":
                j -= 1
            names = sum(low[k] in self.creators and toks[k][0] != "and" for k in range(i, j))
            if len(keys) > 1:  # several wrote together: the paper they lead ("Dean and Ghemawat")
                named = {low[k] for k in range(i, j) if toks[k][0] != "and"}
                keys = {k for k in keys if self._led_by(k, named)} or keys
            if names >= 2 and len(keys) == 1:
                out.append(Mention(i, j, text[toks[i][1] : toks[j - 1][2]], tuple(keys),
                                   author=True))  # fmt: skip
                taken.update(range(i, j))
                i = j
            else:
                i += 1
        return out

    def _led_by(self, key: str, named: set[str]) -> bool:
        """Whether `named` (stemmed surnames) are the item's first authors: a paper is called by
        the names on its byline's head, the way it is cited."""
        head = self.items[key].authors[: len(named)]
        return {stem(_surname(a).lower()) for a in head} == named

    def mentions(self, text: str, context: str = "") -> list[Mention]:
        """Library names and other named things in `text`, not overlapping (the longest
        wins); a name two items share goes to the one its authors named in `context` claim,
        else to the one no other mention there claims."""
        found = self._find(text)
        around = self._find(context) if context and context != text else found
        claimed = {k for m in around if len(m.keys) == 1 for k in m.keys}
        by_author = {k for m in around if len(m.keys) == 1 and m.author for k in m.keys}
        return self._without_makers(_disambiguate(found, claimed, by_author), around)

    def _without_makers(self, ms: list[Mention], around: list[Mention]) -> list[Mention]:
        """A name another named paper's title gives in the possessive is its maker, not a
        thing of its own: "Why did Google build Spanner?" names only "Spanner: Google's
        Globally-Distributed Database", though "Google" alone names "The Google File System";
        also when the paper is named in another clause ("According to the Spanner authors,
        why did Google's applications …")."""
        def title(key: str) -> str:
            return " ".join(self.items[key].title.split()).casefold() if key in self.items else ""

        return [m for m in ms if not any(
            n is not m and set(n.keys) - set(m.keys) and any(
                re.search(rf"(?<!\w){re.escape(m.surface.casefold())}['’]s\b", title(k))
                for k in n.keys)
            for n in [*ms, *around])]  # fmt: skip

    def _find(self, text: str) -> list[Mention]:
        toks = tokens(text)
        low = _stems(w for w, _, _ in toks)
        found: list[Mention] = []
        taken: set[int] = set()
        spans: dict[tuple[int, int], set[str]] = {}
        by_author: set[tuple[int, int]] = set()
        for name in self.names:
            n = len(name.tokens)
            for i in range(len(toks) - n + 1):
                if low[i : i + n] != name.tokens:
                    continue
                word = toks[i][0]
                if name.acronym and not word.isupper():
                    continue
                if name.strict_case and not word[:1].isupper() and not (
                    name.author and _cited(text, toks[i + n - 1][2])
                ):
                    continue
                if n == 1 and word.lower() in IMPERATIVES | STOPWORDS:
                    continue
                spans.setdefault((i, i + n), set()).add(name.key)
                if name.author:
                    by_author.add((i, i + n))
        found += self._coauthors(text, toks, low, taken)  # before each name alone
        for (i, j), keys in sorted(spans.items(), key=lambda kv: (kv[0][0] - kv[0][1], kv[0])):
            if any(p in taken for p in range(i, j)):
                continue
            taken.update(range(i, j))
            found.append(Mention(i, j, text[toks[i][1] : toks[j - 1][2]], tuple(sorted(keys)),
                                 author=(i, j) in by_author))  # fmt: skip
        # A capitalised word only an abstract uses: the item that uses it most, clearly (not
        # the word opening the question: any word is capitalised there).
        for k, (w, _, _) in enumerate(toks):
            if k in taken or not w[:1].isupper() or w.lower() in IMPERATIVES | STOPWORDS:
                continue
            if k == 0 or text[toks[k - 1][2] : toks[k][1]].strip() in (".", "?", "!"):
                continue
            if _in_name_run(text, toks, k):
                continue  # "Amazon Aurora": part of a longer name, not Dynamo's "Amazon"
            by_abstract = self._by_abstract(low[k])
            if by_abstract:
                taken.add(k)
                found.append(Mention(k, k + 1, w, by_abstract, weak=True))
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
            while j < len(toks) and j not in taken:
                gap = text[toks[j - 1][2] : toks[j][1]]
                if gap in ("/", "-") and toks[j][0][:1].isalnum():
                    j += 1  # "TCP/IP", "Byzantine-tolerant": one term, never two
                    continue
                if gap.strip(" -") or not named(toks[j][0]):
                    break  # punctuation between them: two names
                j += 1
            found.append(Mention(i, j, text[toks[i][1] : toks[j - 1][2]]))
            taken.update(range(i, j))
            i = j
        found.sort(key=lambda m: m.start)
        return found


def _own_name(word: str, it: CatalogueItem, users: dict[str, set[str]]) -> bool:
    """A title's first word is the name of what the paper presents when its own text (abstract
    and introduction) writes it capitalised mid-sentence and never in lower case, and no two
    other abstracts use it ("Okapi at TREC-3": "the City University Okapi IR system").
    "Identification of …", "Attention is …" are written in lower case in their papers."""
    if len(word) < 3 or not word[:1].isupper() or word.lower() in _LEADING_STOP | _WH_START:
        return False
    text = f"{it.abstract}\n{it.intro}"
    if re.search(rf"\b{re.escape(word.lower())}\b", text):
        return False
    mid = re.findall(rf"[^.!?\n#\s]\s+{re.escape(word)}\b", text)
    return bool(mid) and len(users.get(stem(word.lower()), set()) - {it.key}) < 2


def _distinctive(word: str) -> bool:
    """CamelCase, an acronym, or a word with a digit: unlikely to be an ordinary word."""
    return bool(re.search(r"[a-z][A-Z]|[A-Z]{2}|\d", word))


def _acronym(title: str) -> str:
    words = [w for w, _, _ in tokens(title) if w.lower() not in _LEADING_STOP]
    if not 3 <= len(words) <= 6:
        return ""
    return "".join(w[0] for w in words).upper()


_SENTENCE_START_RE = re.compile(r"(?:^|[.!?:;]\s+|\n)[\"'“(]*$")


def _surname(author: str) -> str:
    """ "Last, First" or "First Last" → Last."""
    if "," in author:
        return author.split(",")[0].strip()
    words = author.split()
    return words[-1] if words else ""


def _initials(authors: tuple[str, ...]) -> str:
    """Three or four authors' initials, as a famous result is called ("FLP")."""
    if not 3 <= len(authors) <= 4:
        return ""
    names = [_surname(a) for a in authors]
    return "".join(n[:1] for n in names).upper() if all(n[:1].isalpha() for n in names) else ""


_QUOTED_NAME_RE = re.compile(
    r"\b(?:we call|our|called|named|dubbed|termed)\s+[“\"‘']"
    r"([A-Z][\w.+-]*(?:\s[\w.+-]+){0,3})[”\"’']"
)


def _quoted_names(it: CatalogueItem) -> list[list[str]]:
    """Names the paper gives its own thing in quotes ("our “MoCo v2” baselines")."""
    found = _QUOTED_NAME_RE.findall(f"{it.abstract}\n{it.intro}")
    return [ws for n in dict.fromkeys(found) if len(ws := [w for w, _, _ in tokens(n)]) >= 1]


def _abstract_names(it: CatalogueItem) -> dict[str, int]:
    """Capitalised words the abstract writes mid-sentence (or distinctive ones, "MoCo", "BERT",
    anywhere) and never in lower case, with how strongly it names each: a use counts once, a
    naming ("the Transformer", "called BERT") twice, the paper presenting it ("We present
    Momentum Contrast (MoCo)") three times; kept from two up, or from one for the title's
    first word. The introduction counts only where it presents or names its own thing ("a
    lock service called Chubby", "our method (SimCLRv2)"): it also discusses others' work."""
    counts: dict[str, int] = {}
    for text, own_only in ((it.abstract, False), (it.intro, True)):
        lower = {w.lower() for w in re.findall(r"\b[a-z][a-z0-9-]*\b", text)}
        for m in re.finditer(r"[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*", text):
            word = m.group(0)
            if len(word) < 3 or word.lower() in IMPERATIVES | STOPWORDS or word.lower() in lower:
                continue
            before = text[max(0, m.start() - 60) : m.start()]
            if _SENTENCE_START_RE.search(before[-4:]) and not _distinctive(word):
                continue  # any word opens a sentence capitalised; "MoCo", "BERT" only as names
            the = re.search(r"\bthe\s+$", before, re.I)
            naming = re.search(r"\b(?:called|named|dubbed|termed)\s+$|\b(?:our|this)\s+(?:"
                               r"system|method|model|algorithm|approach|framework|protocol|"
                               r"service|tool)\s+\($", before, re.I)  # fmt: skip
            presents = re.search(r"\bwe (?:present|introduce|propose|describe|develop)\b[^.]*$",
                                 before, re.I)  # fmt: skip
            if own_only and not (naming or presents):
                continue
            weight = 3 if presents or (own_only and naming) else 2 if naming or the else 1
            counts[word] = counts.get(word, 0) + weight
    first = _first_word(it.title)
    return {w: n for w, n in counts.items() if n >= 2 or w == first}


def _in_name_run(text: str, toks: list[tuple[str, int, int]], k: int) -> bool:
    """Whether token `k` stands next to another capitalised word, only a space between."""
    for j in (k - 1, k + 1):
        if 0 <= j < len(toks) and toks[j][0][:1].isupper() and toks[j][0].lower() not in STOPWORDS:
            a, b = sorted((j, k))
            if not text[toks[a][2] : toks[b][1]].strip():
                return True
    return False


def _first_word(title: str) -> str:
    words = [w for w, _, _ in tokens(title)]
    while words and words[0].lower() in ("a", "an", "the"):
        words = words[1:]
    return words[0] if words else ""


_CITED_RE = re.compile(r"(?:['’]s\b|\s+et\.?\s+al\b)")


def _cited(text: str, end: int) -> bool:
    """A surname typed in lower case is still one where it is cited as a paper: "eddy's
    model", "jacot et al"; alone ("a peer", "the page") it is the word."""
    return bool(_CITED_RE.match(text, end))


def _casual_pair(text: str, toks: list[tuple[str, int, int]], i: int) -> bool:
    """Lower-case co-authors joined and cited ("smith and waterman's", "page and brin"):
    the pair is checked against one item's creators like capitalised ones."""
    return (i + 2 < len(toks) and toks[i + 1][0] in ("and", "&")
            and toks[i][0].islower() and toks[i + 2][0].islower())  # fmt: skip


def _disambiguate(mentions: list[Mention], claimed: set[str], by_author: set[str]
                  ) -> list[Mention]:  # fmt: skip
    """A name two items share ("de Bruijn graphs") names the one its authors' names claim
    ("the de Bruijn graph primer by Compeau, Pevzner and Tesler"), else the one no other name
    claims ("the de Bruijn graph primer … with what Velvet reports"); an author of several
    papers, the one another name claims ("van Renesse's Paxos Made Moderately Complex")."""
    out = []
    for m in mentions:
        if len(m.keys) > 1:
            rest = tuple(k for k in m.keys if (k in claimed) is m.author)
            if not m.author and set(m.keys) & by_author:
                rest = tuple(k for k in m.keys if k in by_author)
            if rest:
                m = dataclasses.replace(m, keys=rest)
        out.append(m)
    return out


def papers_named(mentions: Sequence[Mention]) -> list[Mention]:
    """The mentions that name a paper of the library: not a word several papers' abstracts
    share ("ImageNet"), and not a word only an abstract uses ("BLEU", "WMT") beside a paper
    named by its own name ("What BLEU score does BERT get …"): that is what it is asked."""
    found = [m for m in mentions if m.keys and not m.shared_word]
    if any(not m.weak or m.author for m in found):
        found = [m for m in found if not m.weak or m.author]
    return found


def resolve_names(text: str, catalogue: Catalogue) -> list[tuple[str, ...]]:
    """The library items each named thing of `text` stands for (names it lacks left out)."""
    return [m.keys for m in catalogue.mentions(text) if m.keys]


__all__ = [
    "IMPERATIVES",
    "Catalogue",
    "CatalogueItem",
    "Mention",
    "papers_named",
    "resolve_names",
    "tokens",
]
