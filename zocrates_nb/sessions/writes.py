"""Zotero's write ledger in sessions.db (migration 4): one row per item of each batch written
to Zotero, recorded before the request and settled before the next batch. Shared by every
process of the data home, so a retry in another process reuses the same write token."""

from __future__ import annotations

import json
import time
import uuid

from zocrates_nb.sessions.store import SessionStore
from zocrates_nb.writeback.ledger import Batch, BatchItem, Saved


class WriteLedger:
    """The `writeback.Ledger` of one sessions.db (its write transactions serialise claims)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

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

    def saved(self) -> dict[str, Saved]:
        out: dict[str, Saved] = {}
        rows = self.store._conn().execute(
            "SELECT candidate_id, target, item_key, identities, settled FROM zotero_writes "
            "WHERE state = 'written' ORDER BY settled"
        )
        for r in rows:
            record = Saved(r["candidate_id"], r["target"], r["item_key"] or "", r["settled"] or 0)
            for identity in json.loads(r["identities"]):
                out.setdefault(identity, record)
        return out
