"""A model server's reply made valid UTF-8 before any SDK decodes it.

The SDKs decode a reply strictly (the OpenAI SDK's stream decoder raises on the first invalid
byte), so one bad byte from a server would end the turn. The HTTP transport of every configured
OpenAI-compatible model (the `openai:` route's client, and LiteLLM's) passes each response body
through `Utf8Cleaner` first: an invalid byte becomes the JSON escape of the lone surrogate
Python's `surrogateescape` reads it as (`\\udcff`), still inside the JSON string it arrived in.
The edge then replaces every lone surrogate with U+FFFD and counts it (`model_output`), so the
turn answers and its warnings say how many were replaced.
"""

from __future__ import annotations

import asyncio
import codecs
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx2  # the OpenAI SDK's own HTTP client (its legacy httpx support is deprecated)


class Utf8Cleaner:
    """Incremental: a character split across two chunks is kept whole."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")

    def feed(self, data: bytes, final: bool = False) -> bytes:
        text = self._decoder.decode(data, final)
        return text.encode("utf-8", "backslashreplace") if text else b""


class _CleanStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._cleaner = Utf8Cleaner()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            out = self._cleaner.feed(chunk)
            if out:
                yield out
        tail = self._cleaner.feed(b"", final=True)
        if tail:
            yield tail

    async def aclose(self) -> None:
        await self._inner.aclose()


class CleanTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport whose response bodies are valid UTF-8 (see the module docstring).

    A model is resolved once and used by turns on different event loops (each `asyncio.run`
    of a script, a resumed turn): pooled connections belong to one loop, so each loop gets
    its own connection pool."""

    def __init__(self) -> None:
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                               httpx2.AsyncHTTPTransport] = (
            weakref.WeakKeyDictionary()
        )  # fmt: skip

    @property
    def _inner(self) -> httpx2.AsyncHTTPTransport:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = httpx2.AsyncHTTPTransport()
        return pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if response.headers.get("content-encoding", "identity") == "identity":  # not gzip'd
            response.stream = _CleanStream(response.stream)
        return response

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        pool = self._pools.pop(loop, None)
        if pool is not None:
            await pool.aclose()


# pydantic-ai's own client defaults: the deadline itself is each call's `timeout` setting.
TIMEOUT = httpx2.Timeout(timeout=600, connect=5)


def clean_client() -> httpx2.AsyncClient:
    """An HTTP client for a model SDK, its replies made valid UTF-8."""
    return httpx2.AsyncClient(transport=CleanTransport(), timeout=TIMEOUT)


__all__ = ["CleanTransport", "Utf8Cleaner", "clean_client"]
