"""The library's own topics, and the example questions the empty panel offers from them.

A topic is a phrase that several papers speak of and that at least one names in its title, a
section heading or a tag ("leader election", "genome assembly", "contrastive learning"). Phrases
come from the catalogue only (titles, abstracts, tags, the section headings of the chunks), so
nothing is embedded and no paper text beyond abstracts is read (0.3 s for the 37-paper test
corpus, at load 6 on 2 cores; most of it Porter stemming). Site and publisher names ("Google",
"arXiv"), reading-list tags ("to-read") and words every paper uses ("results") are never topics.

The questions are cached per index generation next to the catalogue (`index/topics.json`), so a
panel reads them at once; a panel without them computes them in the background.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from zocrates_nb.text import STOPWORDS, split_sentences, stem

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index

CACHE_FILE = "topics.json"
CACHE_VERSION = 1
MAX_QUESTIONS = 3
MAX_ABSTRACT = 2000  # characters of an abstract read for phrases
MAX_SHORT_TITLE = 60
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-'’][A-Za-z0-9]+)*")
_BREAK = re.compile(r"[.,;:!?()\[\]{}\"“”/|•–—]+|\s-\s")  # phrases never cross these
_NUMBERING = re.compile(r"^\s*(?:(?:appendix|section|chapter)\s+)?(?:[0-9IVXivx]+|[A-Z])?"
                        r"(?:[.)][0-9A-Za-z]*)*[.)]?\s+")
# Words every paper uses: a phrase made only of these names no topic.
_GENERIC_TEXT = """
abstract introduction conclusion conclusions discussion background overview related work works
results result experiments experiment experimental evaluation evaluations analysis analyses
method methods methodology approach approaches design implementation appendix references
acknowledgements acknowledgments acknowledgement summary motivation preliminaries preliminary
setup set settings setting limitations limitation future proof proofs theorem lemma definition
definitions section figure figures table tables example examples paper papers article study
studies problem problems model models system systems algorithm algorithms data performance
framework technique techniques application applications case cases number numbers time way ways
process structure part parts simple efficient fast large scale high low based general improved
practical first second third main key important different various several many much well good
better best large-scale effective effectively method's notes note remarks concluding details
detail other others further additional supplementary materials material contributions
contribution goals goal problem statement terminology notation overview state art comparison
categories category descriptors descriptor keywords keyword terms term general novel non
"""
# Sites, publishers and reading-list words: never a topic (tags like "google" or "to-read").
_JUNK_TEXT = """
google amazon microsoft facebook meta apple ibm twitter github gitlab arxiv biorxiv medrxiv ssrn
researchgate academia jstor doi org com www http https html pdf ieee acm springer elsevier wiley
sciencedirect wikipedia youtube zotero pubmed ncbi preprint preprints proceedings journal
conference vol volume pp press university inc ltd copyright license rights reserved author
authors et al classic classics to-read toread read unread todo to-do important favorite
favourite favorites imported reviewed review later starred misc miscellaneous subject
descriptor keywords
"""
GENERIC = frozenset(_GENERIC_TEXT.split())
STOP = STOPWORDS | {"one", "two", "three", "four", "five", "new", "first", "second", "third"}
JUNK = frozenset(_JUNK_TEXT.split())


@dataclass(frozen=True)
class Topic:
    """A phrase several papers speak of, as shown ("de Bruijn graphs"), and which papers."""

    phrase: str
    items: frozenset[str]
    score: float
    tagged: bool = False  # a tag of the researcher's names it


@dataclass
class Paper:
    """A paper as its topics are read: the catalogue's title, year, abstract, tags, headings."""

    key: str
    title: str
    year: int
    abstract: str = ""
    tags: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------- public
def example_questions(index: Index) -> list[str]:
    """Up to three example questions drawn from the library's topics (cached per generation)."""
    cached = cached_example_questions(index)
    if cached is not None:
        return cached
    generation = index.catalog.generation()
    questions = questions_for(papers_of(index))
    _write_cache(index, generation, questions)
    return questions


