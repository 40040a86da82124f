"""The offline coordinator: greetings and questions about itself answered by rule, questions
about the conversation answered from its history, requests for papers beyond the library routed
to `search_online_literature`, everything else to `search_library`.

It plays from its `CoordinatorBrief` (the message, every earlier turn as the session recorded
it). A message is a follow-up only when it refers back: a pronoun with nothing of its own to
stand for ("what about its limits?"), a reference ("that paper", "the second one", "my first
question"), or a continuation ("and in Zab?"). Then its goal names what it refers to, once;
anything else is a new question and searches the whole scope in its own words. A question asked
again (the panel's "Regenerate") searches the goal it had the first time.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.brief import CoordinatorBrief, PastTurn, brief_of
from zocrates_nb.agents.offline.conversation import (
    conversation_answer,
    conversation_intent,
    first_sentence,
    is_about_conversation,
)
from zocrates_nb.agents.offline.discovery import wants_discovery
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.messages import text_response, tool_call
from zocrates_nb.agents.own_notes import asks_own_notes
from zocrates_nb.agents.parts import core_goal
from zocrates_nb.index.names import Catalogue, tokens
from zocrates_nb.retrieval.state import FollowUp
from zocrates_nb.text import entities, terms

_GREETING_RE = re.compile(
    r"^(hi|hello|hey|hiya|howdy|greetings|good (morning|afternoon|evening|day)|yo|"
    r"thanks?( you)?( very much| so much| a lot)?|thank you|thx|cheers|ok(ay)?|great|cool|nice|"
    r"awesome|perfect|bye|goodbye|see you|got it|understood|sounds good)\b[\s!.,:)]*"
    r"(zocrates)?[\s!.,:)]*$",
    re.I,
)
_META_RE = re.compile(
    r"\b(who are you|what are you|what can you do|what do you do|how do you work|"
    r"are you (an? )?(ai|bot|language model|llm|human)|which (language )?model|what model|"
    r"what is zocrates|introduce yourself|your name|help me use|how (do|can) i use you|"
    r"what('s| is) (this|your) (tool|assistant))\b",
    re.I,
)
# A message that continues the one before ("and in Zab?", "what about its limits?", "why?").
_CONTINUES_RE = re.compile(
    r"^(and|but|also|so|then|what about|how about|why( not)?\b|how come|tell me more|more on|"
    r"elaborate|explain (that|this|it|more|further)|go on|continue|what else|any other|"
    r"could you expand|can you expand|same (question )?for)\b",
    re.I,
)
# A pronoun standing for something said earlier ("its", "they"): "it" in "is it true that…"
# or "that" joining a clause ("the paper that introduced …") stands for nothing.
_PRONOUN_RE = re.compile(r"\b(its|they|them|their|theirs|he|she|his|her)\b|\bit\b(?!\s+(is|was)\s+"
                         r"(true|possible|known|said|often|common)\b)", re.I)  # fmt: skip
_REFERENCE_NOUNS = (
    r"(paper|papers|one|ones|article|study|studies|system|systems|approach|method|result|"
    r"results|idea|algorithm|protocol|answer|question|section|passage|quote|model|work|author|"
    r"authors|point|claim|part|technique|design|finding|findings)"
)
_REFERENCE_RE = re.compile(
    rf"\b(that|those|the (same|above|previous|earlier|last|latter|former))\s+{_REFERENCE_NOUNS}\b|"
    rf"\bthe (first|second|third|fourth|fifth|last|other) {_REFERENCE_NOUNS}\b|"
    r"\b(that|this|these|those)\s*[?.!]?\s*$|^\s*(why|how|really|is that so)\s*[?!.]*\s*$|"
    r"\b(earlier|previous|last|above) (question|answer|turn|reply)\b|"
    r"\b(you (just )?(said|mentioned|quoted|cited))\b",
    re.I,
)
# A comparison whose one side is a pronoun ("compare that with Raft", "how does it compare to
# Paxos?", "how do they differ from Zab?", "is that different in Bigtable?"): the name in it is
# the other side, not its referent.
_COMPARED_RE = re.compile(
    r"\b(?:compar|contrast|relat|differentiat)\w*\s+(that|this|it|them|these|those)\b(?!\s+\w+\s+"
    r"(?:with|to|and|against)\b)|"
    r"\b(that|this|it|they|these|those)\s+(?:compares?|differs?|relates?|contrasts?|stacks? up|"
    r"(?:(?:is|are|was|were)\s+)?(?:different|similar|alike|the same))\b",
    re.I,
)
# A selection is "this paper" / "these papers": they name the scope, not an earlier turn.
_SCOPE_REFERENCE_RE = re.compile(r"\b(this|these|the selected) (paper|papers|item|items)\b", re.I)
_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4}
_TURN_REF_RE = re.compile(
    r"\b(?:my|the|your)\s+(first|second|third|fourth|fifth|last|previous|earlier|latest)\s+"
    r"(question|query|answer|reply)\b",
    re.I,
)

SELF_DESCRIPTION = (
    "Hello! I'm zocrates, a research assistant for your own Zotero library. Ask me about your "
    "papers — the whole library, a collection, or the items you select — and I'll search them, "
    "read the relevant sections and answer with citations I have checked against the text.\n\n"
    "Right now no language model is configured, so I run on the embedded offline engine: I "
    "answer by quoting the sentences of your papers that best match your question, without a "
    "language model. Configure a model (see `zocrates-nb doctor`) for written answers."
)
_OFFLINE_NOTE = "\n\n_(Embedded offline engine, no language model.)_"


def refers_back(message: str, scope_kind: str = "library") -> bool:
    """Whether a message leans on an earlier turn to be understood."""
    msg = " ".join(message.split())
    if _TURN_REF_RE.search(msg) or _CONTINUES_RE.search(msg):
        return True
    if scope_kind == "selection":
        msg = _SCOPE_REFERENCE_RE.sub(" ", msg)
    if _REFERENCE_RE.search(msg) or _COMPARED_RE.search(msg):
        return True
    return bool(_PRONOUN_RE.search(msg)) and not _names_its_subject(msg)


def _names_its_subject(msg: str) -> bool:
    """A message that names what its pronoun stands for ("How does Spanner use its clocks?")."""
    return _subjects(msg) is not None


def referred_turn(message: str, turns: Sequence[PastTurn]) -> PastTurn | None:
    """The earlier turn a message points at ("my first question", "your last answer")."""
    if not turns:
        return None
    m = _TURN_REF_RE.search(message)
    if not m:
        return None
    which = m.group(1).lower()
    i = _ORDINALS.get(which, len(turns) - 1)
    return turns[i] if i < len(turns) else None


def standalone_goal(message: str, turns: Sequence[PastTurn], scope_kind: str = "library") -> str:
    """The goal to search for (see `follow_up`)."""
    return follow_up(message, turns, scope_kind)[0]


def follow_up(
    message: str,
    turns: Sequence[PastTurn],
    scope_kind: str = "library",
    names: Catalogue | None = None,
) -> tuple[str, FollowUp | None]:
    """The goal to search for and, for a follow-up, what it builds on as a typed record: the
    message itself, unless it refers back; then the message with what it refers to named in
    it ("its" → "Raft's", "the second one" → that paper's title, "How is that different in
    Bigtable?" → the earlier question asked of Bigtable), the earlier subject and question
    beside it. A correction ("no, I meant the other paper") asks the earlier question again
    of what the researcher means."""
    msg = " ".join(message.split())
    again = [t for t in turns if t.goal and " ".join(t.question.split()) == msg != t.goal]
    if again:  # asked again: the goal it had the first time
        return again[0].goal, None
    searched = [t for t in turns if t.goal and " ".join(t.question.split()) != msg]
    corrected = correction(msg, searched, names)
    if corrected is not None:
        return corrected
    if not refers_back(msg, scope_kind):
        return msg, None
    turn = referred_turn(msg, turns)
    if turn is None or not turn.goal:
        turn = searched[-1] if searched else None
    if turn is None:
        return msg, None
    base = core_goal(turn.goal)
    earlier = FollowUp(subject=_subjects(base) or "", question=base)
    named = _name_the_papers(msg, turn)
    if named is not None:
        return named, earlier
    compared = _name_the_compared(msg, base)
    if compared is not None:
        goal, contrast = compared
        if contrast:  # the other side, on the same aspect: the earlier side in one line
            earlier = earlier.model_copy(update={"answer": first_sentence(turn.answer)})
        return goal, earlier
    return _name_the_subject(msg, base) or msg, earlier


_CORRECTION_RE = re.compile(
    r"^\s*(?:(?:oh|ah|hmm|no|nope|not that|sorry|actually|wait|oops|my bad|"
    r"wrong (?:paper|one|article|study)|(?:scratch|forget|ignore|never mind|strike|cancel)"
    r"(?:\s+(?:that|this|it))?)[\s,.!:;-]*)*"  # "Scratch that, wrong paper: I wanted …"
    r"(?:i|I)\s+"
    r"(?:meant|mean|was asking about|asked about|was thinking of|was thinking about|"
    r"had in mind|was referring to|was talking about|wanted(?!\s+to\b))\s+(.+?)[\s.!?]*$|"
    r"^\s*(?:no|nope|not that one)[\s,.!-]+(?:the other (?:one|paper)|(.+?))[\s.!?]*$",
    re.I,
)
# "Sorry, wrong paper, I was thinking of …": the paper the answer quoted is not the one meant.
_WRONG_RE = re.compile(r"\b(?:wrong|not that) (?:paper|one|article|study)\b", re.I)
_NOT_RE = re.compile(r",?\s+(not|rather than|instead of)\s+", re.I)  # "BLAST, not BLAT"
_OTHER_RE = re.compile(r"\bthe other\s+(?:[\w-]+\s+){0,3}?(?:one|paper|article|study)\b", re.I)


def correction(
    msg: str, searched: Sequence[PastTurn], names: Catalogue | None = None
) -> tuple[str, FollowUp] | None:
    """ "No, I meant the other paper" / "I meant Zab": the earlier question asked again of what
    the researcher means: another paper than the one the answer quoted, or the thing named.
    With the library's names, the paper the earlier question named gives way to the one the
    correction names ("Sorry, I meant the neural tangent kernel paper"; "the other MoCo paper,
    the one with the improved baselines"), and the one given up is never quoted again."""
    if not searched:
        return None
    turn = searched[-1]
    base = core_goal(turn.goal)
    # "Oh wait, I meant BLAST, not BLAT. How does it store the database it scans?": the
    # correction, then a new question about what is meant.
    said = re.split(r"(?<=[.!?])\s+(?=[A-Z])", msg, maxsplit=1)
    m = _CORRECTION_RE.match(said[0])
    asked = ""
    if m is not None and len(said) == 2 and (m.group(1) or m.group(2)):
        msg, asked = said
    m = _CORRECTION_RE.match(msg)
    if m is None:
        return None
    who = _subjects(base) or ""
    meant = (m.group(1) or m.group(2) or "").strip()
    # "I meant BLAST, not BLAT": what is meant, and what is not.
    pieces = [x.strip(" ,;") for x in _NOT_RE.split(meant, maxsplit=1)]
    meant, not_meant = pieces[0], pieces[-1] if len(pieces) == 3 else ""
    note = FollowUp(subject=who, question=base, correction=True)
    other = bool(_OTHER_RE.search(msg)) or not meant
    wrong = other or bool(_WRONG_RE.search(msg))
    given_up = [*(turn.papers[:1] if wrong else ()), *_titles(not_meant, names)]
    if asked and meant:  # the new question's "it" is what is meant
        goal = _name_the_subject(asked, f"I meant {meant}") or asked
        return goal, note.model_copy(update={"not_papers": given_up})
    named = _by_names(base, meant, names, given_up) if names else None
    if named is not None:
        goal, refused = named
        return goal, note.model_copy(update={"not_papers": refused})
    if other:
        if not turn.papers:
            return None
        # The answer quoted its first paper: the researcher means another one on the subject.
        return base, note.model_copy(update={"not_papers": [turn.papers[0]]})
    if who and re.search(rf"\b{re.escape(who)}\b", base):
        return re.sub(rf"\b{re.escape(who)}\b", meant, base, count=1), note
    return f"{meant}: {base}", note


def _meant_keys(text: str, names: Catalogue) -> list[str]:
    """The papers a correction's words name, read as the researcher wrote them, mid-sentence
    ("I meant Raft and …": a capitalised first word is no name by itself)."""
    return [k for x in names.mentions(f"I meant {text}") for k in x.keys]


def _titles(text: str, names: Catalogue | None) -> list[str]:
    """The titles of the library's papers `text` names."""
    if not text or names is None:
        return []
    keys = _meant_keys(text, names)
    return [names.items[k].title for k in dict.fromkeys(keys) if k in names.items]


def _by_names(base: str, meant: str, names: Catalogue, not_this: Sequence[str]
              ) -> tuple[str, list[str]] | None:  # fmt: skip
    """The earlier question with the paper it named replaced by the one the correction names,
    and the titles given up; None when the names do not say (the correction names no paper
    of the library, or none the question named)."""
    by_title = {it.title: k for k, it in names.items.items()}
    refused = {by_title[t] for t in not_this if t in by_title}
    said = [x for x in names.mentions(base) if x.keys]
    wanted = [k for k in _meant_keys(meant, names) if k not in refused]
    old = next((x for x in said if not set(x.keys) & set(wanted) or set(x.keys) & refused), None)
    if old is None or not wanted:
        return None
    refused |= set(old.keys) - set(wanted)
    toks = tokens(base)
    a, b = toks[old.start][1], toks[old.end - 1][2]
    before = re.search(r"\bthe\s+$", base[:a], re.I)
    after = re.match(r"(?:['’]s)?\s+(?:paper|article|study)\b", base[b:])
    a = before.start() if before else a
    b += after.end() if after else 0
    kept = {k for x in said if x is not old for k in x.keys}  # "Raft" of "Raft and Zab" stays
    titles = list(dict.fromkeys(names.items[k].title for k in wanted
                                if k in names.items and k not in kept))  # fmt: skip
    if not titles:
        return None
    goal = base[:a] + " and ".join(f"“{t}”" for t in titles) + base[b:]
    return goal, [names.items[k].title for k in refused if k in names.items]


_PAPER_REF_RE = re.compile(
    r"\b(that|this|the) (paper|article|study)\b|\bthe (first|second|third|fourth|fifth|last) "
    r"(one|paper|article|study)\b|\b(those|these|both) (papers|articles|studies)\b",
    re.I,
)


def _name_the_papers(msg: str, turn: PastTurn) -> str | None:
    """ "What does the second one say about X?" → the second paper the answer cited."""
    if not turn.papers:
        return None
    m = _PAPER_REF_RE.search(msg)
    if m is None:
        return None
    ordinal = (m.group(3) or "").lower()
    if m.group(5):
        chosen = list(turn.papers)
    elif ordinal == "last":
        chosen = [turn.papers[-1]]
    elif ordinal:
        i = _ORDINALS[ordinal]
        if i >= len(turn.papers):
            return None
        chosen = [turn.papers[i]]
    else:
        chosen = [turn.papers[0]]
    names = " and ".join(f"“{t}”" for t in chosen)
    return msg[: m.start()] + names + msg[m.end() :]


def _subjects(goal: str) -> str | None:
    """What an earlier goal was about, as a name ("Raft", "Zab and Paxos")."""
    subjects = [e for e in entities(goal) if e.lower() not in ("i", "what", "how", "why")]
    return " and ".join(dict.fromkeys(subjects[:3])) or None


_COMPARING_WORDS = re.compile(r"^(compar|contrast|relat|differ|similar|alike|same|stack)", re.I)


def _name_the_compared(msg: str, base: str) -> tuple[str, bool] | None:
    """A comparison whose one side is a pronoun. With an aspect of its own ("Compare that with
    Raft's log") the pronoun becomes the earlier subject ("Compare Zab with Raft's log"); with
    none ("How is that different in Bigtable?" after "How does GFS handle chunk server
    failures?") the earlier question is asked of the other side ("How does Bigtable handle
    chunk server failures?"), and True says the earlier side is recalled beside it."""
    m = _COMPARED_RE.search(msg)
    who = _subjects(base) if m else None
    if m is None or who is None:
        return None
    group = 1 if m.group(1) else 2
    others = [e for e in entities(msg) if e not in who.split(" and ")]
    named = {t.lower() for e in entities(msg) for t in terms(e)}
    own = [t for t in terms(msg) if t.lower() not in named and not _COMPARING_WORDS.match(t)]
    first = who.split(" and ")[0]
    if not own and others and re.search(rf"\b{re.escape(first)}\b", base):
        return re.sub(rf"\b{re.escape(first)}\b", " and ".join(others), base, count=1), True
    return msg[: m.start(group)] + who + msg[m.end(group) :], False


def _name_the_subject(msg: str, base: str) -> str | None:
    """ "What about its log compaction?" after a Raft question → "… Raft's log compaction?"."""
    who = _subjects(base)
    if who is None or not _PRONOUN_RE.search(msg):
        return None
    out, n = re.subn(r"\b(its|their)\b", f"{who}'s", msg, flags=re.I)
    out, m = re.subn(r"\b(it|they|them)\b(?!\s+(is|was)\s+(true|possible|known))", who, out,
                     flags=re.I)  # fmt: skip
    return out if n + m else None


def coordinator_compute(
    messages: list[ModelMessage], info: AgentInfo, emb: SentenceEmbeddings | None = None
) -> ModelResponse:
    """Banter, questions about the conversation (`emb` reads those the phrase rules miss),
    else a search of the library for the goal."""
    brief = brief_of(CoordinatorBrief)
    message = brief.message.strip()
    if not message or _GREETING_RE.match(message) or _META_RE.search(message):
        if re.match(r"^(thanks?|thank you|thx|cheers)", message, re.I):
            return text_response("You're welcome! Ask me anything else about your papers."
                                 + _OFFLINE_NOTE)  # fmt: skip
        if re.match(r"^(bye|goodbye|see you)", message, re.I):
            return text_response("Goodbye! Your conversation is saved; come back to it any time."
                                 + _OFFLINE_NOTE)  # fmt: skip
        return text_response(SELF_DESCRIPTION)
    if is_about_conversation(message) and (brief.turns or not asks_own_notes(message)):
        # (with nothing asked before, "What did I say I should compare X with?" asks the notes)
        return text_response(conversation_answer(message, brief.turns))
    intent = conversation_intent(message, emb) if emb is not None and brief.turns else None
    if intent is not None:
        return text_response(conversation_answer(message, brief.turns, intent))
    tool_names = {t.name for t in (*info.output_tools, *info.function_tools)}
    if "search_online_literature" in tool_names and wants_discovery(message):
        return tool_call("search_online_literature", {"request": " ".join(message.split())})
    if "search_library" not in tool_names:
        return text_response(
            "I can only answer from your library, and searching it is not available "
            "right now. _(Embedded offline engine, no language model.)_"
        )
    goal, earlier = follow_up(message, brief.turns, brief.scope_kind, brief.names)
    args: dict[str, object] = {"request": goal}
    if earlier is not None:
        args["regarding"] = earlier.model_dump()
    return tool_call("search_library", args)


__all__ = [
    "SELF_DESCRIPTION",
    "coordinator_compute",
    "core_goal",
    "follow_up",
    "referred_turn",
    "refers_back",
    "standalone_goal",
]
