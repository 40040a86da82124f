"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and the token bench.

A real HTTP server (`http.server` in a thread) serving `POST /v1/chat/completions`, plain and
streamed (SSE in chunked transfer encoding, with `stream_options.include_usage`), with tool
calls, usage numbers and failure injection: a hang, a connection dropped mid-answer, 429 with
Retry-After, 5xx, a 200 whose body is not JSON, invalid tool-argument JSON, prose without a tool
call, a stream that ends cleanly half-way (`Cut`: no finish_reason, no `[DONE]`), a reply cut at
the output limit (`finish="length"`); `closed_port_url()` gives an endpoint that refuses
connections. `quirks=OLLAMA` / `quirks=VLLM` serve the way those local servers' OpenAI-compatible
endpoints do (see `Quirks`). Configure the app with it
the way a user configures a model: `{"models": {"base": {"model": "openai:scripted",
"base_url": server.url}}}`.

A script is a list of steps, served in order, or a callable that sees each `Request` (its
messages, tools, `tool_choice`) and returns the step. Every request is recorded with an
estimate of its prompt tokens, and the usage a served answer reports is that estimate, so a
test can compare what the app counted with what the server served, exactly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from zocrates_nb.devtools.scripted_quirks import (
    OLLAMA,
    OPENAI,
    VLLM,
    Quirks,
)

TOKEN_CHARS = 4  # the usual estimate: a token is about four characters of English or JSON


def estimate_tokens(text: str) -> int:
    """Tokens of `text` estimated as characters / 4 (what the server reports as usage)."""
    return math.ceil(len(text) / TOKEN_CHARS) if text else 0


# ---------------------------------------------------------------------------- steps
@dataclass
class ToolCall:
    """One tool call of a reply; `args` as a string is sent as is (e.g. invalid JSON)."""

    name: str
    args: dict[str, Any] | str = field(default_factory=dict)

    @property
    def arguments(self) -> str:
        return self.args if isinstance(self.args, str) else json.dumps(self.args)


@dataclass
class Reply:
    """A normal answer: text, tool calls, or both. Usage defaults to the request's estimate."""

    text: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish: str | None = "auto"  # "auto": stop / tool_calls; "length"; None: no finish_reason
    delay: float = 0.0  # seconds the server thinks before answering


@dataclass
class Hang:
    """Accept the request and answer nothing for `seconds` (then close the connection)."""

    seconds: float = 3600.0


@dataclass
class Drop:
    """Start answering, then close the connection: a stream after `after` events, a plain
    answer after its first bytes."""

    reply: Reply = field(default_factory=lambda: Reply(text="The answer begins and then"))
    after: int = 2


@dataclass
class Cut:
    """End cleanly half-way: a stream stops after `after` events (no finish_reason, no
    `[DONE]`, the chunked body properly closed); a plain answer holds half its text and no
    finish_reason."""

    reply: Reply = field(default_factory=lambda: Reply(text="The answer begins and then"))
    after: int = 3


@dataclass
class Status:
    """An HTTP error: 429 (with Retry-After), 500, 503…"""

    code: int
    message: str = "scripted failure"
    retry_after: float | None = None


@dataclass
class Raw:
    """A body sent as is, e.g. an HTML page with status 200 where JSON was expected."""

    body: str = "<html><body>502 Bad Gateway (from a proxy)</body></html>"
    content_type: str = "text/html"
    status: int = 200


Step = Reply | Hang | Drop | Cut | Status | Raw
Script = Callable[["Request"], Step]


def text(content: str) -> Reply:
    return Reply(text=content)


def tool(name: str, **args: Any) -> Reply:
    return Reply(tool_calls=[ToolCall(name, args)])


def bad_args(name: str, raw: str = '{"query": "raft leader election"') -> Reply:
    """A tool call whose arguments are not valid JSON."""
    return Reply(tool_calls=[ToolCall(name, raw)])