def cached_example_questions(index: Index) -> list[str] | None:
    """The cached questions of the index's current generation, or None (never computes)."""
    try:
        data = json.loads((index.index_dir / CACHE_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != CACHE_VERSION:
        return None
    if data.get("generation") != index.catalog.generation():
        return None
    questions = data.get("questions")
    if not isinstance(questions, list) or not all(isinstance(q, str) for q in questions):
        return None
    return [q[:300] for q in questions[:MAX_QUESTIONS]]


def library_topics(index: Index, limit: int = 10) -> list[Topic]:
    """The library's topics, best first (see the module docstring)."""
    papers = papers_of(index)
    return _topics(papers, _CaseTable(papers), limit)


def questions_for(papers: list[Paper]) -> list[str]:
    """The example questions of these papers (`suggestions_for` without their papers)."""
    return [question for question, _ in suggestions_for(papers)]


def suggestions_for(papers: list[Paper]) -> list[tuple[str, frozenset[str]]]:
    """The example questions of these papers, each with the papers it was drawn from (what its
    answer should cite): a topic several papers share (how they differ), one paper's section
    (what it says), a second, unrelated topic; more sections of other papers where the library
    shares too few phrases (a single shared word is no topic unless tagged)."""
    case = _CaseTable(papers)
    topics = [t for t in _topics(papers, case, limit=12) if " " in t.phrase or t.tagged]
    topics.sort(key=lambda t: " " not in t.phrase)  # phrases before single words ("learning")
    first = topics[0] if topics else None
    # The second topic is another subject: other papers, other words.
    second = next((t for t in topics[1:] if first and len(t.items & first.items) * 2 <=
                   len(t.items) and not _shares_words(t.phrase, first.phrase)), None)
    chosen = [t for t in (first, second) if t is not None]
    sections: list[tuple[str, frozenset[str]]] = []
    asked: set[str] = set()  # papers a section question is about
    while len(sections) < MAX_QUESTIONS:  # on other papers and other words than the topics
        avoid = asked.union(*(t.items for t in chosen))
        key, question = _section_question(papers, case, avoid=avoid, skip=asked,
                                          taken=" ".join(t.phrase for t in chosen))
        if not question:
            break
        asked.add(key)
        sections.append((question, frozenset({key})))
    ordered = [
        (f"How do my papers approach {first.phrase}, and where do they differ?", first.items)
        if first else None,
        sections[0] if sections else None,
        (f"What do my papers say about {second.phrase}, and do they agree?", second.items)
        if second else None,
        *sections[1:],
    ]
    suggestions = [s for s in ordered if s is not None]
    if not suggestions:  # no headings and no shared phrase: the newest paper
        titled = sorted((p for p in papers if p.title), key=lambda p: (-p.year, p.title))
        if titled:
            suggestions.append((f"What problem does “{_short_title(titled[0].title, 70)}” "
                                "address, and how?", frozenset({titled[0].key})))
    return suggestions[:MAX_QUESTIONS]


# ---------------------------------------------------------------------------- reading
def papers_of(index: Index) -> list[Paper]:
    """The regular items with their abstract, tags and section headings (catalogue only)."""
    papers = {i.key: Paper(i.key, i.title, i.year or 0, i.abstract[:MAX_ABSTRACT], list(i.tags))
              for i in index.items() if i.item_type not in ("note", "attachment")}  # fmt: skip
    for row in index.catalog.query("SELECT DISTINCT item_key, section FROM chunks "
                                   "WHERE chunk_type = 'body' AND section != ''"):
        if (paper := papers.get(str(row["item_key"]))) is not None:
            paper.headings.append(str(row["section"]))
    missing = [p.key for p in papers.values() if not p.abstract]
    for start in range(0, len(missing), 500):  # no abstract in the catalogue: the paper's own
        keys = missing[start:start + 500]
        for row in index.catalog.query(
            "SELECT item_key, substr(text, 1, ?) AS text FROM chunks WHERE chunk_type = "
            f"'abstract' AND item_key IN ({','.join('?' * len(keys))}) GROUP BY item_key",
            (MAX_ABSTRACT, *keys)):  # fmt: skip
            papers[str(row["item_key"])].abstract = str(row["text"])
    return list(papers.values())


# ---------------------------------------------------------------------------- phrases
def _words(text: str) -> list[list[str]]:
    """The runs of words between punctuation."""
    return [_WORD.findall(part) for part in _BREAK.split(text)]


@functools.lru_cache(maxsize=65536)
def _key(word: str) -> str:
    """A word's counting form: Porter's stem ("graphs", "graph" → "graph")."""
    return stem(word.lower().replace("’", "'"))


def _candidate(words: list[str]) -> bool:
    lows = [w.lower() for w in words]
    if lows[0] in STOP or lows[-1] in STOP:
        return False
    if any(w in STOP and w != "of" for w in lows[1:-1]):
        return False
    if any(w in JUNK or _key(w) in JUNK for w in lows):
        return False
    if all(w in GENERIC or _key(w) in GENERIC or w in STOP for w in lows):
        return False
    if len(words) == 1 and (len(words[0]) < 4 or lows[0] in GENERIC):
        return False
    return not any(w.isdigit() or len(w) < 2 for w in lows)


def _ngrams(text: str, n_max: int = 3) -> Iterable[tuple[str, list[str]]]:
    for run in _words(text):
        for n in range(1, n_max + 1):
            for i in range(len(run) - n + 1):
                words = run[i:i + n]
                if _candidate(words):
                    yield " ".join(_key(w) for w in words), words


class _CaseTable:
    """How each word is written inside sentences and headings (not first): "Paxos", "BLAST",
    "de Bruijn" keep their capitals; "Leader Election" of a title becomes "leader election"."""

    def __init__(self, papers: list[Paper]) -> None:
        forms: dict[str, Counter[str]] = defaultdict(Counter)
        for p in papers:
            for text in (p.abstract, p.title, *p.headings):
                for sentence in split_sentences(text):
                    words = _WORD.findall(sentence)[1:]
                    # Title case ("The Google File System") says nothing of how a word is
                    # written; sentence case ("How to apply de Bruijn graphs to …") does.
                    if sum(w[0].isupper() for w in words) * 2 > len(words):
                        continue
                    for word in words:
                        forms[word.lower()][word] += 1
        self.forms = forms

    def word(self, word: str) -> str:
        parts = re.split(r"[-'’]", word)
        if any(c.isupper() for p in parts for c in p[1:]) or any(c.isdigit() for c in word):
            return word  # BM25, MapReduce, TW-IDF: written as is
        seen = self.forms.get(word.lower(), Counter())
        form, count = seen.most_common(1)[0] if seen else (word, 0)
        if count >= 2 or (count and form == word.lower()):
            return form
        return word if word.isupper() and len(word) <= 5 else word.lower()

    def phrase(self, words: list[str]) -> str:
        return " ".join(self.word(w) for w in words)


def _topics(papers: list[Paper], case: _CaseTable, limit: int) -> list[Topic]:
    items: dict[str, set[str]] = defaultdict(set)
    named: dict[str, set[str]] = defaultdict(set)  # in a title, heading or tag
    tagged: set[str] = set()
    surface: dict[str, Counter[str]] = defaultdict(Counter)
    for p in papers:
        headings = [_NUMBERING.sub("", h) for h in p.headings]
        for source, texts in (("name", [p.title, *headings]), ("tag", p.tags),
                              ("text", [p.abstract])):  # fmt: skip
            for text in texts:
                for key, words in _ngrams(text):
                    items[key].add(p.key)
                    if source != "text":
                        named[key].add(p.key)
                    if source == "tag":  # the researcher's own wording comes first
                        tagged.add(key)
                    surface[key][case.phrase(words)] += 100 if source == "tag" else 1
    most = max(2, int(0.6 * len(papers)))  # a phrase in most papers names no topic
    scored = []
    for key, keys in items.items():
        if not named[key] or not 2 <= len(keys) <= most:
            continue
        n = key.count(" ") + 1  # a single word is rarely a topic on its own ("training")
        score = len(keys) * (0.5, 1.6, 2.2)[n - 1] * (1.5 if key in tagged else 1.0) \
            + 0.5 * len(named[key])
        scored.append((score, key))
    scored.sort(key=lambda s: (-s[0], s[1]))
    keys = {key for _, key in scored}
    chosen: list[Topic] = []
    for score, key in scored:
        # A part of a longer phrase that most of its papers use adds nothing ("Bruijn graph").
        if any(_part_of(longer, key) and len(items[longer]) * 3 >= len(items[key]) * 2
               for longer in _longer(key, keys)):
            continue
        chosen.append(Topic(surface[key].most_common(1)[0][0], frozenset(items[key]),
                            round(score, 3), key in tagged))
        if len(chosen) >= limit:
            break
    return chosen


def _longer(key: str, keys: set[str]) -> Iterable[str]:
    words = key.split()
    return (k for k in keys if len(k) > len(key) and all(w in k.split() for w in words))


def _part_of(longer: str, shorter: str) -> bool:
    return f" {shorter} " in f" {longer} "


def _shares_words(a: str, b: str) -> bool:
    def content(phrase: str) -> set[str]:
        return {_key(w) for w in phrase.split() if w.lower() not in STOP}

    return bool(content(a) & content(b))


# ---------------------------------------------------------------------------- one paper
def _section_question(
    papers: list[Paper], case: _CaseTable, avoid: set[str], skip: set[str], taken: str = ""
) -> tuple[str, str]:
    """ "What does “Raft” say about leader election?": a section heading of its own (not
    "Introduction") whose words its abstract or title also uses, from a paper not `avoid`ed;
    a heading of two to five words names an aspect best, so it goes before a single word. No
    word of `taken` (the topics asked about) again. Returns (the paper's key, the question),
    or ("", "")."""
    best: tuple[tuple[bool, bool, bool, int, str], str, str] | None = None
    for p in papers:
        title = _short_title(p.title)
        if not title or p.key in skip:
            continue
        about = {_key(w) for w in _WORD.findall(f"{p.title} {p.abstract}")}
        named = {_key(w) for w in _WORD.findall(title)}
        for heading in p.headings:
            words = _WORD.findall(_NUMBERING.sub("", heading))
            if not 1 <= len(words) <= 5 or not _candidate(words) or \
                    _shares_words(" ".join(words), taken):
                continue
            content = {_key(w) for w in words if w.lower() not in STOP}
            if not content <= about or content & named:
                continue  # off the paper's subject, or its name again ("Pre-training BERT")
            aspect = case.phrase(words)
            # A common-noun aspect ("leader election") asks more than a name ("SQuAD v1").
            named_thing = aspect != aspect.lower() or any(c.isdigit() for c in aspect)
            rank = (p.key in avoid, named_thing, len(words) == 1, -p.year, p.title)
            if best is None or rank < best[0]:
                best = (rank, p.key, f"What does “{title}” say about {aspect}?")
    return (best[1], best[2]) if best else ("", "")


def _short_title(title: str, limit: int = MAX_SHORT_TITLE) -> str:
    """A title as a question names it: the part before a colon when that is a name
    ("Velvet: Algorithms for …" → "Velvet"); "" when too long to read in a question."""
    title = " ".join(title.split()).rstrip(".")
    head, sep, _ = title.partition(": ")
    if sep and 1 <= len(head.split()) <= 3:
        return head
    return title if len(title) <= limit else ""


# ---------------------------------------------------------------------------- cache
def _write_cache(index: Index, generation: str | None, questions: list[str]) -> None:
    """Best effort: a read-only data home simply computes again next time."""
    path = index.index_dir / CACHE_FILE
    tmp = path.with_name(f".{CACHE_FILE}.{os.getpid()}.tmp")
    data = {"version": CACHE_VERSION, "generation": generation, "questions": questions}
    with contextlib.suppress(OSError):
        tmp.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
        os.replace(tmp, path)
    with contextlib.suppress(OSError):
        tmp.unlink(missing_ok=True)


__all__ = [
    "Paper",
    "Topic",
    "cached_example_questions",
    "example_questions",
    "library_topics",
    "papers_of",
    "questions_for",
    "suggestions_for",
]
