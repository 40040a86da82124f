"""A pydantic-ai `Model` that calls the litellm SDK (`litellm.acompletion`).

For the providers pydantic-ai has no model class for (`litellm:<provider>/<model>`, e.g.
`litellm:mistral/mistral-large-latest`, `litellm:bedrock/…`). Text, tool calls, thinking text
and streaming are mapped; files other than images are refused with a clear error. litellm is
imported on first use only: it is slow to import and not needed offline.
"""

from __future__ import annotations

import asyncio
import base64
import os
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic_ai import _utils
from pydantic_ai.exceptions import (
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    UnexpectedModelBehavior,
    UserError,
)
from pydantic_ai.messages import (
    BinaryContent,
    CompactionPart,
    FinishReason,
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.profiles import ModelProfile
from pydantic_ai.settings import ModelSettings
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.usage import RequestUsage

from zocrates_nb.agents.model_errors import IncompleteReply

CONNECT_TIMEOUT = 5.0
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "content_filter": "content_filter",
}
_EFFORT = {True: "medium", "minimal": "low", "low": "low", "medium": "medium", "high": "high"}
_EFFORT.update({"xhigh": "high", "max": "high"})
# A connection that broke after the request went out (not a refusal): the transports' names.
_DROPPED = frozenset({"ReadError", "RemoteProtocolError", "ClientPayloadError", "IncompleteRead",
                      "TransferEncodingError", "ContentLengthError", "ServerDisconnectedError"})

_IMPORT_LOCK = threading.Lock()


def _litellm() -> Any:
    """litellm, imported with its packaged price map: at import it fetches the map from the
    network unless LITELLM_LOCAL_MODEL_COST_MAP says not to, set here for the import only."""
    key = "LITELLM_LOCAL_MODEL_COST_MAP"
    with _IMPORT_LOCK:
        saved = os.environ.get(key)
        os.environ[key] = "True"
        try:
            import litellm
        finally:
            if saved is None:
                del os.environ[key]
            else:
                os.environ[key] = saved

    litellm.suppress_debug_info = True  # no "Provider List: …" banners on stdout
    return litellm


async def _settle_logging() -> None:
    """Let litellm's background logging worker finish and stop.

    litellm queues its own success/failure logging on a task bound to the running event loop;
    left alone, a loop closed by `asyncio.run` destroys it mid-wait and prints "Task was
    destroyed but it is pending!". We use none of that logging, so drain it and stop.
    """
    try:
        from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER as worker
    except ImportError:
        return
    with suppress(Exception):
        await asyncio.wait_for(worker.flush(), timeout=2.0)
    with suppress(Exception):
        await worker.stop(timeout=1.0)


def litellm_profile(model_name: str) -> ModelProfile:
    """Tools yes, native JSON output no; thinking when litellm's local map says it reasons."""
    try:
        reasons = bool(_litellm().supports_reasoning(model=model_name))
    except Exception:
        reasons = False
    return ModelProfile(
        supports_tools=True,
        supports_json_schema_output=False,
        supports_json_object_output=False,
        supports_thinking=reasons,
    )


