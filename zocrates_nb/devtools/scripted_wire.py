"""What the scripted OpenAI-compatible server (`scripted_openai`) sends: its replies (text,
tool calls, usage) as a Chat Completions body or as the SSE events of a stream, with the
tool-call quirks real servers have (shared or empty call ids, arguments sent as an object) and
invalid UTF-8: a character U+DC80–U+DCFF in a reply's text goes out as the raw byte 0x80–0xFF
(how Python's `surrogateescape` reads such bytes), so a stream can carry bytes that are not
UTF-8."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from zocrates_nb.devtools.scripted_quirks import OPENAI, Quirks


class Request(Protocol):
    """What a reply is built from: the request as the server received it (`scripted_openai`)."""

    number: int
    body: dict[str, Any]

    @property
    def stream(self) -> bool: ...

    @property
    def prompt_tokens(self) -> int: ...

TOKEN_CHARS = 4  # the usual estimate: a token is about four characters of English or JSON


def estimate_tokens(text: str) -> int:
    """Tokens of `text` estimated as characters / 4 (what the server reports as usage)."""
    return math.ceil(len(text) / TOKEN_CHARS) if text else 0


@dataclass
class ToolCall:
    """One tool call of a reply; `args` as a string is sent as is (e.g. invalid JSON). `id`
    replaces the call's own unique id (`""`, or one id shared by two calls); `as_object`
    sends the arguments as a JSON object instead of a string, as some servers do."""

    name: str
    args: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None
    as_object: bool = False

    @property
    def arguments(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)

    @property
    def wire_arguments(self) -> Any:
        return self.args if self.as_object and isinstance(self.args, dict) else self.arguments


@dataclass
class Reply:
    """A normal answer: text, tool calls, or both. Usage defaults to the request's estimate."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish: str | None = "auto"  # "auto": stop / tool_calls; "length"; None: no finish_reason
    delay: float = 0.0  # seconds the server thinks before answering


def text(content: str) -> Reply:
    return Reply(text=content)


def tool(name: str, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)])


def calls(*tool_calls: ToolCall) -> Reply:
    """A reply of several tool calls at once (parallel calls)."""
    return Reply(tool_calls=list(tool_calls))


_ESCAPED_BYTE_RE = re.compile(rb"\\udc([89a-fA-F][0-9a-fA-F])")


def wire_bytes(data: str) -> bytes:
    """`data` (JSON) as sent: each escaped U+DC80–U+DCFF becomes its raw byte (not UTF-8)."""
    return _ESCAPED_BYTE_RE.sub(lambda m: bytes([int(m.group(1), 16)]), data.encode())


def structured(req: Request, data: dict[str, Any]) -> Reply:
    """`data` as a real server sends a structured answer: the JSON text itself when the request
    asked for it by `response_format` (a JSON schema), else a call of the request's one output
    tool with `data` as its arguments."""
    fmt = req.body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") in ("json_schema", "json_object"):
        return Reply(text=json.dumps(data))
    names = [t.get("function", {}).get("name", "") for t in req.body.get("tools") or []]
    return Reply(tool_calls=[ToolCall(names[0] if names else "final_result", data)])


def bad_args(name: str, raw: str = '{"query": "raft leader election"') -> Reply:
    """A tool call whose arguments are not valid JSON."""
    return Reply(tool_calls=[ToolCall(name, raw)])


def limited(reply: Reply, quirks: Quirks) -> Reply:
    """The reply as a server with an output limit sends it: cut, finish_reason "length"."""
    limit = quirks.max_output_chars
    if limit is None or len(reply.text or "") <= limit:
        return reply
    return dataclasses.replace(reply, text=(reply.text or "")[:limit], finish="length")


def finish_reason(reply: Reply, calls: list[dict[str, Any]], quirks: Quirks) -> str | None:
    if reply.finish != "auto":
        return reply.finish
    return quirks.tool_finish if calls else "stop"


def stream_reports_usage(req: Request, quirks: Quirks) -> bool:
    return quirks.stream_usage and bool((req.body.get("stream_options") or {}).get("include_usage"))


def usage_of(req: Request, reply: Reply) -> dict[str, int]:
    out_text = (reply.text or "") + "".join(c.name + c.arguments for c in reply.tool_calls)
    prompt = reply.prompt_tokens if reply.prompt_tokens is not None else req.prompt_tokens
    completion = (
        reply.completion_tokens
        if reply.completion_tokens is not None
        else max(1, estimate_tokens(out_text))
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def tool_calls(req: Request, reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": c.id if c.id is not None else f"call_{req.number}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.wire_arguments},
        }
        for i, c in enumerate(reply.tool_calls)
    ]


def completion(
    req: Request, reply: Reply, usage: dict[str, int], quirks: Quirks
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    calls = tool_calls(req, reply)
    if calls:
        message["tool_calls"] = calls
    return {
        "id": f"chatcmpl-{req.number}",
        "object": "chat.completion",
        "created": 0,
        "model": req.body.get("model", "scripted"),
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason(reply, calls, quirks)}
        ],
        "usage": usage,
    }


def _pieces(text: str, size: int = 24) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def stream_events(
    req: Request, reply: Reply, usage: dict[str, int], quirks: Quirks = OPENAI
) -> list[str]:
    """The SSE events of a streamed answer (`data: …\\n\\n` each, `[DONE]` last)."""
    base = {
        "id": f"chatcmpl-{req.number}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": req.body.get("model", "scripted"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**base, 'choices': [choice]})}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": p}) for p in _pieces(reply.text or "")]
    calls = tool_calls(req, reply)
    for i, c in enumerate(calls):
        if quirks.whole_tool_calls or not isinstance(c["function"]["arguments"], str):
            events.append(chunk({"tool_calls": [{**c, "index": i}]}))
            continue
        head = {**c, "index": i, "function": {"name": c["function"]["name"], "arguments": ""}}
        events.append(chunk({"tool_calls": [head]}))
        for p in _pieces(c["function"]["arguments"]):
            events.append(chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]}))
    events.append(chunk({}, finish_reason(reply, calls, quirks)))
    if stream_reports_usage(req, quirks):
        events.append(f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n")
    events.append("data: [DONE]\n\n")
    return events


