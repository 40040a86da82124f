"""Questions that ask for a number, and sentences that give the kind of number asked for.

"How many TPU-hours …" is not answered by "350 epochs", nor "how many milliseconds …" by "14
possible paths": a number is the answer only when it counts what was asked (its unit, or the
noun counted, stands beside it). Money asks for an amount, a share for a percentage.
"""

from __future__ import annotations

import functools
import re

from zocrates_nb.text import STOPWORDS

# Metrics asked for by their acronym, in their own case ("what map function" asks no number).
_METRICS = r"AP|mAP|BLEU|F1|AUC"
_METRIC_RE = re.compile(rf"\b({_METRICS})\b")
# A question asking for a number: "how many/much/long …", or "what/which …" asking for a
# share, size, rate, value of something. The noun alone asks nothing: "which value was
# chosen", "old spent transactions", "what does the simple way cost" ask no figure.
_QUANTITY_NOUNS = (
    r"(?:rate|percentage|percent|proportion|fraction|share|ratio|size|number|amount|count|"
    r"coefficient|factor|dimension(?:ality)?|threshold|length|duration|depth|width|price|budget|"
    r"speed|latency|throughput|accuracy|score|error|fee|salary|wage|precision|recall|"
    rf"perplexity|top-[15]|(?-i:{_METRICS}))s?"
)
_QUANTITY_RE = re.compile(
    r"\bhow (?:many|much|long|large|big|small|often|fast|slow|far|deep|wide|high|low)\b|"
    rf"\b(?:what|which|whose)\s+(?:[\w/-]+\s+){{0,3}}?{_QUANTITY_NOUNS}\b|"
    r"\b(?:what|which)\s+(?:[\w/-]+\s+){0,2}?values?\s+(?:of|for|did|do|does|is|are)\b|"
    r"\bby how much\b|\b(?:what|which)\b.*\bestimates?\b",
    re.I,
)
# A number that states something: not a year, nor a pointer to a section, figure or table.
_QUANTITY_IN_TEXT_RE = re.compile(
    r"(?<![\w.])(?!(?:1[89]|20)\d\d[a-z]?\b)\d[\d,.]*(\s?%|\b)|"
    r"\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|fifty|a hundred|"
    r"one hundred|half|twice|double|triple)\b",
    re.I,
)
_POINTER_RE = re.compile(
    r"(?:\b(?:section|sec\.|table|figure|fig\.|eq\.|equation|appendix)|§)\s*[A-Z]?\d[\d.]*|"
    r"(?<![\w.])\(?\d{1,2}\)",  # an item of a list ("2) Each node …", "(3)") counts nothing
    re.I,
)
_MONEY_RE = re.compile(
    r"\b(price[sd]?|cost[s]?|fees?|paid|pay|bill|budget|spend|spent|dollars?|salary|expenses?|"
    r"money)\b",
    re.I,
)
_AMOUNT_RE = re.compile(r"[$€£¥]\s?\d|\b\d[\d,.]*\s?(dollars|cents|usd|eur|euros|btc|bitcoins?|"
                        r"coins?)\b|\bdollars?\b",
                        re.I)  # fmt: skip


def states_quantity(sentence: str) -> bool:
    return bool(_QUANTITY_IN_TEXT_RE.search(_POINTER_RE.sub(" ", sentence)))


def asks_quantity(question: str) -> bool:
    """The question asks for a number ("how many", "what share of", "which value of")."""
    return bool(_QUANTITY_RE.search(question))


def gives_quantity(question: str, sentence: str) -> bool:
    """The sentence states the kind of number asked for: an amount of money for a price, a
    share (a percentage or a fraction) for an accuracy or a share, else any number that is
    not a year or a pointer ("twelve hours" or "0.9 BLEU" is no accuracy); for "how many
    milliseconds" a number of a time unit, for "how many GPUs" a number of GPUs."""
    if _MONEY_RE.search(question):
        return bool(_AMOUNT_RE.search(sentence))
    if _SHARE_ASKED_RE.search(question):
        return bool(_SHARE_RE.search(_POINTER_RE.sub(" ", sentence)))
    counted = counted_unit(question)
    if counted:
        return counts(sentence, counted)
    metrics = _METRIC_RE.findall(question)  # "What mask AP …": a number beside "AP"
    if metrics:
        return counts(sentence, (frozenset(m.lower() for m in metrics),))
    return states_quantity(sentence)


