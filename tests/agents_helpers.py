"""Helpers for the agent and app tests: a small real index, scripted pydantic-ai models, and
running a turn to completion.

Scripted models are `FunctionModel`s whose function looks at the messages it is sent (exactly
what a real model would see) and answers with a tool call or text; the tools, the run state,
the session store and the index they act on are the real ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    RetryPromptPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from zocrates_nb.agents.offline import stream_from

RAFT, BM25, GENOME, GARDEN = "RAFTKEY2", "BMKEY234", "GENKEY23", "GARDNKY2"
PAPERS = {RAFT: "raft", BM25: "bm25", GENOME: "genome", GARDEN: "garden"}
NOTE_KEY = "NOTEKEY2"


def build_small_library(builder: Any) -> Any:
    """Four topic papers (raft, bm25, genome, garden), a short note on raft, one collection."""
    builder.collection("SYSCOLL2", "Systems")
    for key, topic in PAPERS.items():
        builder.paper(key, topic, collections=("SYSCOLL2",) if key == RAFT else (), year=2020)
    builder.note(NOTE_KEY, RAFT, "<p>Joint consensus is the key trick here.</p>", "Quick remark")
    return builder.library


def index_small_library(builder: Any, home: Path) -> Any:
    from zocrates_nb.config import Settings
    from zocrates_nb.index import Index, index_library

    library = build_small_library(builder)
    index = Index.open(home, Settings())
    index_library(library, index, progress=False)
    return index


# ---------------------------------------------------------------------------- scripted models
def scripted(
    fn: Callable[[list[ModelMessage], AgentInfo], ModelResponse], name: str
) -> FunctionModel:
    """A FunctionModel (streaming too) driven by `fn(messages, info)`."""
    return FunctionModel(fn, stream_function=stream_from(fn), model_name=f"scripted:{name}")


def call(tool: str, **args: Any) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def text(t: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(t)])


def user_prompts(messages: list[ModelMessage]) -> list[str]:
    return [
        p.content
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    ]


@dataclass
class PromptChunk:
    index: int
    title: str
    text: str


def prompt_evidence(prompt: str) -> list[PromptChunk]:
    """The `<retrieved_evidence>` chunks of a synthesizer prompt, as a scripted writer (a
    stand-in for a language model) reads them."""
    import re
    import xml.etree.ElementTree as ET

    m = re.search(r"<retrieved_evidence>.*?</retrieved_evidence>", prompt, re.S)
    if not m:
        return []
    root = ET.fromstring(m.group(0))
    return [
        PromptChunk(int(el.get("index", "0") or 0), el.get("title", ""),
                    "".join(el.itertext()).strip())
        for el in root.iter("chunk")
    ]  # fmt: skip


def tool_returns(messages: list[ModelMessage], tool: str | None = None) -> list[Any]:
    out = []
    for m in messages:
        if isinstance(m, ModelRequest):
            for p in m.parts:
                if isinstance(p, ToolReturnPart) and (tool is None or p.tool_name == tool):
                    c = p.content
                    out.append(json.loads(c) if isinstance(c, str) and c[:1] in "{[" else c)
    return out


def last_is_retry(messages: list[ModelMessage]) -> bool:
    """The last request asks the model to try again (a retry prompt, or a refused output
    tool's message, which pydantic-ai returns as the tool's result)."""
    last = messages[-1]
    return isinstance(last, ModelRequest) and any(
        isinstance(p, RetryPromptPart)
        or (isinstance(p, ToolReturnPart) and "maximum of 2 extensions" in str(p.content))
        for p in last.parts
    )


def calls_made(messages: list[ModelMessage], tool: str) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart) and p.tool_name == tool
    )


def passes(messages: list[ModelMessage]) -> int:
    """How many user prompts the search agent got (1 + extensions granted)."""
    return len(user_prompts(messages))


@dataclass
class Recorder:
    """Keeps every message list a scripted model was sent, per role."""

    seen: dict[str, list[list[ModelMessage]]] = field(default_factory=dict)

    def wrap(
        self, role: str, fn: Callable[[list[ModelMessage], AgentInfo], ModelResponse]
    ) -> FunctionModel:
        def recorded(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            self.seen.setdefault(role, []).append(list(messages))
            return fn(messages, info)

        recorded.__name__ = f"{role}_script"
        return scripted(recorded, role)


def search_then(
    queries: list[str],
    *,
    end: str = "conclude",
    gaps: list[str] | None = None,
    item_key: str | None = None,
) -> Callable[[list[ModelMessage], AgentInfo], ModelResponse]:
    """A search agent that runs `queries` (one per pass step) and then concludes (or asks for
    an extension). Each pass after an extension runs the queries again."""

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if last_is_retry(messages):
            return call("conclude_search", summary="no extension left", gaps=[])
        done_this_pass = 0
        for m in reversed(messages):
            if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts):
                break
            if isinstance(m, ModelResponse):
                done_this_pass += sum(
                    1
                    for p in m.parts
                    if isinstance(p, ToolCallPart) and p.tool_name == "search_corpus"
                )
        if done_this_pass < len(queries):
            args: dict[str, Any] = {"query": queries[done_this_pass], "limit": 3}
            if item_key:
                args["item_key"] = item_key
            return call("search_corpus", **args)
        if end == "extension":
            return call(
                "request_search_extension",
                justification="the goal needs more reading",
                covered_summary="raft elections",
                missing_aspects=["log compaction"],
            )
        if end == "text":
            return text("I am done.")
        return call("conclude_search", summary="found raft passages", notes="", gaps=gaps or [])

    return fn


def coordinator_search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A coordinator that sends every message to search_library as it is."""
    return call("search_library", request=user_prompts(messages)[-1])


async def collect(stream: Any) -> list[Any]:
    return [ev async for ev in stream]


def run(stream: Any) -> list[Any]:
    return asyncio.run(collect(stream))


def terminal(events: list[Any]) -> Any:
    ends = [e for e in events if e.type in ("final", "checkpoint", "error")]
    assert len(ends) == 1, [e.type for e in events]
    assert events[-1] is ends[0]
    return ends[0]
