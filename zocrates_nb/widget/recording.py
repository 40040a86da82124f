"""A recording comm: drives the chat widget through its real message path without a front end.

The widget is an ipywidgets model; everything it says to a browser goes through its comm, and
everything a browser says arrives as a comm message. Swapping the comm for one that records lets
tests and `zocrates-nb bench ui` speak the exact protocol of widgets/PROTOCOL.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import comm
from comm.base_comm import BaseComm


@dataclass
class Sent:
    """One message the widget sent: a custom message or a trait update."""

    at: float  # time.perf_counter() when it was sent
    method: str  # "custom" | "update" | "open" …
    content: dict[str, Any]  # the custom message, or the changed traits


class RecordingComm(BaseComm):
    """A comm that keeps every message the kernel side publishes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[Sent] = []
        self._lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def publish_msg(
        self,
        msg_type: str,
        data: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        buffers: list[bytes] | None = None,
        **keys: Any,
    ) -> None:
        data = copy.deepcopy(data or {})
        method = str(data.get("method", msg_type))
        content = data.get("content") if method == "custom" else data.get("state", {})
        with self._lock:
            self.sent.append(Sent(time.perf_counter(), method, dict(content or {})))

    # --- reading ------------------------------------------------------------------------
    def messages(self, kind: str | None = None) -> list[dict[str, Any]]:
        """Custom messages (optionally of one `kind`), in order."""
        with self._lock:
            sent = list(self.sent)
        return [
            s.content
            for s in sent
            if s.method == "custom" and (kind is None or s.content.get("kind") == kind)
        ]

    def events(self, type_: str | None = None) -> list[dict[str, Any]]:
        """The `event` payloads of `{kind: "event"}` messages (optionally of one type)."""
        return [
            m["event"]
            for m in self.messages("event")
            if type_ is None or m["event"].get("type") == type_
        ]

    def updates(self, trait: str) -> list[Any]:
        """Every value a trait was synced with, in order."""
        with self._lock:
            sent = list(self.sent)
        return [s.content[trait] for s in sent if s.method == "update" and trait in s.content]

    def first(self, match: Callable[[Sent], bool]) -> Sent | None:
        with self._lock:
            return next((s for s in self.sent if match(s)), None)

    def clear(self) -> None:
        with self._lock:
            self.sent.clear()

    async def wait_for(
        self, match: Callable[[RecordingComm], Any], timeout: float = 60.0, poll: float = 0.005
    ) -> Any:
        """Wait (yielding to the event loop) until `match(self)` is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = match(self)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"no matching message within {timeout}s; sent: "
                    f"{[s.content.get('kind', s.content) for s in self.sent]}"
                )
            await asyncio.sleep(poll)


@contextlib.contextmanager
def recording_comms() -> Iterator[list[RecordingComm]]:
    """While active, every widget created gets a RecordingComm (listed in creation order)."""
    made: list[RecordingComm] = []
    original = comm.create_comm

    def create(*args: Any, **kwargs: Any) -> BaseComm:
        c = RecordingComm(*args, **kwargs)
        made.append(c)
        return c

    comm.create_comm = create
    try:
        yield made
    finally:
        comm.create_comm = original


def send_from_front_end(widget: Any, content: dict[str, Any]) -> None:
    """Deliver `model.send(content)` from the front end, as the kernel would."""
    widget._handle_msg(
        {"content": {"data": {"method": "custom", "content": content}}, "buffers": []}
    )
