"""What a write to Zotero needs remembered across retries, crashes and processes: each batch is
recorded (its write token or connector session, the exact items) before its request is sent,
and settled (each item written with its new key, or failed) before the next batch goes.

The records and the interface live here; `sessions/writes.py` keeps them in sessions.db."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from zocrates_nb.online.candidate import Candidate


@dataclass
class BatchItem:
    """One paper of a batch: the candidate it came from and the item JSON sent for it."""

    candidate_id: str
    item: dict[str, Any]
    identities: list[str] = field(default_factory=list)
    title: str = ""

    @classmethod
    def of(cls, c: Candidate, item: dict[str, Any]) -> BatchItem:
        return cls(c.id, item, sorted(c.identities()), c.title)


@dataclass
class Batch:
    """Items written in one request; `token` is reused by every retry of that request."""

    batch_id: str
    target: str
    token: str
    items: list[BatchItem]
    version: int | None = None  # the library's version before the batch (web read-back)
    sent: float | None = None  # when it was first sent; None: recorded, never sent


@dataclass
class Saved:
    """A paper this data home wrote to Zotero."""

    candidate_id: str
    target: str
    item_key: str
    settled: float


class Ledger(Protocol):
    def lease(self, target: str) -> AbstractContextManager[None]:
        """Hold `target` for this process while it sends batches: no other process sends a
        batch of it meanwhile (WriteError names the holder when it does not end soon)."""
        ...

    def pending(self, target: str) -> list[Batch]:
        """Batches of `target` whose outcome is not known yet (sent or not), oldest first."""
        ...

    def open_batch(self, target: str, token: str, items: list[BatchItem],
                   version: int | None = None) -> Batch | None:  # fmt: skip
        """Record a batch before it is sent, claiming its candidates: a candidate already
        pending or written for `target` is left out (None when nothing is left)."""
        ...

    def mark_sent(self, batch: Batch) -> None:
        """The batch is about to be sent (its outcome is unknown from now on)."""
        ...

    def settle(self, batch: Batch, written: dict[str, str], failed: dict[str, str]) -> None:
        """Each candidate of the batch written (candidate id → item key) or failed (→ reason)."""
        ...

    def written(self, target: str, candidate_id: str) -> Saved | None:
        """The record of `candidate_id` written to `target`, if it was."""
        ...

    def saved(self, target: str | None = None) -> dict[str, Saved]:
        """Every paper written to Zotero from this data home, by identity (doi:…, title:…);
        with a Web API `target`, none written to another Web API library."""
        ...


def target_of(library_type: str, library_id: str) -> str:
    return f"web:{library_type}s/{library_id}"


CONNECTOR = "connector"