# ---------------------------------------------------------------------------- requests
@dataclass
class Request:
    """One request as the server received it."""

    number: int  # 1-based, in arrival order
    path: str
    body: dict[str, Any]
    served: bool = False  # a complete answer went back (with its usage)
    usage: dict[str, int] = field(default_factory=dict)  # what the answer reported

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def tools(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.body.get("tools") or []]

    @property
    def tool_choice(self) -> Any:
        return self.body.get("tool_choice")

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def prompt_chars(self) -> int:
        return len(self.prompt_text)

    @property
    def prompt_text(self) -> str:
        """What the prompt is made of: the messages and the tool definitions, as sent."""
        tools = self.body.get("tools") or []
        return json.dumps(self.messages, ensure_ascii=False) + (
            json.dumps(tools, ensure_ascii=False) if tools else ""
        )

    @property
    def prompt_tokens(self) -> int:
        return estimate_tokens(self.prompt_text)

    def contents(self, role: str) -> list[str]:
        """The text of every message with `role` ("user", "tool", "system", "assistant")."""
        out = []
        for m in self.messages:
            if m.get("role") != role:
                continue
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            out.append(c or "")
        return out

    def tool_results(self) -> list[Any]:
        """Every tool message's content, parsed as JSON where it is JSON."""
        out: list[Any] = []
        for c in self.contents("tool"):
            try:
                out.append(json.loads(c))
            except ValueError:
                out.append(c)
        return out

    @property
    def role(self) -> str:
        """Which zocrates role sent this request, told by the tools it offers."""
        tools = set(self.tools)
        if "search_library" in tools:
            return "coordinator"
        if "search_corpus" in tools or "conclude_search" in tools:
            return "search"
        if "search_scholarly_sources" in tools or "finish_search" in tools:
            return "online_search"
        if "recommend_papers" in tools:
            return "online_synthesizer"
        if tools:
            return "verifier"
        return "synthesizer"

    def tool_calls_made(self) -> list[str]:
        """Names of the tool calls in the assistant messages sent back (the run so far)."""
        return [
            (tc.get("function") or {}).get("name", "")
            for m in self.messages
            if m.get("role") == "assistant"
            for tc in m.get("tool_calls") or []
        ]


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