# Questions for a share and the numbers that state one: "77.6%", "12 of the 15".
_SHARE_ASKED_RE = re.compile(
    r"\b(?:percentage|percent|proportion|fraction|share|accuracy|accuracies)\b", re.I
)
_SHARE_RE = re.compile(r"\d\s?%|\bper\s?cent\b|\b\d+\s+(?:out\s+)?of\s+(?:the\s+)?\d+\b", re.I)


# "how many <counted> …": the word(s) counted, up to the verb or a function word.
_COUNTED_RE = re.compile(
    r"\b(?:how (?:many|much)|(?:what|which) (?:is|was|were|are) the (?:\w+ )?(?:number|count) "
    r"of)((?:\s+[A-Za-z][\w-]*){1,4})",
    re.I,
)
_NOT_COUNTED = frozenset(
    """of do does did is are was were can could would should will have has had the a an more
    less fewer times than in on at to for by per""".split()  # noqa: SIM905
)
# Units of one kind answer for each other ("how many hours" → "three days"); what a unit
# measures is asked with it ("how much memory" → "1 GB").
_TIME = """ms msec millisecond microsecond us ns nanosecond second sec s minute min hour hr h day
week month year""".split()  # noqa: SIM905
_SIZE = """byte b kb mb gb tb kib mib gib tib kilobyte megabyte gigabyte terabyte bit memory ram
storage disk space""".split()  # noqa: SIM905
_UNIT_FAMILIES = (frozenset(_TIME), frozenset(_SIZE))
# Units that are also words or letters ("lets us", "Jacot's", "h = 8", "the second principal
# component"): only right after a number.
_SHORT_UNITS = frozenset({"s", "h", "us", "b", "ms", "ns", "min", "sec", "hr", "second"})
_NEAR = 6  # words between a number and the unit or noun it counts


def _stem(word: str) -> str:
    """The singular of a counted noun ("copies" → "copy", "boxes" → "box", "lines" → "line")."""
    w = word.lower()
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if re.search(r"(?:s|x|z|ch|sh)es$", w):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss") and len(w) > 2:
        return w[:-1]
    return w


def _unit_words(word: str) -> frozenset[str]:
    stem = _stem(word)
    for family in _UNIT_FAMILIES:
        if stem in family:
            return family
    return frozenset({stem})


@functools.lru_cache(maxsize=256)  # asked once per candidate sentence of a turn
def counted_unit(question: str) -> tuple[frozenset[str], ...]:
    """The unit "how many …" ("what is the number of …") counts in: one set of acceptable
    words per part ("TPU-hours" → {tpu} and {hour, day, …}); empty when it counts no unit
    ("how many of those", "how many copies")."""
    m = _COUNTED_RE.search(question)
    words: list[str] = []
    for w in m.group(1).split() if m else []:
        if w.lower() in ("or", "and"):
            continue  # "servers or copies": either counts
        if w.lower() in _NOT_COUNTED or len(words) == 2:
            break
        words.append(w)
    if len(words) == 1 and "-" in words[0].strip("-"):
        parts = tuple(_unit_words(p) for p in words[0].split("-") if p)
    else:
        parts = (frozenset().union(*(_unit_words(w) for w in words)),) if words else ()
    # Only a unit is checked ("milliseconds", "TPU-hours", "memory"): a counted noun has
    # synonyms no list holds ("copies" are "three replicas"), and saying "your papers do not
    # give this" of a figure they give is worse than quoting a loose number.
    return parts if any(len(p) > 1 for p in parts) else ()


_MEASURE_RE = re.compile(
    rf"\b(?:what|which|whose)\s+((?:[\w./-]+\s+){{0,3}}?{_QUANTITY_NOUNS})\b", re.I
)


