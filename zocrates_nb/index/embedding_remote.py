"""Passage and query embeddings from an OpenAI-compatible `/v1/embeddings` endpoint.

A lab runs one embedding server on its GPU box (Ollama, vLLM, text-embeddings-inference,
llama.cpp server) and every member's zocrates-nb embeds there. The OpenAI SDK does the HTTP:
batching is ours (`batch_size` texts per request), retries with back-off and the per-request
timeout are the SDK's. Vectors are normalised here, since servers differ on whether they do.
A failure is one plain sentence naming the server, never its body or the key.
"""

from __future__ import annotations

import math
import os
from typing import Any

from zocrates_nb.config import EmbeddingSettings
from zocrates_nb.errors import ZocratesError

REMOTE_PREFIX = "openai-compatible:"  # an index embedded by a server names its model so


class EmbeddingServerError(ZocratesError, RuntimeError):
    """The embedding server could not be reached or refused a request (plain message)."""


class RemoteEmbedder:
    """`EmbeddingBackend` over HTTP; `threads` is accepted and ignored (the server's cores)."""

    def __init__(self, settings: EmbeddingSettings) -> None:
        if not (settings.base_url and settings.model):
            raise EmbeddingServerError("index.embedding needs base_url and model")
        self.settings = settings
        self.model = settings.model
        self.base_url = settings.base_url
        self.name = f"{REMOTE_PREFIX}{settings.model}"
        self._client: Any = None

    @property
    def client(self) -> Any:
        if self._client is None:
            import openai

            env = self.settings.api_key_env
            key = os.environ.get(env, "") if env else ""
            if env and not key:
                raise EmbeddingServerError(
                    f"index.embedding.api_key_env names {env}, which is not set"
                )
            self._client = openai.OpenAI(
                base_url=self.base_url,
                api_key=key or "none",  # servers without keys ignore it; the SDK wants one
                timeout=self.settings.timeout,
                max_retries=self.settings.max_retries,
            )
        return self._client

    def embed(self, texts: list[str], *, threads: int | None = None) -> list[list[float]]:
        """Unit-length vectors, in order, `batch_size` texts per request."""
        out: list[list[float]] = []
        size = self.settings.batch_size
        for i in range(0, len(texts), size):
            out.extend(self._request(texts[i : i + size]))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._request([text])[0]

    def _request(self, texts: list[str]) -> list[list[float]]:
        import openai

        where = f"the embedding server at {self.base_url}"
        try:
            resp = self.client.embeddings.create(
                model=self.model, input=texts, encoding_format="float"
            )
        except openai.APITimeoutError:
            raise EmbeddingServerError(
                f"{where} did not answer within {self.settings.timeout:g} s "
                f"(after {self.settings.max_retries} retries)"
            ) from None
        except openai.APIConnectionError:
            raise EmbeddingServerError(
                f"cannot reach {where}: check index.embedding.base_url and that the server runs"
            ) from None
        except openai.AuthenticationError:
            raise EmbeddingServerError(
                f"{where} refused the key (HTTP 401): check index.embedding.api_key_env"
            ) from None
        except openai.NotFoundError:
            raise EmbeddingServerError(
                f"{where} has no /embeddings endpoint or no model {self.model!r} (HTTP 404)"
            ) from None
        except openai.APIStatusError as e:
            raise EmbeddingServerError(f"{where} answered HTTP {e.status_code}") from None
        except (openai.OpenAIError, ValueError, TypeError):
            raise EmbeddingServerError(f"{where} sent an answer that is not embeddings") from None
        data = sorted(resp.data, key=lambda d: d.index)
        if len(data) != len(texts):
            raise EmbeddingServerError(
                f"{where} returned {len(data)} vectors for {len(texts)} texts"
            )
        return [_unit(list(d.embedding)) for d in data]


def _unit(v: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in v))
    if not norm or not all(math.isfinite(x) for x in v):
        raise EmbeddingServerError("the embedding server returned an empty or invalid vector")
    return [float(x) / norm for x in v]
