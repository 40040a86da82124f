"""The offline coordinator: greetings and questions about itself answered by rule, questions
about the conversation answered from its history (and its compacted summary), requests for
papers beyond the library routed to `search_online_literature`, everything else to
`search_library`, a follow-up rewritten to stand alone with the goal it refers to."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.discovery import wants_discovery
from zocrates_nb.agents.offline.messages import text_response, tool_call, user_prompts
from zocrates_nb.sessions.compaction import answer_gist, summary_of
from zocrates_nb.text import terms, words

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
_FOLLOWUP_RE = re.compile(
    r"^(and|but|also|so|then|what about|how about|why( not)?|how come|tell me more|more on|"
    r"elaborate|explain (that|this|it|more|further)|go on|continue|what else|any other|"
    r"is that|are they|does it|do they|can it|could you expand)\b",
    re.I,
)
_ANAPHORA_RE = re.compile(
    r"\b(it|its|they|them|their|this|that|these|those|he|she|his|her)\b", re.I
)

SELF_DESCRIPTION = (
    "Hello! I'm zocrates, a research assistant for your own Zotero library. Ask me about your "
    "papers — the whole library, a collection, or the items you select — and I'll search them, "
    "read the relevant sections and answer with citations I have checked against the text.\n\n"
    "Right now no language model is configured, so I run on the embedded offline engine: I "
    "answer by quoting the sentences of your papers that best match your question, without a "
    "language model. Configure a model (see `zocrates-nb doctor`) for written answers."
)


_ORDINALS = {"first": 0, "second": 1, "third": 2, "fourth": 3, "fifth": 4}
_TURN_REF_RE = re.compile(
    r"\b(?:my|the|your)\s+(first|second|third|fourth|fifth|last|previous|earlier|latest)\s+"
    r"(question|query|answer|reply)\b",
    re.I,
)
# Questions about the conversation itself, not about the library.
_CONVERSATION_RE = re.compile(
    r"\bwhat (was|were|is|did) (my|i|you)\b.*\b(ask|asked|question|questions|answer|answered|"
    r"say|said|reply|replied)\b|\bwhat have (we|i) (discussed|talked about|asked)\b|"
    r"\b(summari[sz]e|recap|repeat|remind me of)\b.*\b(conversation|chat|discussion|question|"
    r"answer)\b|\bwhat did (you|we) (say|answer|find|conclude)\b|"
    r"\bhow many questions (have|did) i\b",
    re.I,
)


_ANSWER_TOOLS = ("search_library", "search_online_literature")


@dataclass
class PastTurn:
    question: str
    answer: str = ""
    goal: str = ""


def past_turns(messages: Sequence[ModelMessage]) -> list[PastTurn]:
    """The conversation's earlier turns (the compacted ones from the summary's "Asked: … —
    answered: …" lines first), the current prompt excluded."""
    turns: list[PastTurn] = []
    for line in summary_of(messages).splitlines():
        asked = re.match(r"^\s*-\s*Asked:\s*(.+?)(?:\s+—\s+answered:\s*(.*))?$", line)
        if asked:
            turns.append(PastTurn(asked.group(1).strip(), (asked.group(2) or "").strip()))
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, UserPromptPart) and isinstance(p.content, str):
                    turns.append(PastTurn(" ".join(p.content.split())))
                elif (
                    isinstance(p, ToolReturnPart)
                    and p.tool_name in _ANSWER_TOOLS
                    and isinstance(p.content, str)
                    and turns
                ):
                    turns[-1].answer = turns[-1].answer or p.content
        elif turns:
            for rp in m.parts:
                if isinstance(rp, TextPart) and rp.content.strip() and not turns[-1].answer:
                    turns[-1].answer = rp.content
                elif isinstance(rp, ToolCallPart) and rp.tool_name in _ANSWER_TOOLS:
                    turns[-1].goal = str(rp.args_as_dict().get("request", ""))
    return turns[:-1]  # the last prompt is the current message


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


def conversation_answer(message: str, turns: Sequence[PastTurn]) -> str:
    """An answer to a question about the conversation itself, from its history."""
    note = "\n\n_(Answered from this conversation's history; embedded offline engine.)_"
    if not turns:
        return "This is the first question of our conversation: nothing was asked before it." + note
    turn = referred_turn(message, turns)
    chosen = [turn] if turn is not None else list(turns)
    lines = []
    for t in chosen:
        n = next((i for i, x in enumerate(turns) if x is t), 0) + 1
        gist = answer_gist(t.answer, 400) if t.answer else ""
        line = f"{n}. You asked: “{t.question}”"
        line += f"\n   The answer: {gist}" if gist else "\n   (It has no recorded answer.)"
        lines.append(line)
    head = (
        "Here is that turn of our conversation:"
        if turn is not None
        else f"So far you have asked {len(turns)} question(s) in this conversation:"
    )
    return head + "\n\n" + "\n".join(lines) + note


def _previous_goal(messages: Sequence[ModelMessage], message: str = "") -> str:
    """The goal a follow-up builds on: the turn it names, else the latest search."""
    turns = past_turns(messages)
    turn = referred_turn(message, turns)
    if turn is not None:
        return turn.goal or turn.question
    for t in reversed(turns):
        if t.goal:
            return t.goal
    return ""


def standalone_goal(message: str, previous_goal: str) -> str:
    """Rewrite a follow-up so it stands alone, noting what the previous turn was about."""
    msg = " ".join(message.split())
    if not previous_goal:
        return msg
    n_words = len(words(msg))
    content = terms(msg)
    follow = bool(_FOLLOWUP_RE.search(msg)) or (n_words <= 12 and bool(_ANAPHORA_RE.search(msg)))
    follow = follow or bool(_TURN_REF_RE.search(msg))
    if not follow and len(content) >= 3:
        return msg
    if not follow and n_words > 6:
        return msg
    return f"{msg.rstrip('?. ')}? (Follow-up to the earlier question: {previous_goal.rstrip()})"


def coordinator_compute(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    prompts = user_prompts(messages)
    message = prompts[-1].strip() if prompts else ""
    if not message or _GREETING_RE.match(message) or _META_RE.search(message):
        if re.match(r"^(thanks?|thank you|thx|cheers)", message, re.I):
            return text_response(
                "You're welcome! Ask me anything else about your papers.\n\n"
                "_(Embedded offline engine, no language model.)_"
            )
        if re.match(r"^(bye|goodbye|see you)", message, re.I):
            return text_response(
                "Goodbye! Your conversation is saved; come back to it any time.\n\n"
                "_(Embedded offline engine, no language model.)_"
            )
        return text_response(SELF_DESCRIPTION)
    if _CONVERSATION_RE.search(message):
        return text_response(conversation_answer(message, past_turns(messages)))
    tool_names = {t.name for t in (*info.output_tools, *info.function_tools)}
    if "search_online_literature" in tool_names and wants_discovery(message):
        return tool_call("search_online_literature", {"request": " ".join(message.split())})
    goal = standalone_goal(message, _previous_goal(messages, message))
    if "search_library" not in tool_names:
        return text_response(
            "I can only answer from your library, and searching it is not available "
            "right now. _(Embedded offline engine, no language model.)_"
        )
    return tool_call("search_library", {"request": goal})