class LiteLLMModel(Model):
    """`litellm.acompletion` behind pydantic-ai's Model interface."""

    def __init__(
        self,
        model_name: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        settings: ModelSettings | None = None,
        profile: ModelProfile | None = None,
        extra_kwargs: dict[str, Any] | None = None,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        """`extra_kwargs` go to every `acompletion` call (e.g. `mock_response` in tests);
        `redact` scrubs secrets from provider error text kept on raised errors."""
        super().__init__(settings=settings, profile=profile or litellm_profile(model_name))
        self._model_name = model_name
        self._api_base = api_base
        self._api_key = api_key
        self._extra = dict(extra_kwargs or {})
        self._redact = redact or (lambda s: s)

    # --- identity ---------------------------------------------------------------------------
    @property
    def provider(self) -> None:
        return None

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def system(self) -> str:
        return "litellm"

    @property
    def base_url(self) -> str | None:
        return self._api_base

    def __repr__(self) -> str:  # never the key
        return f"LiteLLMModel(model_name={self._model_name!r}, api_base={self._api_base!r})"

    # --- requests ---------------------------------------------------------------------------
    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        model_settings, params = self.prepare_request(model_settings, model_request_parameters)
        kwargs = self._completion_kwargs(messages, model_settings, params)
        client = self._clean_client(kwargs)
        try:
            response = await _litellm().acompletion(**kwargs)
        except Exception as e:
            raise self._map_error(e) from e
        finally:
            if client is not None:
                await client.close()
            await _settle_logging()
        return self._process_response(response)

    def _clean_client(self, kwargs: dict[str, Any]) -> Any:
        """For an OpenAI-compatible server (`openai/…` at an `api_base`), the SDK client whose
        replies are made valid UTF-8 first (`clean_bytes`), one per call (an event loop's
        connections never outlive it); None for any other provider."""
        if not (self._api_base and self._model_name.startswith("openai/")):
            return None
        from openai import AsyncOpenAI

        from zocrates_nb.agents.clean_bytes import clean_client

        client = AsyncOpenAI(
            base_url=self._api_base,
            api_key=self._api_key or "not-needed",
            http_client=clean_client(),
            max_retries=kwargs["max_retries"],
            timeout=kwargs["timeout"],
        )
        kwargs["client"] = client
        return client

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        model_settings, params = self.prepare_request(model_settings, model_request_parameters)
        kwargs = self._completion_kwargs(messages, model_settings, params)
        kwargs.update(stream=True, stream_options={"include_usage": True})
        client = self._clean_client(kwargs)
        try:
            stream = await _litellm().acompletion(**kwargs)
        except Exception as e:
            if client is not None:
                await client.close()
            raise self._map_error(e) from e
        response = LiteLLMStreamedResponse(
            model_request_parameters=params,
            _model_name=self._model_name,
            _stream=stream,
            _provider_url=self._api_base,
            _map_error=self._map_error,
        )
        try:
            yield response
        finally:
            close = getattr(stream, "aclose", None)
            if close is not None:
                with suppress(Exception):
                    await close()
            if client is not None:
                await client.close()
            await _settle_logging()

    # --- mapping out ------------------------------------------------------------------------
    def _completion_kwargs(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        params: ModelRequestParameters,
    ) -> dict[str, Any]:
        import httpx

        s: dict[str, Any] = dict(model_settings or {})
        read = float(s.get("timeout") or 120.0)
        kwargs: dict[str, Any] = {
            "model": self._model_name,
            "messages": self._map_messages(messages, params),
            "timeout": httpx.Timeout(read, connect=min(CONNECT_TIMEOUT, read)),
            "drop_params": True,  # a provider that lacks a knob ignores it instead of failing
            # Retries are the caller's (`model_guard`: counted, inside the deadline); without a
            # setting, one at most: a dead endpoint must fail in seconds.
            "max_retries": int(s["max_retries"]) if s.get("max_retries") is not None else 1,
        }
        if self._api_base:
            kwargs["api_base"] = self._api_base
        if self._api_key:
            kwargs["api_key"] = self._api_key
        tools = [_tool(t) for t in [*params.function_tools, *params.output_tools]]
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto" if params.allow_text_output else "required"
        for ours, theirs in [
            ("max_tokens", "max_tokens"),
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("seed", "seed"),
            ("presence_penalty", "presence_penalty"),
            ("frequency_penalty", "frequency_penalty"),
            ("stop_sequences", "stop"),
            ("parallel_tool_calls", "parallel_tool_calls"),
            ("extra_headers", "extra_headers"),
        ]:
            value = s.get(ours)
            if value is not None and (tools or ours != "parallel_tool_calls"):
                kwargs[theirs] = value
        thinking = params.thinking
        if thinking is not None and thinking is not False and thinking in _EFFORT:
            kwargs["reasoning_effort"] = _EFFORT[thinking]
        kwargs.update(self._extra)
        return kwargs

    def _map_messages(
        self, messages: list[ModelMessage], params: ModelRequestParameters
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for message in messages:
            if isinstance(message, ModelRequest):
                out.extend(self._map_request(message))
            else:
                mapped = self._map_response(message)
                if mapped is not None:
                    out.append(mapped)
        instructions = self._get_instruction_parts(messages, params) or []
        if instructions:
            lead = 0
            while lead < len(out) and out[lead]["role"] == "system":
                lead += 1
            out[lead:lead] = [{"role": "system", "content": p.content} for p in instructions]
        return out

    def _map_request(self, message: ModelRequest) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": _user_content(part)})
            elif isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": part.tool_call_id,
                        "content": part.model_response_str(),
                    }
                )
            elif isinstance(part, CompactionPart):
                if part.content:
                    out.append({"role": "user", "content": part.content})
            elif isinstance(part, RetryPromptPart):  # only on direct calls; agents translate it
                if part.tool_name:
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": part.tool_call_id,
                            "content": part.model_response(),
                        }
                    )
                else:
                    out.append({"role": "user", "content": part.model_response()})
            else:
                kind = getattr(part, "part_kind", type(part).__name__)
                raise UserError(f"the litellm model cannot send a {kind!r} part")
        return out

    @staticmethod
    def _map_response(message: ModelResponse) -> dict[str, Any] | None:
        texts = [p.content for p in message.parts if isinstance(p, TextPart)]
        calls = [
            {
                "id": p.tool_call_id,
                "type": "function",
                "function": {"name": p.tool_name, "arguments": p.args_as_json_str()},
            }
            for p in message.parts
            if isinstance(p, ToolCallPart)
        ]
        if not texts and not calls:
            return None
        mapped: dict[str, Any] = {"role": "assistant", "content": "\n\n".join(texts) or None}
        if calls:
            mapped["tool_calls"] = calls
        return mapped

    # --- mapping back -----------------------------------------------------------------------
    def _process_response(self, response: Any) -> ModelResponse:
        choice = response.choices[0]
        msg = choice.message
        parts: list[ModelResponsePart] = []
        reasoning = getattr(msg, "reasoning_content", None)
        if isinstance(reasoning, str) and reasoning:
            parts.append(ThinkingPart(content=reasoning))
        if msg.content:
            parts.append(TextPart(content=msg.content))
        for call in msg.tool_calls or []:
            parts.append(
                ToolCallPart(
                    tool_name=call.function.name,
                    args=call.function.arguments or "{}",
                    tool_call_id=call.id or _utils.generate_tool_call_id(),
                )
            )
        return ModelResponse(
            parts=parts,
            usage=_usage(getattr(response, "usage", None)),
            model_name=getattr(response, "model", None) or self._model_name,
            provider_name="litellm",
            provider_url=self._api_base,
            provider_response_id=getattr(response, "id", None),
            finish_reason=_FINISH.get(choice.finish_reason or ""),
        )

    def _map_error(self, e: Exception) -> Exception:
        """litellm's exceptions → pydantic-ai's categories, secrets scrubbed from the text.

        litellm reports failures of its own client as HTTP 500 (a refused connection, a dropped
        one, a body that is not JSON, a stream without a finish reason): the cause decides, so
        no status the server never sent reaches the researcher."""
        lt = _litellm()
        name = self._model_name
        text = self._redact(str(getattr(e, "message", "") or e))
        if self._api_key:
            text = text.replace(self._api_key, "***")
        causes = _causes(e)
        names = {type(c).__name__ for c in causes}
        said = " ".join(str(c) for c in causes).lower()
        if "ended before a finish_reason" in said:
            return IncompleteReply(name, None)
        timeout_names = {"APITimeoutError", "ConnectTimeout", "ReadTimeout", "PoolTimeout"}
        if isinstance(e, lt.Timeout) or names & timeout_names or any(
            isinstance(c, TimeoutError) for c in causes
        ):
            return ModelTimeoutError(name, text)
        if names & _DROPPED or "payload is not completed" in said:
            return ModelConnectionError(name, text, phase="read")
        connect_names = {"ConnectError", "ClientConnectorError", "ConnectionRefusedError"}
        if names & connect_names:
            return ModelConnectionError(name, text, phase="connect")
        if isinstance(e, lt.APIConnectionError) or "APIConnectionError" in names or any(
            isinstance(c, ConnectionError) for c in causes
        ):
            return ModelConnectionError(name, text)
        if "empty or invalid response" in said:
            return UnexpectedModelBehavior(
                f"Invalid response from {name}: expected JSON data (litellm: {text[:200]})"
            )
        status = getattr(e, "status_code", None)
        if isinstance(status, int) and status >= 400:
            category: type[Any]
            if status in (401, 403):
                category = ModelAuthenticationError
            elif status == 404:
                category = ModelNotFoundError
            elif status == 429:
                category = ModelRateLimitError
            elif isinstance(e, lt.ContextWindowExceededError):
                category = ModelContextWindowExceededError
            elif status >= 500:
                category = ModelServerError
            else:
                category = ModelRequestRejectedError
            return ModelHTTPError.for_category(
                category, status_code=status, model_name=name, body=text
            )
        return e


