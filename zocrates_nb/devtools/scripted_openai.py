"""A scripted OpenAI-compatible chat server on 127.0.0.1, for tests and the token bench.

A real HTTP server (`http.server` in a thread) serving `POST /v1/chat/completions`, plain and
streamed (SSE in chunked transfer encoding, with `stream_options.include_usage`), with tool
calls, usage numbers and failure injection: a hang, a connection dropped mid-answer, 429 with
Retry-After, 5xx, a 200 whose body is not JSON, invalid tool-argument JSON, prose without a tool
call, tool calls sharing one id or with an empty id or object arguments, bytes that are not
UTF-8 (see `scripted_wire`), a stream that ends cleanly half-way (`Cut`: no finish_reason, no
`[DONE]`), a reply cut at the output limit (`finish="length"`); `closed_port_url()` gives an
endpoint that refuses connections. `quirks=OLLAMA` / `quirks=VLLM` serve the way those local
servers' OpenAI-compatible endpoints do (see `Quirks`). Configure the app with it the way a user
configures a model: `{"models": {"base": {"model": "openai:scripted", "base_url":
server.url}}}`.

A script is a list of steps, served in order, or a callable that sees each `Request` (its
messages, tools, `tool_choice`, and which zocrates role sent it: coordinator, parts, search,
synthesizer, verifier, compactor…) and returns the step; `by_role` keeps one script per role,
and `structured` answers a structured-output request (a question's parts, a verdict) as a real
server does, by the request's output tool or its JSON schema. `bad_key()` is OpenAI's 401.
Every request is recorded with an estimate of its prompt tokens, and the usage a served answer
reports is that estimate, so a test can compare what the app counted with what the server
served, exactly.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from zocrates_nb.devtools.scripted_quirks import (
    OLLAMA,
    OPENAI,
    VLLM,
    Quirks,
)
from zocrates_nb.devtools.scripted_wire import (
    Reply,
    ToolCall,
    bad_args,
    calls,
    completion,
    estimate_tokens,
    limited,
    stream_events,
    stream_reports_usage,
    structured,
    text,
    tool,
    usage_of,
    wire_bytes,
)


# ---------------------------------------------------------------------------- steps
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
    """An HTTP error: 429 (with Retry-After), 500, 503…, in OpenAI's body (`error`: message,
    type, param, code); `error_code` is the body's `error.code` (OpenAI's
    `context_length_exceeded`), else the status; `delay`: seconds before answering."""

    code: int
    message: str = "scripted failure"
    retry_after: float | None = None
    error_code: str | None = None
    delay: float = 0.0


def bad_key(delay: float = 0.0) -> Status:
    """OpenAI's refusal of a wrong API key (HTTP 401, as recorded from api.openai.com)."""
    return Status(401, "Incorrect API key provided: sk-proj-****************************wxyz. "
                  "You can find your API key at https://platform.openai.com/account/api-keys.",
                  error_code="invalid_api_key", delay=delay)  # fmt: skip


def too_long() -> Status:
    """OpenAI's refusal of a prompt longer than the model's context window."""
    return Status(400, "This model's maximum context length is 8192 tokens. However, your "
                  "messages resulted in 9500 tokens.", error_code="context_length_exceeded")


@dataclass
class Raw:
    """A body sent as is, e.g. an HTML page with status 200 where JSON was expected."""

    body: str = "<html><body>502 Bad Gateway (from a proxy)</body></html>"
    content_type: str = "text/html"
    status: int = 200


Step = Reply | Hang | Drop | Cut | Status | Raw
Script = Callable[["Request"], Step]


# ---------------------------------------------------------------------------- requests
COMPACTOR = "Summarize this research conversation"  # how the compactor's instructions begin


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
        if "question_parts" in tools or self.output_schema == "QuestionSplit":
            return "parts"
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
        if any(COMPACTOR in c for c in self.contents("system") + self.contents("developer")):
            return "compactor"
        return "synthesizer"

    @property
    def output_schema(self) -> str:
        """The name of the JSON schema a structured-output request asks the reply to follow
        (`response_format: {"type": "json_schema"}`), "" for any other request."""
        fmt = self.body.get("response_format") or {}
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
            return ""
        return str((fmt.get("json_schema") or {}).get("name") or "")

    def tool_calls_made(self) -> list[str]:
        """Names of the tool calls in the assistant messages sent back (the run so far)."""
        return [
            (tc.get("function") or {}).get("name", "")
            for m in self.messages
            if m.get("role") == "assistant"
            for tc in m.get("tool_calls") or []
        ]


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
                    if step.delay and llm._stopping.wait(step.delay):
                        return
                    headers = {}
                    if step.retry_after is not None:
                        headers["Retry-After"] = f"{step.retry_after:g}"
                    kind = {429: "rate_limit_error", 400: "invalid_request_error",
                            401: "invalid_request_error"}.get(step.code,
                                                              "server_error")  # fmt: skip
                    code = step.error_code or str(step.code)
                    error = {"message": step.message, "type": kind, "param": None, "code": code}
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
                usage = usage_of(req, reply)
                if req.stream:
                    events = stream_events(req, reply, usage, llm.quirks)
                    if isinstance(step, Drop):
                        return self._stream(events[: step.after], cut=True)
                    if isinstance(step, Cut):
                        self._stream(events[: step.after], cut=False)
                        return
                    self._stream(events, cut=False)
                    if not stream_reports_usage(req, llm.quirks):
                        usage = {}
                else:
                    data = wire_bytes(json.dumps(completion(req, reply, usage, llm.quirks)))
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
                    data = wire_bytes(e)
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


def by_role(**scripts: Sequence[Step] | Script) -> Script:
    """A script per role (`coordinator=`, `parts=`, `search=`, `synthesizer=`, `verifier=`,
    `compactor=`, `online_search=`, `online_synthesizer=`): each a list
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
    "bad_key",
    "by_role",
    "calls",
    "closed_port_url",
    "estimate_tokens",
    "model_config",
    "structured",
    "text",
    "too_long",
    "tool",
]
