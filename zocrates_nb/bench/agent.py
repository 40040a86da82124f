"""`zocrates-nb bench tokens --agent`: what one full-budget search pass sends a model.

A scripted model (`devtools.scripted_openai`, on loopback, configured the way a user configures
an endpoint) plays every role over the data home's real index: the search agent spends its
whole retrieval budget (searches, outlines, section reads), then concludes; the writer and the
verifier answer. The server counts what each request carried (characters / 4 as tokens), per
role; the turn's own usage record is printed beside it (the two must agree). Sessions go to a
temporary data home: the researcher's own sessions are never touched.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import tempfile
from pathlib import Path
from typing import Any

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

QUESTION = "How do consensus protocols elect a leader and keep replicated logs safe?"
QUERIES = [
    "leader election",
    "log replication safety",
    "consensus under failures",
    "quorum and majority",
    "membership changes",
    "snapshots and log compaction",
]


def full_budget_searcher(budget: int) -> Any:
    """Searches, opens outlines and reads sections until `budget` calls are spent, then
    concludes: the most a pass can send."""

    def script(req: Request) -> Step:
        made = req.tool_calls_made()
        calls = [c for c in made if c in ("search_corpus", "get_document_toc", "read_document")]
        n = len(calls)
        if n >= budget:
            return tool("conclude_search", summary="consensus, elections, logs", gaps=[])
        results = [r for r in req.tool_results() if isinstance(r, dict)]
        keys = [k for r in results for k in (r.get("papers") or {})] or [
            x.get("item_key") for r in results for x in r.get("results") or [] if x.get("item_key")
        ]
        outlines = [r for r in results if "outline" in r]
        step = n % 4
        if step == 1 and keys:
            return tool("get_document_toc", item_key=keys[(n // 4) % len(keys)])
        if step == 2 and outlines:
            outline = outlines[-1]
            ids = re.findall(r"\[(s\d+)\]", str(outline.get("outline", "")))
            if ids:
                return tool(
                    "read_document", item_key=outline["item_key"], asset_id=ids[len(ids) // 2]
                )
        return tool("search_corpus", query=QUERIES[(n // 2) % len(QUERIES)], limit=8)

    return script


def _verifier(req: Request) -> Step:
    return tool(req.tools[0], supported_probability=0.9, reason="scripted")


def run_pass(home: Path, *, full_history: bool = False) -> dict[str, Any]:
    """One question with a full-budget search pass; the figures per role."""
    import json

    from zocrates_nb.agents import search_context
    from zocrates_nb.app import App
    from zocrates_nb.config import load_settings
    from zocrates_nb.index import Index

    budget = load_settings(home).retrieval.budget
    search_context.ECONOMY = not full_history
    try:
        with (
            tempfile.TemporaryDirectory(prefix="zocrates-bench-") as tmp,
            ScriptedOpenAI() as llm,
            Index.open(home, load_settings(home)) as index,
        ):
            Path(tmp, "zocrates_config.json").write_text(json.dumps(model_config(llm.url)))
            llm.set_script(
                by_role(
                    coordinator=lambda req: tool("search_library", request=QUESTION),
                    parts=lambda req: structured(req, {"parts": []}),
                    search=full_budget_searcher(budget),
                    synthesizer=lambda req: text("Leaders are elected by a majority [1] [2]."),
                    verifier=_verifier,
                )
            )
            with App.open(Path(tmp), index=index) as app:
                final = asyncio.run(_last(app.ask(QUESTION, hitl=False)))
            roles: dict[str, dict[str, Any]] = {}
            for r in llm.served:
                row = roles.setdefault(
                    r.role, {"requests": 0, "prompt_tokens": 0, "largest_prompt_chars": 0}
                )
                row["requests"] += 1
                row["prompt_tokens"] += r.usage.get("prompt_tokens", 0)
                row["largest_prompt_chars"] = max(row["largest_prompt_chars"], r.prompt_chars)
            served = llm.served_usage()
    finally:
        search_context.ECONOMY = True
    usage = getattr(final, "usage", None)
    return {
        "status": getattr(final, "type", "?"),
        "budget": budget,
        "tool_calls": getattr(final, "tool_calls", 0),
        "search_prompt_tokens": roles.get("search", {}).get("prompt_tokens", 0),
        "roles": roles,
        "served_requests": served["requests"],
        "recorded_requests": usage.requests if usage else None,
        "served_input_tokens": served["input_tokens"],
        "recorded_input_tokens": usage.input_tokens if usage else None,
    }


async def _last(stream: Any) -> Any:
    last = None
    async for event in stream:
        last = event
    return last


def bench_agent_tokens(args: argparse.Namespace) -> dict[str, Any]:
    """The pass as the agent runs it, and (for comparison) with its whole history resent."""
    after = run_pass(args.home)
    out: dict[str, Any] = {"tokens": "characters / 4 of each request as sent", **after}
    if getattr(args, "compare", False):
        before = run_pass(args.home, full_history=True)
        out["full_history_search_prompt_tokens"] = before["search_prompt_tokens"]
        out["full_history_roles"] = before["roles"]
    return out


__all__ = ["bench_agent_tokens", "full_budget_searcher", "run_pass"]