# ---------------------------------------------------------------------------- the server
class ScriptedOpenAI:
    """`with ScriptedOpenAI([tool("search_corpus", query="raft"), text("…")]) as llm:` serves
    those steps at `llm.url` (an OpenAI `base_url`) and records every request."""

    def __init__(
        self, script: Sequence[Step] | Script | None = None, quirks: Quirks = OPENAI
    ) -> None:
        self.quirks = quirks
        self.requests: list[Request] = []
        self._steps: list[Step] = []
        self._fn: Script | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.exhausted = 0  # requests that found no step left (answered 500)
        self.set_script(script)
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    # ------------------------------------------------------------------ script
    def set_script(self, script: Sequence[Step] | Script | None) -> None:
        with self._lock:
            if callable(script):
                self._fn, self._steps = script, []
            else:
                self._fn, self._steps = None, list(script or [])

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    def _next(self, req: Request) -> Step | None:
        with self._lock:
            if self._steps:
                return self._steps.pop(0)
            fn = self._fn
        return fn(req) if fn is not None else None

    # ------------------------------------------------------------------ figures
    @property
    def served(self) -> list[Request]:
        return [r for r in self.requests if r.served]

    def served_usage(self) -> dict[str, int]:
        """Requests answered completely and the tokens their answers reported."""
        return _tally(self.served)

    def usage(self, role: str | None = None) -> dict[str, int]:
        """Every request received (failed ones too: a usage record counts each request sent)
        and the tokens the answers reported; of one role with `role`."""
        return _tally([r for r in self.requests if role is None or r.role == role])

    # ------------------------------------------------------------------ lifetime
    def close(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> ScriptedOpenAI:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ HTTP
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        llm = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked streams: a cut is a cut, not an end

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with llm._lock:
                    req = Request(len(llm.requests) + 1, self.path, body)
                    llm.requests.append(req)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._json(404, {"error": {"message": f"no route {self.path}"}})
                if llm.quirks.rejects_required and body.get("tool_choice") == "required":
                    error = {"message": '"tool_choice" must be "auto", "none" or a named tool',
                             "type": "BadRequestError", "code": 400}  # fmt: skip
                    return self._json(400, {"object": "error", **error})
                step = llm._next(req)
                if step is None:
                    with llm._lock:
                        llm.exhausted += 1
                    return self._json(500, {"error": {"message": "the script has no step left"}})
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._serve(req, step)

            # --- steps
            def _serve(self, req: Request, step: Step) -> None:
                if isinstance(step, Hang):
                    llm._stopping.wait(step.seconds)
                    self.close_connection = True
                    return
                if isinstance(step, Status):
                    headers = {}
                    if step.retry_after is not None:
                        headers["Retry-After"] = f"{step.retry_after:g}"
                    kind = "rate_limit_error" if step.code == 429 else "server_error"
                    error = {"message": step.message, "type": kind, "code": str(step.code)}
                    return self._json(step.code, {"error": error}, headers)
                if isinstance(step, Raw):
                    return self._bytes(step.status, step.body.encode(), step.content_type)
                reply = step.reply if isinstance(step, Drop | Cut) else step
                if reply.delay and llm._stopping.wait(reply.delay):
                    return
                reply = limited(reply, llm.quirks)
                if isinstance(step, Cut) and not req.stream:
                    half = (reply.text or "")[: len(reply.text or "") // 2]
                    reply = dataclasses.replace(reply, text=half, finish=None)
                usage = _usage(req, reply)
                if req.stream:
                    events = _stream_events(req, reply, usage, llm.quirks)
                    if isinstance(step, Drop):
                        return self._stream(events[: step.after], cut=True)
                    if isinstance(step, Cut):
                        self._stream(events[: step.after], cut=False)
                        return
                    self._stream(events, cut=False)
                    if not stream_reports_usage(req, llm.quirks):
                        usage = {}
                else:
                    data = json.dumps(_completion(req, reply, usage, llm.quirks)).encode()
                    if isinstance(step, Drop):
                        return self._cut_plain(data)
                    self._bytes(200, data, "application/json")
                req.served, req.usage = True, usage

            # --- writing
            def _json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
                self._bytes(status, json.dumps(data).encode(), "application/json", headers)

            def _bytes(
                self,
                status: int,
                data: bytes,
                content_type: str,
                headers: dict[str, str] | None = None,
            ) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()

            def _stream(self, events: list[str], *, cut: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for e in events:
                    data = e.encode()
                    self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                if cut:
                    self._hang_up()
                    return
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _cut_plain(self, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data[: max(1, len(data) // 3)])
                self.wfile.flush()
                self._hang_up()

            def _hang_up(self) -> None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

        return Handler


def _tally(requests: Sequence[Request]) -> dict[str, int]:
    return {
        "requests": len(requests),
        "input_tokens": sum(r.usage.get("prompt_tokens", 0) for r in requests),
        "output_tokens": sum(r.usage.get("completion_tokens", 0) for r in requests),
    }


def _usage(req: Request, reply: Reply) -> dict[str, int]:
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


def _tool_calls(req: Request, reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": f"call_{req.number}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for i, c in enumerate(reply.tool_calls)
    ]


def _completion(
    req: Request, reply: Reply, usage: dict[str, int], quirks: Quirks
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text}
    calls = _tool_calls(req, reply)
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


def _stream_events(
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
    calls = _tool_calls(req, reply)
    for i, c in enumerate(calls):
        if quirks.whole_tool_calls:
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


def by_role(**scripts: Sequence[Step] | Script) -> Script:
    """A script per role (`coordinator=`, `search=`, `synthesizer=`, `verifier=`,
    `online_search=`, `online_synthesizer=`): each a list
    of steps served in order or a callable; a role without one gets a 500."""
    queues: dict[str, list[Step]] = {}
    fns: dict[str, Script] = {}
    for role, script in scripts.items():
        if callable(script):
            fns[role] = script
        else:
            queues[role] = list(script)
    lock = threading.Lock()

    def serve(req: Request) -> Step:
        role = req.role
        if role in fns:
            return fns[role](req)
        with lock:
            queue = queues.get(role) or []
            if queue:
                return queue.pop(0)
        return Status(500, f"the script has no step left for the {role}")

    return serve


def closed_port_url() -> str:
    """An OpenAI-style base_url on a loopback port nothing listens on (connections refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return f"http://127.0.0.1:{port}/v1"


def model_config(url: str, model: str = "openai:scripted", **extra: Any) -> dict[str, Any]:
    """A `zocrates_config.json` object whose every role uses the server at `url`."""
    return {"models": {"base": {"model": model, "base_url": url}, **extra}}


__all__ = [
    "OLLAMA",
    "OPENAI",
    "VLLM",
    "Cut",
    "Drop",
    "Hang",
    "Quirks",
    "Raw",
    "Reply",
    "Request",
    "ScriptedOpenAI",
    "Status",
    "Step",
    "ToolCall",
    "bad_args",
    "by_role",
    "closed_port_url",
    "estimate_tokens",
    "model_config",
    "text",
    "tool",
]
