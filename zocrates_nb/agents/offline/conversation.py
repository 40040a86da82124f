"""Questions about the conversation itself ("what was my first question?", "summarize what we
discussed", "what did we conclude about Paxos?"), answered from its turns as the session
recorded them: every turn, however long ago and whatever compaction did to the model's history.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from zocrates_nb.agents.offline.brief import PastTurn
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.text import STOPWORDS, mentions, split_sentences

_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4, "sixth": 5,
             "seventh": 6, "eighth": 7, "ninth": 8, "tenth": 9}  # fmt: skip
_ORDINAL_RE = re.compile(
    r"\b(?:my|the|your)\s+(" + "|".join(_ORDINALS) + r"|last|previous|earlier|latest)\s+"
    r"(question|query|answer|reply)\b",
    re.I,
)
_CONVERSATION_RE = re.compile(
    r"\bwhat (was|were|is|did) (my|i|you)\b.*\b(ask|asked|question|questions|answer|answered|"
    r"say|said|reply|replied)\b|"
    r"\bwhat (have|did) (we|i|you) (discuss|discussed|talk|talked|cover|covered|conclude|"
    r"concluded|establish|established|find|found|learn|learned|learnt|say|said|ask|asked)\b|"
    r"\b(summari[sz]e|recap|review|go over|remind me( of)?)\b.*\b(we|our|us|conversation|chat|"
    r"discussion|discussed|so far|this session|questions? i asked)\b|"
    r"\b(our|this) (conversation|chat|discussion|session) so far\b|"
    r"\bhow many questions (have|did) i\b",
    re.I,
)
# "what did we conclude about Paxos?": the topic is what follows "about" / "on" / "regarding".
_TOPIC_RE = re.compile(r"\b(?:about|on|regarding|concerning|for)\s+(.+?)[?.!]*\s*$", re.I)
_NOTE = "\n\n_(Answered from this conversation's history; embedded offline engine.)_"


# What a question about the conversation asks, by meaning rather than by phrase ("Which
# question did I open this chat with?", "Wrap up what we've talked about"): the nearest of
# these, when it is this close. Questions on the papers score below 0.32 (the fresh and dev
# sets, "What did I jot down about …" included); such questions from 0.45 up.
INTENTS = {
    "first": ("What was the first question I asked you?",
              "Which question did I start this conversation with?"),
    "summary": ("Summarize what we have discussed so far in this conversation.",
                "Give me a recap of our conversation."),
}  # fmt: skip
INTENT_FLOOR = 0.42
_PERSONAL_RE = re.compile(r"\b(?:i|i['’]ve|me|my|we|we['’]ve|our|us|you)\b", re.I)


def conversation_intent(message: str, emb: SentenceEmbeddings) -> str | None:
    """ "first" or "summary" for a question about this conversation in any words; None for
    anything else (a question that speaks of neither the user nor us is not one)."""
    if not _PERSONAL_RE.search(message):
        return None
    names = list(INTENTS)
    examples = [e for n in names for e in INTENTS[n]]
    sims = emb.similarity(message, examples)
    best = max(range(len(examples)), key=lambda i: float(sims[i]))
    if float(sims[best]) < INTENT_FLOOR:
        return None
    return names[best // 2]


def is_about_conversation(message: str) -> bool:
    return bool(_CONVERSATION_RE.search(message)) or _asks_first_question(message)


def _asks_first_question(message: str) -> bool:
    """ "What did I ask first?", "What was the first thing I asked?" (not a first in a paper)."""
    return bool(_FIRST_QUESTION_RE.search(message) and re.search(r"\b(i|my|me)\b", message, re.I)
                and not re.search(r"\b(answer|repl|said|say)", message, re.I))  # fmt: skip


def referred_index(message: str, n: int) -> int | None:
    """Which earlier turn a message names ("my first question" → 0), if any."""
    m = _ORDINAL_RE.search(message)
    if not m or n == 0:
        return None
    which = m.group(1).lower()
    i = _ORDINALS.get(which, n - 1)
    return i if i < n else None


def _topic(message: str) -> list[str]:
    """The words a "what did we say about X" question is about (none: the whole history)."""
    m = _TOPIC_RE.search(message)
    if not m:
        return []
    words = re.findall(r"[A-Za-z][A-Za-z0-9-]+", m.group(1))
    return [w for w in words if w.lower() not in STOPWORDS and w.lower() not in ("it", "that")]


_HEADING_RE = re.compile(r"^\*\*(.+?)\*\*\s*$")
_BULLET_RE = re.compile(r"^[-*]\s+(.*)$")
_MARKERS_RE = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]|\s*_\(§[^)]*\)_")


def _whole_first(text: str) -> str:
    """The first whole sentence of a quote or a paragraph (never cut mid-way)."""
    text = " ".join(_MARKERS_RE.sub("", text).replace("**", "").split())
    sents = split_sentences(text) or [text]
    return sents[0].strip()


def first_sentence(answer: str) -> str:
    """The first sentence that answers: the first quoted bullet's, else the first sentence
    of the first paragraph that is not the answer's framing ("… in their own words:")."""
    points = answer_points(answer)
    return points[0][1] if points else ""


