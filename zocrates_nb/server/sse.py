"""Server-Sent Events framing: typed events out (server), `(event, data)` pairs back in (client).

A checkpoint travels under the SSE event name `request_input` (what a client must answer); its
data is the `CheckpointEvent` JSON unchanged, so every `data:` line parses with
`zocrates_nb.events.event_from_json`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from dataclasses import dataclass

from zocrates_nb.events import Event

CHECKPOINT_EVENT_NAME = "request_input"
KEEPALIVE = b": keepalive\n\n"  # an SSE comment: keeps proxies from closing an idle stream


def event_name(event: Event) -> str:
    return CHECKPOINT_EVENT_NAME if event.type == "checkpoint" else event.type


def format_event(event: Event, seq: int) -> bytes:
    """One SSE message. `model_dump_json` never emits raw newlines, so one `data:` line suffices."""
    return f"id: {seq}\nevent: {event_name(event)}\ndata: {event.model_dump_json()}\n\n".encode()


@dataclass(frozen=True)
class SseMessage:
    event: str
    data: str
    id: str | None = None


class _Parser:
    """The subset of the SSE spec servers here emit, plus multi-line data and comments, as the
    spec requires; fed line by line."""

    def __init__(self) -> None:
        self.event = "message"
        self.last_id: str | None = None
        self.data: list[str] = []

    def feed(self, raw: str) -> SseMessage | None:
        line = raw.rstrip("\r\n")
        if not line:
            return self.end()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            self.event = value
        elif field == "data":
            self.data.append(value)
        elif field == "id":
            self.last_id = value
        return None

    def end(self) -> SseMessage | None:
        message = None
        if self.data:
            message = SseMessage(event=self.event, data="\n".join(self.data), id=self.last_id)
        self.event, self.data = "message", []
        return message


def parse_sse(lines: Iterable[str]) -> Iterator[SseMessage]:
    """Parse an event stream line by line."""
    parser = _Parser()
    for raw in lines:
        if (message := parser.feed(raw)) is not None:
            yield message
    if (message := parser.end()) is not None:
        yield message


async def aparse_sse(lines: AsyncIterable[str]) -> AsyncIterator[SseMessage]:
    """`parse_sse` over a stream that arrives asynchronously."""
    parser = _Parser()
    async for raw in lines:
        if (message := parser.feed(raw)) is not None:
            yield message
    if (message := parser.end()) is not None:
        yield message
