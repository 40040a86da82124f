"""Helpers for the tests that drive the App through a configured model: the scripted
OpenAI-compatible server on loopback (`zocrates_nb.devtools.scripted_openai`), a script per
role, and a data home whose `zocrates_config.json` points every role at it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from zocrates_nb.app import App
from zocrates_nb.devtools.scripted_openai import (
    Request,
    ScriptedOpenAI,
    Step,
    by_role,
    model_config,
    structured,
    text,
    tool,
)

QUESTION = "How does Raft elect a leader?"
ANSWER = "Raft elects a leader with randomized election timeouts [1]."


def configure(home: Path, url: str, model: str = "openai:scripted", **models: Any) -> None:
    tmp = home / "zocrates_config.json.tmp"
    tmp.write_text(json.dumps(model_config(url, model, **models)), "utf-8")
    os.replace(tmp, home / "zocrates_config.json")


def open_app(
    home: Path, llm: ScriptedOpenAI, index: Any, model: str = "openai:scripted", **models: Any
) -> App:
    configure(home, llm.url, model, **models)
    return App.open(home, index=index)


def coordinator(req: Request) -> Step:
    """Sends the question to the search pipeline (its answer ends the coordinator's run)."""
    return tool("search_library", request=QUESTION)


def searcher(req: Request) -> Step:
    """Searches once, then concludes."""
    if "search_corpus" not in req.tool_calls_made():
        return tool("search_corpus", query="raft leader election", limit=3)
    return tool("conclude_search", summary="Raft elections", gaps=[])


def verifier(req: Request) -> Step:
    return tool(req.tools[0], supported_probability=0.9, reason="stated")


def one_question(req: Request) -> Step:
    """The question's parts, as a model reads a question that asks one thing: none."""
    return structured(req, {"parts": []})


def roles(**overrides: Any) -> Any:
    """A script per role: the question is one (no parts), search once, answer `ANSWER`, judge
    every citation supported, summarize in one sentence."""
    scripts: dict[str, Any] = {
        "coordinator": coordinator,
        "parts": one_question,
        "search": searcher,
        "synthesizer": lambda req: text(ANSWER),
        "verifier": verifier,
        "compactor": lambda req: text("The researcher asked how Raft elects a leader."),
    }
    return by_role(**{**scripts, **overrides})


def of_role(llm: ScriptedOpenAI, role: str) -> list[Request]:
    return [r for r in llm.requests if r.role == role]


def assert_usage_served(usage: Any, llm: ScriptedOpenAI) -> None:
    """The turn's usage is what the server was sent and served, request for request."""
    sent = llm.usage()
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        sent["requests"], sent["input_tokens"], sent["output_tokens"],
    )  # fmt: skip
    for role, u in usage.roles.items():
        assert u.requests == len(of_role(llm, role)), role
    assert usage.requests == sum(u.requests for u in usage.roles.values())
