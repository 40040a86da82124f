"""Server-Sent Events framing: typed events out (server), `(event, data)` pairs back in (client).

A checkpoint travels under the SSE event name `request_input` (what a client must answer); its
data is the `CheckpointEvent` JSON unchanged, so every `data:` line parses with
`zocrates_nb.events.event_from_json`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
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


def parse_sse(lines: Iterable[str]) -> Iterator[SseMessage]:
    """Parse an event stream line by line (the subset of the SSE spec servers here emit, plus
    multi-line data and comments, as the spec requires)."""
    event, last_id = "message", None
    data: list[str] = []
    for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SseMessage(event=event, data="\n".join(data), id=last_id)
            event, data = "message", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
        elif field == "id":
            last_id = value
    if data:
        yield SseMessage(event=event, data="\n".join(data), id=last_id)