def measure(question: str) -> list[str]:
    """What a number asked for measures, where a paper reporting it must use the same words:
    a counted "X of Y" as its phrase ("How many lines of code …"), a word a number defines
    ("percentile" of "What 99th-percentile read latency …", "shot" of "5-way 1-shot
    accuracy"). Other words naming it are the researcher's ("neighborhood-word threshold",
    "how much downtime"): the paper may say it otherwise."""
    m = _COUNTED_RE.search(question)
    if m:
        words = m.group(1).split()
        if len(words) >= 3 and words[1].lower() == "of" and words[2].lower() not in _NOT_COUNTED:
            return [" ".join(w.lower() for w in words[:3])]
        return []
    w = _MEASURE_RE.search(question)
    span = w.group(1).split() if w else []
    out: list[str] = []
    for i, s in enumerate(span):
        if re.search(r"\d", s):  # "99th-percentile"; "99.9th percentile": the next word
            words = re.findall(r"[A-Za-z]{3,}", s)
            out += words or re.findall(r"[A-Za-z]{3,}", " ".join(span[i + 1 : i + 2]))
    out = [t.lower() for t in out]
    return [t for t in dict.fromkeys(out) if t not in STOPWORDS]


def asks_only_count(question: str) -> bool:
    """A question that asks nothing but how many of something ("How many lines of code is the
    server?"): only a number of that thing answers it, however close other sentences come.
    What the question asks is read from "how many" on: a sentence before it sets the scene
    ("Salimans and Kingma say … How many seconds per epoch …")."""
    m = _COUNTED_RE.search(question)
    if m is None or not counted_unit(question):
        return False
    asked = question[m.start() :]
    return not re.search(r"\b(?:and|why|whether|how (?!many|much)\w+)\b", asked, re.I)


def counts(sentence: str, counted: tuple[frozenset[str], ...]) -> bool:
    """Whether a number in the sentence stands within a few words of every part of the unit."""
    text = _POINTER_RE.sub(" ", sentence)
    tokens = re.findall(r"[A-Za-z]+|\d[\d,.]*", text)
    stems = [_stem(t) for t in tokens]
    for i, tok in enumerate(tokens):
        if not _QUANTITY_IN_TEXT_RE.fullmatch(tok) and not tok[0].isdigit():
            continue
        if tok[0].isdigit() and re.fullmatch(r"(?:1[89]|20)\d\d", tok):
            continue  # a year
        near = {w for w in stems[max(0, i - _NEAR) : i + _NEAR + 1] if w not in _SHORT_UNITS}
        near |= set(stems[i + 1 : i + 2])  # "2 s", "5 h": a short unit right after its number
        if all(part & near for part in counted):
            return True
    return False


# "Which window size did they settle on?", "What value of b was used?": a value the authors
# chose, answered by the sentence stating their choice ("we set it to 4", "T = 17 is a good
# choice", "the common configuration is (3,2,2)"), not one mentioning another value in passing.
_ASKS_CHOICE_RE = re.compile(
    r"\b(?:uses?|used|using|chose|choose|chosen|settled?|settles|pick(?:ed|s)?|set|"
    r"select(?:ed|s)?|recommend(?:ed|s)?|defaults?|typical(?:ly)?|usually|best|optimal)\b",
    re.I,
)
_STATES_CHOICE_RE = re.compile(
    r"\b(?:we|they|it|which|was|were|is|are)\s+(?:\w+\s+){0,2}?(?:set|sets|use|used|uses|chose|"
    r"take|took|fixed|select(?:ed)?|recommend|found|find|settled)\b|\b(?:default|typically|"
    r"usually|optimal|best|good choice|common)\b",
    re.I,
)


def asks_choice(question: str) -> bool:
    """The question asks for a value the authors chose or usually use."""
    return asks_quantity(question) and bool(_ASKS_CHOICE_RE.search(question))


def states_choice(sentence: str) -> bool:
    """The sentence states a value as chosen, found best or usual."""
    return bool(_STATES_CHOICE_RE.search(sentence)) and states_quantity(sentence)


__all__ = [
    "asks_choice",
    "asks_only_count",
    "asks_quantity",
    "counted_unit",
    "counts",
    "gives_quantity",
    "measure",
    "states_choice",
    "states_quantity",
]
