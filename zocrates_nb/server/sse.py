"""Server-Sent Events framing of typed events (the server's side; clients read them with
httpx-sse, skipping the keepalive comments, which it hands on as messages without data).

A checkpoint travels under the SSE event name `request_input` (what a client must answer); its
data is the `CheckpointEvent` JSON unchanged, so every `data:` line parses with
`zocrates_nb.events.event_from_json`.
"""

from __future__ import annotations

from zocrates_nb.events import Event

CHECKPOINT_EVENT_NAME = "request_input"
KEEPALIVE = b": keepalive\n\n"  # an SSE comment: keeps proxies from closing an idle stream


def event_name(event: Event) -> str:
    return CHECKPOINT_EVENT_NAME if event.type == "checkpoint" else event.type


def format_event(event: Event, seq: int) -> bytes:
    """One SSE message. `model_dump_json` never emits raw newlines, so one `data:` line suffices."""
    return f"id: {seq}\nevent: {event_name(event)}\ndata: {event.model_dump_json()}\n\n".encode()
