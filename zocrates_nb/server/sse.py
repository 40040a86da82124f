"""Server-Sent Events framing of typed events (the server's side; clients read them with
httpx-sse, skipping the keepalive comments, which it hands on as messages without data).

A checkpoint travels under the SSE event name `request_input` (what a client must answer); its
data is the `CheckpointEvent` JSON unchanged, so every `data:` line parses with
`zocrates_nb.events.event_from_json`.
"""

from __future__ import annotations

import json

from zocrates_nb.events import Event
from zocrates_nb.turn import TurnView

CHECKPOINT_EVENT_NAME = "request_input"
KEEPALIVE = b": keepalive\n\n"  # an SSE comment: keeps proxies from closing an idle stream


def event_name(event: Event) -> str:
    return CHECKPOINT_EVENT_NAME if event.type == "checkpoint" else event.type


def format_event(event: Event, seq: int, view: TurnView | None = None) -> bytes:
    """One SSE message. `model_dump_json` never emits raw newlines, so one `data:` line suffices.
    A `final` carries the turn's `TurnView` (`view`, what the panel and the CLI receive too)."""
    data = event.model_dump_json()
    if view is not None:
        data = json.dumps({**view.model_dump(mode="json"), "type": event.type})
    return f"id: {seq}\nevent: {event_name(event)}\ndata: {data}\n\n".encode()
