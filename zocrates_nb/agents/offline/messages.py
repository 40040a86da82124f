"""The messages an offline role reads and writes: its tool calls paired with their results (what
its tools returned it, as the typed dicts they returned), and the responses it answers with.

What a role is told comes from its brief (`brief`), never from its prompt's prose."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from zocrates_nb.retrieval import results


@dataclass
class Exchange:
    tool: str
    args: dict[str, Any]
    result: Any
    position: int = 0  # index of the message holding the call


def exchanges(messages: Sequence[ModelMessage]) -> list[Exchange]:
    """Tool calls paired with their returns, in order."""
    calls: dict[str, ToolCallPart] = {}
    where: dict[str, int] = {}
    order: list[str] = []
    results: dict[str, Any] = {}
    for i, m in enumerate(messages):
        if isinstance(m, ModelResponse):
            for rp in m.parts:
                if isinstance(rp, ToolCallPart):
                    calls[rp.tool_call_id] = rp
                    where[rp.tool_call_id] = i
                    order.append(rp.tool_call_id)
        elif isinstance(m, ModelRequest):
            for qp in m.parts:
                if isinstance(qp, ToolReturnPart):
                    results[qp.tool_call_id] = qp.content
    out = []
    for cid in order:
        call = calls[cid]
        out.append(Exchange(call.tool_name, call.args_as_dict(), results.get(cid), where[cid]))
    return out


def result_dict(result: Any) -> dict[str, Any]:
    """A tool result as a dict, however it came back (dict, JSON text, plain text, list)."""
    if isinstance(result, dict):
        return result
    if isinstance(result, str):
        try:
            data = json.loads(result)
        except (json.JSONDecodeError, ValueError):
            return {"text": result}
        return data if isinstance(data, dict) else {"results": data}
    if isinstance(result, list):
        return {"results": result}
    return {}


def refused(result: Any) -> bool:
    """Whether the tool refused the call (budget, scope, error): it gathered nothing."""
    return results.refused(result_dict(result))


def tool_call(tool: str, args: dict[str, Any]) -> ModelResponse:
    return ModelResponse(parts=[ToolCallPart(tool, args)])


def text_response(text: str) -> ModelResponse:
    return ModelResponse(parts=[TextPart(text)])
