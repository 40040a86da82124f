"""What a model sends, made safe to store, show and send on: cleaned and bounded at the edge.

A model's reply is untrusted text. Lone surrogates (`\\ud800`), noncharacters and control
characters make the turn record unserialisable (sessions.db, JSON, the HTTP API) and are
replaced with U+FFFD, counted; strings longer than the role's limit (an answer, a tool
argument, a judgement: `models.limits` in zocrates_config.json) are cut with a visible notice;
the history a role is sent is bounded in characters. Pure functions over pydantic-ai's message
types; `model_guard.GuardedModel` applies them to every reply of a configured model.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from zocrates_nb.config import OutputLimits

REPLACEMENT = "\ufffd"
# In a Python string every surrogate is a lone one (a valid pair decodes to one code point);
# noncharacters and C0 controls other than tab, newline and carriage return are never text.
_INVALID = re.compile("[\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff\x00-\x08\x0b\x0c\x0e-\x1f]")


@dataclass
class Tally:
    """What cleaning one reply (or one stream) did: characters replaced, strings cut."""

    replaced: int = 0
    cut: list[str] = field(default_factory=list)  # what was cut: "answer", "tool argument"…
    renamed: int = 0  # tool calls given an id of their own (an empty or a shared one)
    merged: int = 0  # parallel calls of one ending tool joined into one call

    def add(self, other: Tally) -> None:
        self.replaced += other.replaced
        self.cut.extend(other.cut)
        self.renamed += other.renamed
        self.merged += other.merged

    def __bool__(self) -> bool:
        return bool(self.replaced or self.cut or self.renamed or self.merged)


def clean_text(text: str, tally: Tally | None = None) -> str:
    """`text` with every invalid code point replaced by U+FFFD (counted in `tally`)."""
    out, n = _INVALID.subn(REPLACEMENT, text)
    if tally is not None:
        tally.replaced += n
    return out


def cut_notice(what: str, limit: int, key: str) -> str:
    return f"[… {what} cut: the model sent more than {limit:,} characters (models.limits.{key})]"


def bound_text(text: str, limit: int, what: str, key: str, tally: Tally | None = None) -> str:
    """`text` cut to `limit` characters (at a word boundary when one is near), then a notice."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ", max(0, limit - 200))
    if space > 0:
        head = head[:space]
    if tally is not None:
        tally.cut.append(what)
    return f"{head.rstrip()}\n\n{cut_notice(what, limit, key)}"


def _bound_value(value: Any, limits: OutputLimits, what: str, key: str, tally: Tally) -> Any:
    if isinstance(value, str):
        return bound_text(clean_text(value, tally), getattr(limits, key), what, key, tally)
    if isinstance(value, list):
        items = value[: limits.tool_argument_items]
        return [_bound_value(v, limits, what, key, tally) for v in items]
    if isinstance(value, dict):
        return {
            clean_text(str(k), tally)[:200]: _bound_value(v, limits, what, key, tally)
            for k, v in list(value.items())[: limits.tool_argument_items]
        }
    return value


def clean_args(args: Any, limits: OutputLimits, key: str, tally: Tally) -> Any:
    """A tool call's arguments with every string value cleaned and bounded. Arguments that are
    not JSON stay a string (the agent asks the model again), cut to the limit."""
    what = "judgement" if key == "judgement_chars" else "tool argument"
    if args is None:
        return None
    if isinstance(args, dict):
        return dict(_bound_value(args, limits, what, key, tally))
    try:
        parsed = json.loads(args)
    except ValueError:
        text = clean_text(args, tally)
        cap = 4 * getattr(limits, key)
        if len(text) > cap:
            tally.cut.append(what)
            text = text[:cap]
        return text
    if not isinstance(parsed, dict):
        return clean_text(args, tally)[: 4 * getattr(limits, key)]
    bounded = _bound_value(parsed, limits, what, key, tally)
    return json.dumps(bounded, ensure_ascii=False)


def clean_response(
    response: ModelResponse, limits: OutputLimits, *, role: str, tally: Tally
) -> ModelResponse:
    """A reply with its text, thinking and tool arguments cleaned and bounded for `role` (the
    verifier's arguments are a judgement; every other role's text is an answer)."""
    arg_key = "judgement_chars" if role == "verifier" else "tool_argument_chars"
    parts: list[Any] = []
    changed = False
    for p in response.parts:
        new: Any = p
        if isinstance(p, TextPart | ThinkingPart):
            text = bound_text(
                clean_text(p.content, tally), limits.answer_chars, "answer", "answer_chars", tally
            )
            if text != p.content:
                new = dataclasses.replace(p, content=text)
        elif isinstance(p, ToolCallPart):
            args = clean_args(p.args, limits, arg_key, tally)
            name = clean_text(p.tool_name, tally)[:200]
            if args != p.args or name != p.tool_name:
                new = dataclasses.replace(cast(Any, p), args=args, tool_name=name)
        changed = changed or new is not p
        parts.append(new)
    parts, fixed = _own_ids(parts, tally)
    parts, joined = _one_call_of(parts, ENDING_TOOLS, tally)
    changed = changed or fixed or joined
    return dataclasses.replace(response, parts=parts) if changed else response