def answer_points(answer: str) -> list[tuple[str, str]]:
    """(part heading, its first answering sentence) for each part of an answer: a compound
    offline answer gives one per bold heading, any other answer one ("", its first sentence)."""
    out: list[tuple[str, str]] = []
    head = ""
    have: set[str] = set()
    prose = ""
    for line in answer.splitlines():
        s = line.strip()
        if not s or (s.startswith("_") and s.endswith("_")) or s.endswith(":"):
            continue
        if m := _HEADING_RE.match(s):
            head = m.group(1).strip()
            continue
        if s.startswith("*") and not s.startswith("* "):
            continue  # a paper's title line ("*Paxos Made Simple* (Lamport, 2001)")
        if m := _BULLET_RE.match(s):
            if head not in have:
                have.add(head)
                out.append((head, _whole_first(m.group(1))))
            continue
        if not prose and not s.lower().startswith(("sources", "not covered")):
            prose = s
    if not out and prose:
        out.append(("", _whole_first(prose)))
    return out


def _line(n: int, t: PastTurn) -> str:
    """A turn as the summary gives it: the question, and each part's first answering sentence,
    whole."""
    line = f"{n}. You asked: “{t.question}”"
    points = answer_points(t.answer) if t.answer else []
    if not points:
        return line + "\n   (It has no recorded answer.)"
    for head, sentence in points:
        line += f"\n   - {head + ': ' if head else ''}{sentence}"
    return line


_FIRST_QUESTION_RE = re.compile(
    r"\b(?:what|which)\b.*\b(?:first|initial|original|opening)\b.*\b(?:ask|asked|question)\b|"
    r"\b(?:what|which)\b.*\b(?:ask|asked)\b.*\b(?:first|initially|at first|to begin with|"
    r"at the start)\b",
    re.I,
)


def conversation_answer(message: str, turns: Sequence[PastTurn], intent: str | None = None) -> str:
    """An answer to a question about the conversation itself, from its history (`intent`:
    what `conversation_intent` read in it, where the phrase rules read nothing)."""
    if not turns:
        return ("This is the first question of our conversation: nothing was asked before it."
                + _NOTE)  # fmt: skip
    if re.search(r"\bhow many questions\b", message, re.I):
        return f"You have asked {len(turns)} question(s) in this conversation so far." + _NOTE
    if intent == "first" or _asks_first_question(message):
        return f"Your first question was: “{turns[0].question}”" + _NOTE
    i = referred_index(message, len(turns))
    if i is not None:
        return "Here is that turn of our conversation:\n\n" + _line(i + 1, turns[i]) + _NOTE
    topic = _topic(message) if intent != "summary" else []
    if topic:
        about = [
            (n, t)
            for n, t in enumerate(turns, 1)
            if any(mentions(f"{t.question} {t.goal} {t.answer}", w) for w in topic)
        ]
        subject = " ".join(topic)
        if not about:
            return (f"We have not discussed {subject} in this conversation yet: none of its "
                    f"{len(turns)} question(s) or answers mentions it." + _NOTE)  # fmt: skip
        lines = [_line(n, t) for n, t in about]
        head = f"What this conversation found about {subject} ({len(about)} of its turns):"
        return head + "\n\n" + "\n".join(lines) + _NOTE
    # The whole conversation: every turn's question and what answered each of its parts.
    lines = [_line(n, t) for n, t in enumerate(turns, 1)]
    head = ("What we discussed: each question you asked, and the first sentence that answered "
            "it (per part):")  # fmt: skip
    return head + "\n\n" + "\n".join(lines) + _NOTE


__all__ = [
    "answer_points",
    "conversation_answer",
    "conversation_intent",
    "first_sentence",
    "is_about_conversation",
    "referred_index",
]
