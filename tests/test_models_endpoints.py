"""Models against real HTTP on loopback: what goes on the wire, and clear errors in seconds.

A small fake server speaks just enough of the OpenAI (Chat Completions and Responses),
Anthropic and ollama APIs; nothing here reaches beyond 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelRequest, UserPromptPart

from zocrates_nb.agents.models import (
    ModelRegistry,
    describe_model_error,
    resolve_model,
)
from zocrates_nb.config import load_settings
from zocrates_nb.sessions import summary_message

SECRET = "sk-zoc-test-0123456789abcdefSECRET"


class FakeLLM:
    """OpenAI/Anthropic/ollama look-alike on 127.0.0.1 that records request bodies."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.script: list[dict[str, Any]] = []  # replies to pop: {"text": …} or {"tools": […]}
        self.status = 200  # 401 to reject every key
        self.delay = 0.0
        self.capabilities: dict[str, list[str]] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                fake.requests.append({"path": self.path, "body": body})
                if fake.delay:
                    time.sleep(fake.delay)
                if self.path == "/api/show":
                    caps = fake.capabilities.get(body.get("model", ""))
                    if caps is None:
                        return self._json(404, {"error": "model not found"})
                    return self._json(200, {"capabilities": caps})
                if fake.status != 200:
                    key = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                    error = {"message": f"Incorrect API key provided: {key}", "type": "auth"}
                    return self._json(fake.status, {"error": {**error, "code": "invalid_api_key"}})
                reply = fake.script.pop(0) if fake.script else {"text": "Hello from the fake."}
                if self.path.endswith("/chat/completions"):
                    return self._chat(body, reply)
                if self.path.endswith("/responses"):
                    return self._json(200, _responses_reply(body, reply))
                if self.path.endswith("/messages"):
                    if body.get("stream"):
                        return self._sse(_anthropic_events(body, reply))
                    return self._json(200, _anthropic_reply(body, reply))
                self._json(404, {"error": f"no route {self.path}"})

            def _json(self, status: int, data: Any) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(raw)  # a client that timed out has gone

            def _sse(self, events: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for e in events:
                    self.wfile.write(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode())

            def _chat(self, body: dict[str, Any], reply: dict[str, Any]) -> None:
                tool_calls = [
                    {
                        "index": i,
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": t["name"], "arguments": json.dumps(t["args"])},
                    }
                    for i, t in enumerate(reply.get("tools", []))
                ]
                message: dict[str, Any] = {"role": "assistant", "content": reply.get("text")}
                if tool_calls:
                    message["tool_calls"] = tool_calls
                finish = "tool_calls" if tool_calls else "stop"
                usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
                base = {"id": "chatcmpl-1", "created": 0, "model": body.get("model", "m")}
                if not body.get("stream"):
                    choice = {"index": 0, "message": message, "finish_reason": finish}
                    return self._json(
                        200,
                        {**base, "object": "chat.completion", "choices": [choice], "usage": usage},
                    )
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks: list[dict[str, Any]] = []
                text = reply.get("text") or ""
                for i in range(0, len(text), 5):
                    chunks.append({"index": 0, "delta": {"content": text[i : i + 5]}})
                if tool_calls:
                    chunks.append({"index": 0, "delta": {"tool_calls": tool_calls}})
                chunks.append({"index": 0, "delta": {}, "finish_reason": finish})
                for c in chunks:
                    data = {**base, "object": "chat.completion.chunk", "choices": [c]}
                    self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                data = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
                self.wfile.write(f"data: {json.dumps(data)}\n\ndata: [DONE]\n\n".encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def bodies(self, suffix: str) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith(suffix)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _responses_reply(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": "completed",
        "model": body.get("model", "m"),
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": reply.get("text", ""), "annotations": []}
                ],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 11,
            "output_tokens": 7,
            "total_tokens": 18,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def _anthropic_reply(body: dict[str, Any], reply: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "m"),
        "content": [{"type": "text", "text": reply.get("text", "")}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 7},
    }


def _anthropic_events(body: dict[str, Any], reply: dict[str, Any]) -> list[dict[str, Any]]:
    message = {**_anthropic_reply(body, reply), "content": [], "stop_reason": None}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": reply.get("text", "")},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 7},
        },
        {"type": "message_stop"},
    ]


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    server = FakeLLM()
    yield server
    server.close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write(home: Path, models: dict[str, Any], **extra: Any) -> None:
    (home / "zocrates_config.json").write_text(json.dumps({"models": models, **extra}))


