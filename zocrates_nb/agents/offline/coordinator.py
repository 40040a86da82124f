"""The offline coordinator: greetings and questions about itself answered by rule, everything
else routed to `search_library`, a follow-up rewritten to stand alone with the previous goal."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.agents.offline.messages import exchanges, text_response, tool_call, user_prompts
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


def _previous_goal(messages: Sequence[ModelMessage]) -> str:
    for ex in reversed(exchanges(messages)):
        if ex.tool == "search_library":
            return str(ex.args.get("request", ""))
    return ""


def standalone_goal(message: str, previous_goal: str) -> str:
    """Rewrite a follow-up so it stands alone, noting what the previous turn was about."""
    msg = " ".join(message.split())
    if not previous_goal:
        return msg
    n_words = len(words(msg))
    content = terms(msg)
    follow = bool(_FOLLOWUP_RE.search(msg)) or (n_words <= 12 and bool(_ANAPHORA_RE.search(msg)))
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
    goal = standalone_goal(message, _previous_goal(messages))
    tool_names = {t.name for t in (*info.output_tools, *info.function_tools)}
    if "search_library" not in tool_names:
        return text_response(
            "I can only answer from your library, and searching it is not available "
            "right now. _(Embedded offline engine, no language model.)_"
        )
    return tool_call("search_library", {"request": goal})
