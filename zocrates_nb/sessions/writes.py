"""Zotero's write ledger in sessions.db (migration 4): one row per item of each batch written
to Zotero, recorded before the request and settled before the next batch. Shared by every
process of the data home, so a retry in another process reuses the same write token; and the
lease of each library (migration 5), so only one process at a time sends its batches."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from zocrates_nb.sessions.store import SessionStore
from zocrates_nb.writeback.ledger import Batch, BatchItem, Saved
from zocrates_nb.writeback.result import WriteError

LEASE_TTL = 120.0  # seconds a lease lasts without being renewed (each batch renews it)
LEASE_WAIT = 10.0  # seconds a second writer waits for the library before saying who holds it


class WriteLedger:
    """The `writeback.Ledger` of one sessions.db (its write transactions serialise claims)."""

    def __init__(self, store: SessionStore, *, lease_wait: float = LEASE_WAIT,
                 sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
        self.store = store
        self.lease_wait, self.sleep = lease_wait, sleep

    @contextmanager
    def lease(self, target: str) -> Iterator[None]:
        """Hold `target` (one library) for this process while it writes: another process
        waits up to `lease_wait` seconds, then is told which process holds it. A lease whose
        process has ended, or that was not renewed for LEASE_TTL, is taken over."""
        held = _held()
        key = (str(self.store.path), target)
        if key in held:  # re-entered by the same writer (this thread), whichever ledger object
            yield
            return
        holder = uuid.uuid4().hex
        deadline = time.monotonic() + self.lease_wait
        while (other := self._take(target, holder)) is not None:
            if time.monotonic() >= deadline:
                pid, since = other
                raise WriteError(
                    f"another zocrates-nb process (pid {pid}, writing since "
                    f"{time.strftime('%H:%M:%S', time.localtime(since))}) is saving to this "
                    "Zotero library; nothing was sent. Save again when it has finished."
                )
            self.sleep(0.2)
        held[key] = holder
        try:
            yield
        finally:
            held.pop(key, None)
            with self.store._tx() as c:
                c.execute("DELETE FROM zotero_leases WHERE target = ? AND holder = ?",
                          (target, holder))  # fmt: skip

    def _take(self, target: str, holder: str) -> tuple[int, float] | None:
        """Take or renew the lease; (pid, since) of the live process holding it otherwise."""
        now, host = time.time(), socket.gethostname()
        with self.store._tx() as c:
            row = c.execute("SELECT * FROM zotero_leases WHERE target = ?", (target,)).fetchone()
            if row is not None and row["holder"] != holder and row["expires"] > now and (
                    row["host"] != host or _alive(row["pid"])):  # fmt: skip
                return int(row["pid"]), float(row["acquired"])
            c.execute(
                "INSERT INTO zotero_leases (target, holder, pid, host, acquired, expires) "
                "VALUES (?,?,?,?,?,?) ON CONFLICT (target) DO UPDATE SET holder = excluded.holder, "
                "pid = excluded.pid, host = excluded.host, expires = excluded.expires, "
                "acquired = CASE WHEN zotero_leases.holder = excluded.holder "
                "THEN zotero_leases.acquired ELSE excluded.acquired END",
                (target, holder, os.getpid(), host, now, now + LEASE_TTL),
            )
        return None

    def _renew(self, target: str) -> None:
        if (holder := _held().get((str(self.store.path), target))) is not None:
            self._take(target, holder)

    def pending(self, target: str) -> list[Batch]:
        rows = self.store._conn().execute(
            "SELECT * FROM zotero_writes WHERE target = ? AND state = 'pending' "
            "ORDER BY created, batch, position",
            (target,),
        ).fetchall()
        batches: dict[str, Batch] = {}
        for r in rows:
            b = batches.setdefault(r["batch"], Batch(r["batch"], r["target"], r["token"], [],
                                                     r["version"], r["sent"]))  # fmt: skip
            b.items.append(BatchItem(r["candidate_id"], json.loads(r["item"]),
                                     json.loads(r["identities"]), r["title"]))  # fmt: skip
        return list(batches.values())

    def open_batch(self, target: str, token: str, items: list[BatchItem],
                   version: int | None = None) -> Batch | None:  # fmt: skip
        self._renew(target)
        now = time.time()
        batch = Batch(f"b{uuid.uuid4().hex[:16]}", target, token, [], version)
        with self.store._tx() as c:
            for item in items:
                taken = c.execute(
                    "SELECT 1 FROM zotero_writes WHERE target = ? AND candidate_id = ? "
                    "AND state IN ('pending', 'written')",
                    (target, item.candidate_id),
                ).fetchone()
                if taken:
                    continue
                c.execute(
                    "INSERT INTO zotero_writes (batch, target, token, version, position, "
                    "candidate_id, identities, title, item, state, created) "
                    "VALUES (?,?,?,?,?,?,?,?,?, 'pending', ?)",
                    (batch.batch_id, target, token, version, len(batch.items),
                     item.candidate_id, json.dumps(item.identities), item.title,
                     json.dumps(item.item, ensure_ascii=False), now),
                )  # fmt: skip
                batch.items.append(item)
        return batch if batch.items else None

    def mark_sent(self, batch: Batch) -> None:
        self._renew(batch.target)
        now = time.time()
        with self.store._tx() as c:
            c.execute("UPDATE zotero_writes SET sent = COALESCE(sent, ?) WHERE batch = ?",
                      (now, batch.batch_id))  # fmt: skip
        batch.sent = batch.sent or now

    def settle(self, batch: Batch, written: dict[str, str], failed: dict[str, str]) -> None:
        now = time.time()
        with self.store._tx() as c:
            for cid, key in written.items():
                c.execute(
                    "UPDATE zotero_writes SET state = 'written', item_key = ?, settled = ? "
                    "WHERE batch = ? AND candidate_id = ?",
                    (key, now, batch.batch_id, cid),
                )
            for cid, reason in failed.items():
                c.execute(
                    "UPDATE zotero_writes SET state = 'failed', reason = ?, settled = ? "
                    "WHERE batch = ? AND candidate_id = ?",
                    (reason[:500], now, batch.batch_id, cid),
                )

    def written(self, target: str, candidate_id: str) -> Saved | None:
        r = self.store._conn().execute(
            "SELECT candidate_id, target, item_key, settled FROM zotero_writes WHERE target = ? "
            "AND candidate_id = ? AND state = 'written' ORDER BY settled LIMIT 1",
            (target, candidate_id),
        ).fetchone()
        return None if r is None else Saved(r["candidate_id"], r["target"], r["item_key"] or "",
                                            r["settled"] or 0)  # fmt: skip

    def saved(self, target: str | None = None) -> dict[str, Saved]:
        out: dict[str, Saved] = {}
        # Saving to one Web API library, another's records do not count (a paper in a group
        # library is not in the user's); saving to the desktop app (or staging for it), a
        # group library's do not; the connector's (whichever library it chose) always count.
        web = bool(target and target.startswith("web:"))
        other = ("AND NOT (target LIKE 'web:%' AND target != ?)" if web else
                 "AND target NOT LIKE 'web:groups/%'" if target else "")  # fmt: skip
        rows = self.store._conn().execute(
            "SELECT candidate_id, target, item_key, identities, settled FROM zotero_writes "
            f"WHERE state = 'written' {other} ORDER BY settled", (target,) if web else ()
        )
        for r in rows:
            record = Saved(r["candidate_id"], r["target"], r["item_key"] or "", r["settled"] or 0)
            for identity in json.loads(r["identities"]):
                out.setdefault(identity, record)
        return out


_LEASES = threading.local()


def _held() -> dict[tuple[str, str], str]:
    """The leases this thread holds: (sessions.db, target) → lease id."""
    if not hasattr(_LEASES, "held"):
        _LEASES.held = {}
    held: dict[tuple[str, str], str] = _LEASES.held
    return held


def _alive(pid: int) -> bool:
    """Whether a process of this machine still runs (a lease of an ended one is free)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True
