"""The litellm-backed pydantic-ai model, driven by litellm's own `mock_response` (no network)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.exceptions import ModelAuthenticationError, ModelHTTPError
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models import ModelRequestParameters

from zocrates_nb.agents.litellm_model import LiteLLMModel, _litellm
from zocrates_nb.agents.models import describe_model_error, resolve_model
from zocrates_nb.config import load_settings

SECRET = "sk-zoc-lite-0123456789abcdefSECRET"


def test_text_answers_and_usage() -> None:
    model = LiteLLMModel(
        "openai/gpt-4o", extra_kwargs={"mock_response": "BM25 is a ranking function."}
    )
    agent: Agent[None, str] = Agent(model, instructions="Answer briefly.")
    result = agent.run_sync("What is BM25?")
    assert result.output == "BM25 is a ranking function."
    response = result.all_messages()[-1]
    assert isinstance(response, ModelResponse)
    assert response.provider_name == "litellm" and response.finish_reason == "stop"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
    assert model.model_id == "litellm:openai/gpt-4o"


def test_streamed_text_arrives_in_pieces() -> None:
    text = "Dense retrieval encodes queries and passages into vectors."
    model = LiteLLMModel("openai/gpt-4o", extra_kwargs={"mock_response": text})
    agent: Agent[None, str] = Agent(model)

    async def main() -> list[str]:
        async with agent.run_stream("Explain dense retrieval") as run:
            return [t async for t in run.stream_text(delta=True, debounce_by=None)]

    pieces = asyncio.run(main())
    assert "".join(pieces) == text and len(pieces) > 3


class Verdict(BaseModel):
    supported: bool
    reason: str


def test_tool_calls_become_structured_output() -> None:
    """A tool call litellm returns is mapped to pydantic-ai's output tool."""
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "final_result",
            "arguments": json.dumps({"supported": True, "reason": "the chunk says so"}),
        },
    }
    model = LiteLLMModel(
        "openai/gpt-4o", extra_kwargs={"mock_response": "", "mock_tool_calls": [call]}
    )
    agent: Agent[None, Verdict] = Agent(model, output_type=Verdict)
    result = agent.run_sync("Does chunk 3 support the claim?")
    assert result.output == Verdict(supported=True, reason="the chunk says so")
    assert any(isinstance(p, ToolCallPart) for m in result.all_messages() for p in m.parts)


def test_history_is_mapped_to_openai_format() -> None:
    model = LiteLLMModel("openai/gpt-4o")
    history = [
        ModelRequest(parts=[UserPromptPart("Find BM25 papers")]),
        ModelResponse(parts=[ToolCallPart("search_corpus", {"query": "BM25"}, tool_call_id="c1")]),
        ModelRequest(parts=[UserPromptPart("thanks")]),
        ModelResponse(parts=[TextPart("You're welcome.")]),
    ]
    mapped = model._map_messages(history, ModelRequestParameters())
    assert [m["role"] for m in mapped] == ["user", "assistant", "user", "assistant"]
    assert mapped[1]["tool_calls"][0]["function"] == {
        "name": "search_corpus",
        "arguments": '{"query":"BM25"}',
    }


def test_thinking_becomes_reasoning_effort_for_reasoning_models() -> None:
    model = LiteLLMModel("anthropic/claude-sonnet-4-5")
    settings, params = model.prepare_request({"thinking": "minimal"}, ModelRequestParameters())
    kwargs = model._completion_kwargs(
        [ModelRequest(parts=[UserPromptPart("hi")])], settings, params
    )
    assert kwargs["reasoning_effort"] == "low"  # litellm's portable scale
    plain = LiteLLMModel("openai/gpt-4o")  # not a reasoning model in litellm's map
    settings, params = plain.prepare_request({"thinking": "high"}, ModelRequestParameters())
    kwargs = plain._completion_kwargs(
        [ModelRequest(parts=[UserPromptPart("hi")])], settings, params
    )
    assert "reasoning_effort" not in kwargs


def test_a_rejected_key_is_an_authentication_error_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MISTRAL_API_KEY", SECRET)
    (tmp_path / "zocrates_config.json").write_text(
        json.dumps({"models": {"base": "litellm:mistral/mistral-large-latest"}})
    )
    resolved = resolve_model(load_settings(tmp_path), "coordinator")
    assert resolved.is_cloud and resolved.model is not None
    rejected = _litellm().AuthenticationError(
        message=f"Invalid API key: {SECRET}", llm_provider="mistral", model="mistral-large-latest"
    )
    assert isinstance(resolved.model, LiteLLMModel)
    resolved.model._extra["mock_response"] = rejected
    with pytest.raises(ModelHTTPError) as failure:
        Agent(resolved.model).run_sync("hi")
    assert isinstance(failure.value, ModelAuthenticationError) and failure.value.status_code == 401
    assert SECRET not in str(failure.value)
    message = describe_model_error(failure.value, resolved)
    assert "rejected the API key" in message and SECRET not in message
