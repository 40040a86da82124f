"""How real local servers' OpenAI-compatible endpoints depart from OpenAI's own: the quirks
the scripted server (`scripted_openai`, which applies them) can serve, and two profiles, Ollama's
and vLLM's."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quirks:
    """How a real server departs from OpenAI's own endpoint."""

    name: str = "openai"
    rejects_required: bool = False  # `tool_choice: "required"` is an HTTP 400
    whole_tool_calls: bool = False  # a streamed tool call arrives in one chunk, arguments whole
    stream_usage: bool = True  # a stream reports usage when `stream_options.include_usage` asks
    tool_finish: str = "tool_calls"  # the finish_reason of a reply with tool calls
    max_output_chars: int | None = None  # longer text is cut there, finish_reason "length"


OPENAI = Quirks()
# Ollama's /v1: tool_choice is ignored, tool calls come whole, a stream never reports usage,
# and a reply with tool calls still ends with finish_reason "stop".
OLLAMA = Quirks("ollama", whole_tool_calls=True, stream_usage=False, tool_finish="stop")
# vLLM (before 0.8.3): `tool_choice: "required"` is refused with a 400; tool calls come whole.
VLLM = Quirks("vllm", rejects_required=True, whole_tool_calls=True)


__all__ = ["OLLAMA", "OPENAI", "VLLM", "Quirks"]
