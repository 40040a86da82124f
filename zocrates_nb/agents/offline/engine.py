"""The embedded offline engine: the coordinator, search, synthesizer and discovery policies as
pydantic-ai `FunctionModel`s (streaming like a real model), and the verifier's support score."""

from __future__ import annotations

import asyncio
import functools
import json
import re
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic_ai import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.messages import ModelMessage, ModelRequest
from pydantic_ai.models import ModelRequestParameters, StreamedResponse
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.settings import ModelSettings

from zocrates_nb.agents.offline.coordinator import coordinator_compute
from zocrates_nb.agents.offline.discovery import OfflineRecommender, online_search_compute
from zocrates_nb.agents.offline.embeddings import SentenceEmbeddings
from zocrates_nb.agents.offline.search import OfflineSearch
from zocrates_nb.agents.offline.support import offline_support
from zocrates_nb.agents.offline.writer import OfflineSynthesizer
from zocrates_nb.sessions.compaction import CHARS_PER_TOKEN, estimate_tokens

if TYPE_CHECKING:
    from zocrates_nb.retrieval.lexicon import Lexicon


def stream_from(
    compute: Callable[[list[ModelMessage], AgentInfo], ModelResponse],
) -> Callable[[list[ModelMessage], AgentInfo], AsyncIterator[str | DeltaToolCalls]]:
    """A `stream_function` that computes the whole response off the event loop, then streams it."""

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        response = await asyncio.to_thread(compute, messages, info)
        for part in response.parts:
            if isinstance(part, TextPart):
                # Stream line by line (and long lines by sentence) so the reader sees it arrive.
                for piece in re.findall(r"[^\n]*\n|[^\n]+$", part.content):
                    for sub in re.findall(r".*?(?:[.!?]\s+|$)", piece, flags=re.S):
                        if sub:
                            yield sub
                            await asyncio.sleep(0)
            elif isinstance(part, ToolCallPart):
                yield {
                    0: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }

    stream.__name__ = getattr(compute, "__name__", "offline")
    return stream


def prompt_tokens(messages: list[ModelMessage], params: ModelRequestParameters) -> int:
    """What the prompt would cost a language model: the messages, the instructions and the
    tool definitions, at the same characters-per-token rate compaction estimates with."""
    instructions = sum(len(m.instructions or "") for m in messages if isinstance(m, ModelRequest))
    tools = [*params.function_tools, *params.output_tools]
    schema = sum(
        len(t.name) + len(t.description or "") + len(json.dumps(t.parameters_json_schema))
        for t in tools
    )
    return estimate_tokens(messages) + (instructions + schema) // CHARS_PER_TOKEN


class OfflineModel(FunctionModel):
    """A `FunctionModel` whose streamed responses report the prompt's estimated size.

    pydantic-ai's streamed function responses count a constant 50 input tokens; the offline
    roles' usage would then never grow with the conversation, and compaction (which reads the
    coordinator's reported usage) would never fire offline.
    """

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with super().request_stream(
            messages, model_settings, model_request_parameters, run_context
        ) as response:
            # The stream's usage record is a plain dataclass; its output side counts as it streams.
            response._usage.input_tokens = prompt_tokens(messages, model_request_parameters)
            yield response


def function_model(
    name: str, compute: Callable[[list[ModelMessage], AgentInfo], ModelResponse]
) -> FunctionModel:
    return OfflineModel(compute, stream_function=stream_from(compute), model_name=name)


class OfflineEngine:
    """One per process: the embedding model is loaded once and shared by all roles."""

    _instances: ClassVar[dict[str, OfflineEngine]] = {}
    _lock = threading.Lock()

    def __init__(
        self, embedding_model: str | None = None, lexicon: Lexicon | None = None
    ) -> None:
        self.emb = SentenceEmbeddings(embedding_model)
        self.coordinator = function_model(
            "zocrates-offline:coordinator", functools.partial(coordinator_compute, emb=self.emb)
        )
        self.search = function_model("zocrates-offline:search", OfflineSearch(self.emb))
        self.synthesizer = function_model(
            "zocrates-offline:synthesizer", OfflineSynthesizer(self.emb, lexicon)
        )
        self.online_search = function_model("zocrates-offline:online_search",
                                            online_search_compute)  # fmt: skip
        self.online_synthesizer = function_model(
            "zocrates-offline:online_synthesizer", OfflineRecommender(self.emb)
        )

    @classmethod
    def shared(cls, embedding_model: str | None = None) -> OfflineEngine:
        key = embedding_model or ""
        with cls._lock:
            eng = cls._instances.get(key)
            if eng is None:
                eng = cls._instances[key] = cls(embedding_model)
            return eng

    def model_for(self, role: str) -> FunctionModel:
        return {
            "coordinator": self.coordinator,
            "search": self.search,
            "synthesizer": self.synthesizer,
            "online_search": self.online_search,
            "online_synthesizer": self.online_synthesizer,
        }[role]

    def support(self, claim: str, passage: str) -> float:
        return offline_support(self.emb, claim, passage)