def _run(resolved: Any, prompt: str = "Hello?") -> str:
    agent: Agent[None, str] = Agent(resolved.model, model_settings=resolved.settings, name="t")
    return agent.run_sync(prompt).output


# --- thinking on the wire -------------------------------------------------------------------
def test_openai_reasoning_effort_follows_the_role(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", f"{fake.url}/v1")  # the real client, pointed at loopback
    _write(tmp_path, {"base": "openai:gpt-5.2"})
    registry = ModelRegistry(tmp_path)
    for role, expected in [("synthesizer", "high"), ("search", "low"), ("coordinator", "medium")]:
        resolved = registry.resolve(role)
        assert resolved.is_cloud and resolved.settings.get("thinking") == expected
        assert _run(resolved) == "Hello from the fake."
        assert fake.bodies("/responses")[-1]["reasoning"]["effort"] == expected
    verifier = registry.resolve("verifier")  # default off: the least the model accepts
    _run(verifier)
    assert fake.bodies("/responses")[-1]["reasoning"]["effort"] in ("none", "minimal")


def test_anthropic_thinking_budget_and_off(
    tmp_path: Path, fake: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    _write(tmp_path, {"base": "anthropic:claude-sonnet-4-5", "coordinator": {"thinking": "off"}})
    registry = ModelRegistry(tmp_path)
    _run(registry.resolve("synthesizer"))
    thinking = fake.bodies("/messages")[-1].get("thinking")
    assert thinking is not None and thinking.get("type") in ("enabled", "adaptive")
    _run(registry.resolve("coordinator"))
    off = fake.bodies("/messages")[-1].get("thinking")
    assert off is None or off.get("type") == "disabled"


def test_ollama_is_asked_to_think_only_when_its_model_can(tmp_path: Path, fake: FakeLLM) -> None:
    fake.capabilities = {"qwen3": ["completion", "tools", "thinking"], "llama3.2": ["completion"]}
    url = f"{fake.url}/v1"
    _write(
        tmp_path,
        {
            "base": {"model": "ollama:qwen3", "base_url": url},
            "search": {"model": "ollama:llama3.2", "base_url": url},
        },
    )
    registry = ModelRegistry(tmp_path)
    thinker = registry.resolve("coordinator")
    assert not thinker.is_cloud and thinker.thinking_sent
    _run(thinker)
    assert fake.bodies("/chat/completions")[-1]["reasoning_effort"] == "medium"
    plain = registry.resolve("search")
    assert not plain.thinking_sent and "thinking" not in plain.settings
    _run(plain)
    assert "reasoning_effort" not in fake.bodies("/chat/completions")[-1]
    probes = [r for r in fake.requests if r["path"] == "/api/show"]
    assert {p["body"]["model"] for p in probes} == {"qwen3", "llama3.2"}
    registry.resolve("synthesizer")  # cached per process: no second probe for qwen3
    assert len([r for r in fake.requests if r["path"] == "/api/show"]) == len(probes)


def test_local_openai_compatible_server_gets_thinking_only_when_configured(
    tmp_path: Path, fake: FakeLLM
) -> None:
    url = f"{fake.url}/v1"
    _write(
        tmp_path,
        {
            "base": {"model": "openai:qwen3-32b", "base_url": url},
            "synthesizer": {"thinking": "minimal"},
        },
    )
    registry = ModelRegistry(tmp_path)
    _run(registry.resolve("coordinator"))  # a default level, unsure the server thinks: not sent
    assert "reasoning_effort" not in fake.bodies("/chat/completions")[-1]
    resolved = registry.resolve("synthesizer")  # asked explicitly; minimal becomes low
    assert resolved.settings["thinking"] == "low"
    _run(resolved)
    assert fake.bodies("/chat/completions")[-1]["reasoning_effort"] == "low"


# --- dead and unauthorised endpoints --------------------------------------------------------
@pytest.mark.parametrize("model", ["openai:qwen3", "ollama:qwen3", "litellm:openai/qwen3"])
def test_a_closed_port_is_a_clear_error_in_seconds(tmp_path: Path, model: str) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    _write(tmp_path, {"base": {"model": model, "base_url": url}})
    resolved = resolve_model(load_settings(tmp_path), "coordinator")
    start = time.monotonic()
    with pytest.raises(Exception) as failure:
        _run(resolved)
    elapsed = time.monotonic() - start
    message = describe_model_error(failure.value, resolved)
    assert elapsed < 10, f"took {elapsed:.1f}s"
    assert message.startswith(f"The model endpoint {url} is unreachable"), message
    # Without the resolved model, the URL still comes from the failed request.
    if not model.startswith("litellm"):
        assert url in describe_model_error(failure.value)


@pytest.mark.parametrize("model", ["openai:gpt-4o", "litellm:openai/gpt-4o"])
def test_a_rejected_key_names_the_variable_and_never_the_key(
    tmp_path: Path,
    fake: FakeLLM,
    model: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.status = 401  # echoes the key it got, as real providers partly do
    monkeypatch.setenv("ZOC_TEST_KEY", SECRET)
    url = f"{fake.url}/v1"
    _write(tmp_path, {"base": {"model": model, "base_url": url, "api_key_env": "ZOC_TEST_KEY"}})
    registry = ModelRegistry(tmp_path)
    resolved = registry.resolve("coordinator")
    start = time.monotonic()
    with pytest.raises(Exception) as failure:
        _run(resolved)
    assert time.monotonic() - start < 10
    message = describe_model_error(failure.value, resolved)
    assert message == f"The model endpoint {url} rejected the API key (check ZOC_TEST_KEY)."
    assert fake.requests, "the request reached the server"
    printed = [
        message,
        repr(resolved),
        str(resolved),
        repr(resolved.model),
        repr(registry.settings),
        str(registry.settings.model_dump()),
        json.dumps(registry.doctor_info()),
        caplog.text,
        *capsys.readouterr(),
    ]
    for text in printed:
        assert SECRET not in text


def test_a_server_that_never_answers_times_out(tmp_path: Path, fake: FakeLLM) -> None:
    fake.delay = 4
    _write(tmp_path, {"base": {"model": "openai:slow", "base_url": f"{fake.url}/v1"}, "timeout": 1})
    resolved = resolve_model(load_settings(tmp_path), "search")
    start = time.monotonic()
    with pytest.raises(Exception) as failure:
        _run(resolved)
    assert time.monotonic() - start < 15
    assert "did not finish answering within models.timeout = 1 s" in describe_model_error(
        failure.value, resolved
    )


def test_a_missing_key_fails_at_resolve_naming_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    _write(tmp_path, {"base": "openai:gpt-5.2", "synthesizer": "anthropic:claude-sonnet-4-5"})
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    registry = ModelRegistry(tmp_path)
    assert registry.resolve("coordinator").model is not None
    with pytest.raises(Exception) as failure:
        registry.resolve("synthesizer")
    text = describe_model_error(failure.value)
    assert "models.synthesizer" in text and "ANTHROPIC_API_KEY" in text
    assert registry.doctor_info()["roles"]["synthesizer"]["api_key"] == "missing"


# --- conversations over the wire ------------------------------------------------------------
def test_compacted_history_goes_out_as_user_text(tmp_path: Path, fake: FakeLLM) -> None:
    _write(tmp_path, {"base": {"model": "openai:local", "base_url": f"{fake.url}/v1"}})
    resolved = resolve_model(load_settings(tmp_path), "coordinator")
    agent: Agent[None, str] = Agent(resolved.model, instructions="You are Zocrates.")
    history = [summary_message("The user studies dense retrieval.")]
    agent.run_sync("Continue", message_history=history)
    sent = fake.bodies("/chat/completions")[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are Zocrates."}
    text = json.dumps(sent)
    assert "Summary of earlier conversation: The user studies dense retrieval." in text
    roles_texts = [(m["role"], json.dumps(m)) for m in sent]
    summary_at = next(i for i, (r, t) in enumerate(roles_texts) if "Summary of earlier" in t)
    prompt_at = next(i for i, (r, t) in enumerate(roles_texts) if r == "user" and "Continue" in t)
    assert roles_texts[summary_at][0] == "user" and summary_at < prompt_at
    assert isinstance(history[0], ModelRequest) and not isinstance(
        history[0].parts[0], UserPromptPart
    )


def test_litellm_model_calls_tools_and_streams_through_a_real_server(
    tmp_path: Path, fake: FakeLLM
) -> None:
    _write(
        tmp_path, {"base": {"model": "litellm:openai/local-model", "base_url": f"{fake.url}/v1"}}
    )
    resolved = resolve_model(load_settings(tmp_path), "search")
    assert resolved.display_name.startswith("litellm:openai/local-model @ http://127.0.0.1")
    agent: Agent[None, str] = Agent(resolved.model, model_settings=resolved.settings)
    calls: list[str] = []

    @agent.tool_plain
    def search_corpus(query: str) -> str:
        """Search the library."""
        calls.append(query)
        return "BM25 was introduced by Robertson et al."

    fake.script = [
        {"tools": [{"name": "search_corpus", "args": {"query": "BM25 origin"}}]},
        {"text": "Robertson et al. introduced BM25."},
    ]
    result = agent.run_sync("Who introduced BM25?")
    assert calls == ["BM25 origin"]
    assert result.output == "Robertson et al. introduced BM25."
    second = fake.bodies("/chat/completions")[1]
    assert second["messages"][-1]["role"] == "tool"
    assert "Robertson" in second["messages"][-1]["content"]
    assert second["tools"][0]["function"]["name"] == "search_corpus"
    assert result.usage.input_tokens == 22 and result.usage.output_tokens == 14

    fake.script = [
        {"tools": [{"name": "search_corpus", "args": {"query": "streamed"}}]},
        {"text": "Streaming works across chunks."},
    ]

    async def stream() -> list[str]:
        async with agent.run_stream("Stream it") as run:
            return [t async for t in run.stream_text(delta=True, debounce_by=None)]

    pieces = asyncio.run(stream())
    assert "".join(pieces) == "Streaming works across chunks." and len(pieces) > 1
    assert calls[-1] == "streamed"
    assert all(b.get("stream") for b in fake.bodies("/chat/completions")[-2:])


def test_an_unforeseen_failure_is_one_plain_sentence_with_no_class_name_or_body(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class WeirdProviderFault(Exception):
        pass

    body = f'Traceback (most recent call last): {{"error": "internal", "key": "{SECRET}"}}'
    with caplog.at_level(logging.WARNING):
        message = describe_model_error(WeirdProviderFault(body))
    assert "WeirdProviderFault" not in message and "Traceback" not in message
    assert "internal" not in message and SECRET not in message
    assert message.endswith("failed unexpectedly (details are in the log); try again.")
    # The details go to the log, where whoever debugs it looks (the key still scrubbed).
    assert "WeirdProviderFault" in caplog.text and SECRET not in caplog.text
