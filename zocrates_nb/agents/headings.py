"""A part's heading: the name of what it is about and, where the question has one, the clean
span of its own words that says what is asked of it ("Raft: elect a new leader after the old one
fails"), never words glued or conjugated into a phrase the question does not hold."""

from __future__ import annotations

import re

from zocrates_nb.text import terms


def sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text.strip()) if s.strip()]


def short_title(title: str) -> str:
    """A title as a heading names it: its head before a colon, else the whole title."""
    head = re.split(r"\s*(?::|—|–|\s-\s)\s*", title.strip(), maxsplit=1)[0]
    return head if len(head.split()) <= 8 else " ".join(head.split()[:8]) + "…"


def casual_form(surface: str, name: str) -> bool:
    """`surface` is another form of the library's `name` ("weight-normalized" of "Weight
    Normalization"): the same words, written otherwise."""
    loose = terms(surface.replace("-", " "))
    same = bool(loose) and loose == terms(name.replace("-", " "))
    return same and surface.lower() != name.lower()


HEADING_WORDS = 12
# The rest of a reference to an author's paper by its first author: "Vaswani et al.'s model",
# "Altschul and colleagues' tool". Part of the name, never of what is asked.
COLLEAGUES = (r"(?:\s+et\s+al\.?|\s+and\s+(?:colleagues|co-?authors|co-?workers|"
              r"collaborators)\b)?")
_POSSESSIVE = r"(?:['’]s\b|['’](?=\s))?"  # "Dynamo's", "colleagues'"
AUX_WORDS = frozenset([
    "does", "do", "did", "can", "could", "would", "will", "should", "is", "are", "was", "were",
    "has", "have", "had", "the", "a", "an", "in", "of", "on", "for", "by", "to", "from", "at",
    "with", "paper", "papers", "its", "their", "according",
])  # fmt: skip
WH_WORDS = frozenset([
    "how", "what", "which", "why", "when", "where", "who", "whom", "whose", "whether",
])  # fmt: skip
_COMPARING_TAIL_RE = re.compile(
    r"\s+(?:differs?|compares?|compared|contrasts?|versus|vs\.?|unlike|whereas|than|relative\s+to"
    r"|(?:for|in) (?:each|both|all) of (?:them|the two|these|those)|for each|respectively"
    r")\b.*$", re.I)  # fmt: skip
_SAYING_RE = re.compile(r"^(?:says?|said|writes?|wrote|reports?|claims?|states?|tells? us)\s+"
                        r"(?:about|on|regarding|of|that)?\s*", re.I)  # fmt: skip


def aspect_span(text: str, subject: str) -> str:
    """The words of `text` that say what it asks of `subject`, as the question writes them
    ("" when it has none: "Compare Raft with Zab"): what a question word asks for ("which hash
    function", "who assigns the timestamps"), else what follows the name ("elect a leader"),
    else what comes before it ("how are read-only operations handled")."""
    m = re.search(rf"(?<![\w-]){re.escape(subject)}(?![\w-])", text, re.I)
    if m is None:
        return ""
    differ = re.search(r"\bdiff(?:er|ers|erent)\s+(?:in|on|with respect to|regarding)\s+(.+)$",
                       text[m.end():], re.I)  # fmt: skip
    if differ:
        return clip(differ.group(1))
    before = text[: m.start()].split()
    while before and before[-1].lower().strip(",") in AUX_WORDS:
        before.pop()
    while before and before[0].lower().strip(",") in ("in", "for", "of", "compare", "and"):
        before.pop(0)
    lead = next((i for i, w in enumerate(before[:3]) if w.lower() in WH_WORDS), 0)
    if lead and not any(w.lower() in AUX_WORDS for w in before[:lead]):
        before = before[lead:]  # "Roughly how many iterations …": from its question word
    content = [w for w in before if w.lower().strip(",") not in WH_WORDS | AUX_WORDS]
    joined = text[: m.start()].split()[-1:] == before[-1:]  # "monthly CRAN downloads"
    asked = (len(before) >= 2 and not joined and before[0].lower() in WH_WORDS
             and before[1].lower() not in AUX_WORDS | WH_WORDS)  # fmt: skip
    rest = _after(text[m.end():])
    if asked:  # "Which hash function does Dynamo use?": what the question word asks for
        if len(before) == 2 and rest[:1].isalpha() and len(rest.split()) >= 2:
            # "how much" says too little: "how much … gain from adopting MoCo's memory"
            return clip(f"{' '.join(before).strip(' ,')} … {rest}")
        return clip(" ".join(before).strip(" ,"))
    after = rest
    words = after.split()
    appositive = text[m.end():].lstrip().startswith(",") and content
    if not appositive and (len(words) >= 2 or (words and not before)):
        return clip(after)
    if not content or len(before) < 2:
        return ""  # "What does Spanner add?": the name says it
    return clip(" ".join(before).strip(" ,"))


def _after(tail: str) -> str:
    """What the question asks after the name, without its possessive, "et al." and the words
    that only compare ("… differs from Zab's")."""
    after = re.sub(rf"^{COLLEAGUES}{_POSSESSIVE}\s+(?:[\w-]+,?\s+){{1,3}}?(?=(?:how|what|which|"
                   r"why|when|where|who)\b)", "", tail, flags=re.I)  # "X's method how …"
    after = re.sub(rf"^{COLLEAGUES}{_POSSESSIVE}\s*(?:papers?\b)?\s*(?:(?:each|both)\b)?[\s,]*", "",
                   after)  # fmt: skip
    after = re.sub(r"^(?:both|each|respectively)\s+", "", _SAYING_RE.sub("", after))
    return _COMPARING_TAIL_RE.sub("", after) if not after.lower().startswith(
        ("and ", "or ", "with ", "as ")) else ""  # fmt: skip


def capital(subject: str) -> str:
    return subject[:1].upper() + subject[1:]


def clip(text: str) -> str:
    # One sentence: "rely on a recurrence over a matrix. What do they each compute…" glues two.
    text = (sentences(text) or [""])[0].rstrip(".!?")
    words = text.strip(" ,:;").split()
    while len(words) > 1 and words[-1].lower() in AUX_WORDS:
        words.pop()  # "the distillation step for" ends at "step"
    text = " ".join(words)
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


__all__ = [
    "AUX_WORDS", "COLLEAGUES", "WH_WORDS", "aspect_span", "capital", "clip", "sentences",
    "short_title",
]  # fmt: skip