# Tools whose call ends the run (the coordinator's output functions): a model that calls one
# several times at once gets one call, its requests joined, instead of all but the first
# silently dropped.
ENDING_TOOLS = ("search_library",)


def _own_ids(parts: list[Any], tally: Tally) -> tuple[list[Any], bool]:
    """Every tool call with an id of its own: an empty or a repeated id (some servers send
    them) would pair a result with the wrong call, or lose one."""
    seen: set[str] = set()
    out: list[Any] = []
    changed = False
    for k, p in enumerate(parts):
        if isinstance(p, ToolCallPart):
            cid = p.tool_call_id or ""
            if not cid or cid in seen:
                cid = f"{cid or 'call'}-{k}"
                while cid in seen:
                    cid += "x"
                p = dataclasses.replace(p, tool_call_id=cid)
                tally.renamed += 1
                changed = True
            seen.add(cid)
        out.append(p)
    return out, changed


def _one_call_of(parts: list[Any], tools: Sequence[str], tally: Tally) -> tuple[list[Any], bool]:
    """Parallel calls of one ending tool joined into its first call (requests one after the
    other), so each request is searched; the answer says it (`Tally.merged`)."""
    changed = False
    for name in tools:
        same = [p for p in parts if isinstance(p, ToolCallPart) and p.tool_name == name]
        if len(same) < 2:
            continue
        requests = []
        for p in same:
            args = p.args_as_dict() if _parses(p) else {}
            value = args.get("request")
            if isinstance(value, str) and value.strip() and value.strip() not in requests:
                requests.append(value.strip())
        first = dataclasses.replace(same[0], args={"request": " Also: ".join(requests)})
        rest = {id(p) for p in same[1:]}
        parts = [first if p is same[0] else p for p in parts if id(p) not in rest]
        tally.merged += len(same) - 1
        changed = True
    return parts, changed


def _parses(p: ToolCallPart) -> bool:
    try:
        return isinstance(p.args_as_dict(), dict)
    except ValueError:
        return False


# ---------------------------------------------------------------------------- history
def message_chars(m: ModelMessage) -> int:
    total = 0
    for p in m.parts:
        content = getattr(p, "content", None)
        if isinstance(content, str):
            total += len(content)
        elif content is not None:
            total += len(json.dumps(content, default=str, ensure_ascii=False))
        args = getattr(p, "args", None)
        if args is not None:
            total += len(args if isinstance(args, str) else json.dumps(args, default=str))
    return total


def _shrink(m: ModelMessage, limit: int) -> ModelMessage:
    """One message whose text parts are each cut to `limit` characters."""
    parts: list[Any] = []
    for p in m.parts:
        content = getattr(p, "content", None)
        long = isinstance(content, str) and len(content) > limit
        if long and isinstance(p, TextPart | UserPromptPart | ToolReturnPart):
            p = dataclasses.replace(cast(Any, p), content=str(content)[:limit] + " […]")
        parts.append(p)
    return cast(ModelMessage, dataclasses.replace(cast(Any, m), parts=parts))


def _opens_exchange(m: ModelMessage) -> bool:
    return isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)


def bound_history(messages: Sequence[ModelMessage], limit: int) -> list[ModelMessage]:
    """The newest whole exchanges that fit in `limit` characters: the kept history starts at a
    user prompt, so no tool call loses its result. When even the newest exchange is too long,
    it is kept with each long part cut to its share."""
    msgs = list(messages)
    if sum(message_chars(m) for m in msgs) <= limit:
        return msgs
    starts = [i for i, m in enumerate(msgs) if _opens_exchange(m)]
    for i in starts:  # the oldest start whose tail fits
        if sum(message_chars(m) for m in msgs[i:]) <= limit:
            return msgs[i:]
    tail = msgs[starts[-1] :] if starts else msgs
    share = max(limit // max(len(tail), 1), 500)
    return [_shrink(m, share) for m in tail]


__all__ = [
    "REPLACEMENT",
    "Tally",
    "bound_history",
    "bound_text",
    "clean_args",
    "clean_response",
    "clean_text",
    "cut_notice",
    "message_chars",
]
