"""`zocrates-nb mcp` driven by the MCP SDK's own client: over stdio (the client starts the
command as a real subprocess, as a desktop client does) against the sample library, and over
streamable HTTP on loopback. The tools keep App's scope rules, limits and audit."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
LEASES = "Leases and Lock Delays"


@pytest.fixture(scope="module")
def home(own_sample_home: Path) -> Path:
    return own_sample_home


def server_env() -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HOME": os.environ.get("HOME", "/")}


def stdio(home: Path) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, env=server_env(),
                                 args=["-m", "zocrates_nb.cli", "--home", str(home), "mcp"])


def data(result: Any) -> Any:
    """A tool result's value: its structured content, else its text as JSON or text."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        value = result.structured_content
        return value.get("result", value) if set(value) == {"result"} else value
    text = result.content[0].text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def error_text(result: Any) -> str:
    assert result.is_error
    return " ".join(c.text for c in result.content)


def test_the_library_over_stdio(home: Path) -> None:
    async def session() -> dict[str, Any]:
        async with Client(stdio(home), read_timeout_seconds=300) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hits = data(await client.call_tool(
                "search", {"query": "how does reciprocal rank fusion combine rankings",
                           "limit": 3}))  # fmt: skip
            key = hits[0]["item_key"]
            outline = data(await client.call_tool("outline", {"key": key}))
            read = data(await client.call_tool("read", {"key": key, "ids": ["s1"]}))
            scoped = data(await client.call_tool("search", {"query": "lock", "items": [key]}))
            answer = data(await client.call_tool("ask", {
                "question": "How long must a client wait before it can take over a lock whose "
                            "holder was lost?"}))  # fmt: skip
            refusals = [
                await client.call_tool("search", {"query": "x", "limit": 500}),
                await client.call_tool("ask", {"question": "why?", "items": ["NOSUCHK1"]}),
                await client.call_tool("ask", {"question": "why?", "model": "nonsense"}),
                await client.call_tool("outline", {"key": "NOSUCHK1"}),
                await client.call_tool("ask", {"question": "x" * 50_000}),
            ]
            return {"tools": tools, "hits": hits, "outline": outline, "read": read,
                    "scoped": scoped, "answer": answer, "refusals": refusals}  # fmt: skip

    got = asyncio.run(session())
    assert set(got["tools"]) == {"search", "outline", "read", "ask"}
    assert got["tools"]["search"].input_schema["properties"]["limit"]["maximum"] == 50
    assert got["hits"][0]["title"].startswith("Hybrid Retrieval for Research Libraries")
    assert len(got["hits"]) == 3
    assert "[s1]" in got["outline"]
    assert got["read"]["assets"][0]["asset_id"] == "s1" and got["read"]["assets"][0]["text"]
    assert {h["item_key"] for h in got["scoped"]} == {got["hits"][0]["item_key"]}
    answer = got["answer"]
    assert "[1]" in answer["answer"] and answer["sources"][0]["title"].startswith(LEASES)
    assert answer["model"] and answer["session_id"] and answer["turn_id"]

    limit, scope, model, key, length = map(error_text, got["refusals"])
    assert "50" in limit
    assert "NOSUCHK1" in scope
    assert "'nonsense' is not a model string" in model
    assert "NOSUCHK1" in key
    assert "50,000" in length or "too long" in length
    for text in (scope, model, key, length):  # the product's message (after the SDK's prefix)
        assert "Traceback" not in text and not re.search(r"\b[A-Z]\w+(Error|Exception)\b", text)

    # The audit: the question is a turn of the data home, as the CLI and the panel list it.
    from zocrates_nb.app import App

    with App.open(home) as app:
        (turn,) = [t for t in app.history(answer["session_id"]) if t.turn_id == answer["turn_id"]]
    assert turn.status == "answered" and turn.answer == answer["answer"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_streamable_http_on_loopback(home: Path) -> None:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), "mcp", "--http", "--port",
         str(port)],
        env={**os.environ, **server_env()}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.3)

        async def session() -> Any:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                names = {t.name for t in (await client.list_tools()).tools}
                hits = data(await client.call_tool("search", {"query": "lock delay", "limit": 1}))
                return names, hits

        names, hits = asyncio.run(session())
        assert names == {"search", "outline", "read", "ask"}
        assert hits[0]["title"].startswith(LEASES)
        listening = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True,
                                   text=True).stdout  # fmt: skip
        local = {line.split()[3] for line in listening.splitlines()}  # the listening addresses
        assert local == {f"127.0.0.1:{port}"}, listening
    finally:
        proc.terminate()
        proc.wait(timeout=30)