@dataclass
class LiteLLMStreamedResponse(StreamedResponse):
    """litellm's streamed chunks (OpenAI delta format) as pydantic-ai stream events."""

    _model_name: str
    _stream: Any
    _provider_url: str | None
    _map_error: Callable[[Exception], Exception]
    _timestamp: datetime = field(default_factory=_utils.now_utc)

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        substance = False  # anything the server said: text, a tool call, thinking, usage
        try:
            async for chunk in self._stream:
                usage = getattr(chunk, "usage", None)
                if usage is not None:
                    self._usage = _usage(usage)
                for choice in getattr(chunk, "choices", None) or []:
                    delta = choice.delta
                    substance = substance or bool(
                        delta.content
                        or getattr(delta, "tool_calls", None)
                        or getattr(delta, "reasoning_content", None)
                    )
                    reasoning = getattr(delta, "reasoning_content", None)
                    if isinstance(reasoning, str) and reasoning:
                        for event in self._parts_manager.handle_thinking_delta(
                            vendor_part_id="reasoning", content=reasoning
                        ):
                            yield event
                    if delta.content:
                        for event in self._parts_manager.handle_text_delta(
                            vendor_part_id="content", content=delta.content
                        ):
                            yield event
                    for call in getattr(delta, "tool_calls", None) or []:
                        fn = call.function
                        for event in self._parts_manager.handle_tool_call_delta_events(
                            vendor_part_id=f"tool-{call.index}",
                            tool_name=getattr(fn, "name", None) or None,
                            args=getattr(fn, "arguments", None) or None,
                            tool_call_id=call.id or None,
                        ):
                            yield event
                    if choice.finish_reason:
                        self.finish_reason = _FINISH.get(choice.finish_reason)
        except Exception as e:
            mapped = self._map_error(e)
            if mapped is e:
                raise
            raise mapped from e
        # Usage the server never sent is litellm's own estimate: not counted. (Its stream keeps
        # the server's chunks; the usage chunk it builds at the end is not among them.)
        received = getattr(self._stream, "chunks", None)
        if isinstance(received, list):
            reported = any(getattr(c, "usage", None) is not None for c in received)
            if not reported:
                self._usage = RequestUsage()
            substance = substance or reported
        # Nothing at all (litellm makes up a "stop" chunk for an HTML page where server-sent
        # events were expected): not an answer.
        if not substance:
            raise UnexpectedModelBehavior(
                f"Invalid response from {self._model_name}: expected JSON data, the stream ended "
                "without content"
            )

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def provider_name(self) -> str:
        return "litellm"

    @property
    def provider_url(self) -> str | None:
        return self._provider_url

    @property
    def timestamp(self) -> datetime:
        return self._timestamp


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and cur not in out and len(out) < 20:
        out.append(cur)
        cur = cur.__cause__ or cur.__context__
    return out


def _usage(usage: Any) -> RequestUsage:
    if usage is None:
        return RequestUsage()
    return RequestUsage(
        input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
    )


def _tool(t: ToolDefinition) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": t.name,
            "description": t.description or "",
            "parameters": t.parameters_json_schema,
        },
    }


def _user_content(part: UserPromptPart) -> str | list[dict[str, Any]]:
    if isinstance(part.content, str):
        return part.content
    items: list[dict[str, Any]] = []
    for item in part.content:
        if isinstance(item, str):
            items.append({"type": "text", "text": item})
        elif isinstance(item, ImageUrl):
            items.append({"type": "image_url", "image_url": {"url": item.url}})
        elif isinstance(item, BinaryContent) and item.is_image:
            data = base64.b64encode(item.data).decode()
            url = f"data:{item.media_type};base64,{data}"
            items.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise UserError(f"the litellm model cannot send {type(item).__name__} content")
    if all(i["type"] == "text" for i in items):
        return "\n".join(i["text"] for i in items)
    return items


__all__ = ["LiteLLMModel", "LiteLLMStreamedResponse", "litellm_profile"]
