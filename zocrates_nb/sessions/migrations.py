"""Numbered migrations of `sessions.db`, keyed on `PRAGMA user_version`.

Opening a store applies every migration its file has not had yet, each in one transaction
together with its new version number, so a crash mid-way leaves the last complete version and
two processes opening an old file at once migrate it once. A file written by a newer zocrates-nb
(a version this code does not know) is refused with a plain message, never downgraded.

1. The first release's schema: sessions, messages, turns (an untyped `payload`), state.
2. A turn is one typed record: `turns.result` holds exactly `TurnResult` JSON. The first
   release's payloads are converted with everything a surface showed: sources, citations,
   evidence (filled in from the session's audit trail where the payload lacked it), usage,
   timings, error, the pending checkpoint, model, seconds and search goal.
3. Discovery's candidates: each discover run's papers are remembered (so `stage add ID` works in
   another process), and a staged flag makes the staging list. A list belongs to a session, or
   to the data home itself (`list_id` ''); deleting a session deletes its list.
4. Zotero's write ledger: every batch written to Zotero (its write token or connector session,
   the exact items sent, each item's outcome and new key), recorded before the request and
   settled before the next batch, so a retry, a crash or a re-run never writes a paper twice;
   it is also the data home's record of what it saved (of the data home, not of a session).
5. One writer per Zotero library: a lease per write target (a library, the connector) held by
   the process sending its batches, so no other process sends a batch that is in flight.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from zocrates_nb.errors import ZocratesError
from zocrates_nb.turn import (
    AskOptions,
    CheckpointInfo,
    Citation,
    EvidenceRow,
    Source,
    TurnResult,
    Usage,
)

Migration = Callable[[sqlite3.Connection], None]
M = TypeVar("M", bound=BaseModel)


class NewerSessionStore(ZocratesError):
    """sessions.db was written by a newer zocrates-nb."""


# --------------------------------------------------------------------------------- 1
_V1_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    title TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    turn_id TEXT,
    kind TEXT NOT NULL DEFAULT 'turn',
    data TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, seq);
CREATE TABLE IF NOT EXISTS turns (
    turn_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    scope TEXT NOT NULL DEFAULT '{}',
    status TEXT NOT NULL,
    answer TEXT NOT NULL DEFAULT '',
    payload TEXT NOT NULL DEFAULT '{}',
    created REAL NOT NULL,
    updated REAL NOT NULL,
    UNIQUE (session_id, idx)
);
CREATE TABLE IF NOT EXISTS state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,
    data TEXT NOT NULL,
    version INTEGER NOT NULL DEFAULT 0
);
"""


def initial_schema(c: sqlite3.Connection) -> None:
    # Statement by statement: executescript would commit mid-transaction.
    for stmt in filter(str.strip, _V1_SCHEMA.split(";")):
        c.execute(stmt)


# --------------------------------------------------------------------------------- 2
def typed_turns(c: sqlite3.Connection) -> None:
    c.execute(
        """CREATE TABLE turns_v2 (
            turn_id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            idx INTEGER NOT NULL,
            status TEXT NOT NULL,
            result TEXT NOT NULL,
            created REAL NOT NULL,
            updated REAL NOT NULL,
            UNIQUE (session_id, idx)
        )"""
    )
    states = {
        r["session_id"]: _loads(r["data"]) for r in c.execute("SELECT session_id, data FROM state")
    }
    for row in c.execute("SELECT * FROM turns ORDER BY session_id, idx").fetchall():
        result = first_release_turn(row, states.get(row["session_id"], {}))
        c.execute(
            "INSERT INTO turns_v2 (turn_id, session_id, idx, status, result, created, updated) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (result.turn_id, result.session_id, result.index, result.status,
             result_json(result), row["created"], row["updated"]),
        )  # fmt: skip
    c.execute("DROP TABLE turns")
    c.execute("ALTER TABLE turns_v2 RENAME TO turns")


def result_json(result: TurnResult) -> str:
    """What `turns.result` holds: the record, without its timestamps (the row's columns) and
    derived fields."""
    fields = set(TurnResult.model_fields) - {"created", "updated"}
    return result.model_dump_json(include=fields, exclude_computed_fields=True)


def first_release_turn(row: sqlite3.Row, state: dict[str, Any]) -> TurnResult:
    """A first-release turn row (prompt, scope, status, answer, untyped payload) as a
    `TurnResult`; the session's state supplies the pending checkpoint and the audit record."""
    turn_id = row["turn_id"]
    p = _loads(row["payload"])
    scope = _loads(row["scope"])
    snap = state.get("checkpoint") or {}
    pending = snap if snap.get("turn_id") == turn_id else {}
    run = pending.get("payload") or {}
    audit: dict[str, Any] = next(
        (a for a in state.get("audit") or [] if a.get("turn_id") == turn_id), {}
    )
    cited = _list(Source, p.get("cited_sources"))
    others = _list(Source, p.get("other_sources"))
    citations = _list(Citation, p.get("citations"))
    papers = {s.item_key: s for s in [*cited, *others, *_list(Source, audit.get("sources"))]}
    cited_ids = {c.chunk_id for c in citations} | set(audit.get("cited_chunk_ids") or [])
    support = {c.chunk_id: c.support for c in citations if c.support is not None}
    checkpoint = None
    if pending:
        card = p.get("checkpoint") or run.get("checkpoint") or {}
        checkpoint = _one(CheckpointInfo, {"interrupt_id": pending.get("interrupt_id"), **card})
    usage = p.get("usage") or audit.get("usage") or run.get("usage") or {}
    options = AskOptions(
        items=list(scope.get("items") or []) or None,
        collections=list(scope.get("collections") or []) or None,
        hitl=bool(run.get("hitl", True)),
        model=run.get("model") or None,
    )
    return TurnResult(
        turn_id=turn_id,
        session_id=row["session_id"],
        index=int(row["idx"]),
        prompt=row["prompt"],
        options=options,
        status=row["status"],
        answer=row["answer"] or "",
        cited_sources=cited,
        other_sources=others,
        citations=citations,
        evidence=_evidence(
            p.get("evidence") or audit.get("evidence") or [], papers, cited_ids, support
        ),
        usage=_one(Usage, usage) or Usage(),
        timings=p.get("timings") or audit.get("timings") or run.get("timings") or {},
        seconds=float(p.get("seconds") or run.get("seconds") or audit.get("seconds") or 0.0),
        model=str(p.get("model") or ""),
        search_goal=str(p.get("search_goal") or audit.get("search_goal") or run.get("goal") or ""),
        tool_calls=int(audit.get("tool_calls") or (checkpoint.calls_used if checkpoint else 0)),
        extensions=int(audit.get("extensions") or 0),
        checkpoint=checkpoint,
        error=p.get("error"),
    )


def _evidence(
    rows: list[dict[str, Any]],
    papers: dict[str, Source],
    cited_ids: set[str],
    support: dict[str, float],
) -> list[EvidenceRow]:
    """First-release evidence rows, with what they left to the sources and citations."""
    out: list[EvidenceRow] = []
    position = 0
    for e in rows:
        cid = str(e.get("chunk_id", ""))
        paper = papers.get(e.get("item_key", ""))
        ranked = e["ranked"] if isinstance(e.get("ranked"), bool) else (
            e.get("rerank_score") is not None or bool(e.get("rerank_method")))  # fmt: skip
        position += ranked
        row = {k: v for k, v in e.items() if v is not None}
        row.update(
            authors=e.get("authors") or (paper.authors if paper else []),
            year=e.get("year") or (paper.year if paper else None),
            title=e.get("title") or (paper.title if paper else ""),
            words=e.get("words") or len(str(e.get("text", "")).split()),
            retrieval_rank=e.get("retrieval_rank") or e.get("rank"),
            ranked=ranked,
            rerank_rank=e.get("rerank_rank") or (position if ranked else None),
            cited=e["cited"] if isinstance(e.get("cited"), bool) else cid in cited_ids,
            support=e.get("support") if e.get("support") is not None else support.get(cid),
        )
        parsed = _one(EvidenceRow, row)
        if parsed is not None:
            out.append(parsed)
    return out


def _one(model: type[M], data: Any) -> M | None:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


def _list(model: type[M], data: Any) -> list[M]:
    return [m for m in (_one(model, d) for d in data or []) if m is not None]


def _loads(text: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


# --------------------------------------------------------------------------------- 3
def candidate_staging(c: sqlite3.Connection) -> None:
    c.execute(
        """CREATE TABLE candidates (
            list_id TEXT NOT NULL,
            id TEXT NOT NULL,
            data TEXT NOT NULL,
            query TEXT NOT NULL DEFAULT '',
            found REAL NOT NULL,
            staged INTEGER,  -- position on the staging list; NULL when not staged
            PRIMARY KEY (list_id, id)
        )"""
    )
    c.execute("CREATE INDEX candidates_staged ON candidates(list_id, staged)")
    c.execute(
        """CREATE TRIGGER candidates_of_deleted_session AFTER DELETE ON sessions
           BEGIN DELETE FROM candidates WHERE list_id = OLD.id; END"""
    )


# --------------------------------------------------------------------------------- 4
def zotero_writes(c: sqlite3.Connection) -> None:
    c.execute(
        """CREATE TABLE zotero_writes (
            batch TEXT NOT NULL,
            target TEXT NOT NULL,     -- 'web:users/<id>', 'web:groups/<id>' or 'connector'
            token TEXT NOT NULL,      -- the batch's Zotero-Write-Token or connector sessionID
            version INTEGER,          -- the library version before the batch (web: read-back)
            position INTEGER NOT NULL,
            candidate_id TEXT NOT NULL,
            identities TEXT NOT NULL, -- JSON list: doi:…, arxiv:…, title:…
            title TEXT NOT NULL DEFAULT '',
            item TEXT NOT NULL,       -- the item JSON exactly as sent (a retry sends the same)
            state TEXT NOT NULL,      -- pending | written | failed
            item_key TEXT,
            reason TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            sent REAL,                -- first sent (NULL: recorded, not sent yet)
            settled REAL,
            PRIMARY KEY (batch, position)
        )"""
    )
    c.execute("CREATE INDEX zotero_writes_by_target ON zotero_writes(target, state)")
    c.execute("CREATE INDEX zotero_writes_by_candidate ON zotero_writes(candidate_id, state)")


def zotero_write_leases(c: sqlite3.Connection) -> None:
    c.execute(
        """CREATE TABLE zotero_leases (
            target TEXT PRIMARY KEY,  -- the library written to (as zotero_writes.target)
            holder TEXT NOT NULL,     -- the process holding it: a random id per lease
            pid INTEGER NOT NULL,     -- its process id, to name it and to see it has ended
            host TEXT NOT NULL,       -- the machine it runs on (a pid means nothing elsewhere)
            acquired REAL NOT NULL,
            expires REAL NOT NULL     -- renewed while it writes; taken over after
        )"""
    )


# --------------------------------------------------------------------------------- apply
MIGRATIONS: tuple[Migration, ...] = (initial_schema, typed_turns, candidate_staging,
                                     zotero_writes, zotero_write_leases)  # fmt: skip
SCHEMA_VERSION = len(MIGRATIONS)


def user_version(c: sqlite3.Connection) -> int:
    return int(c.execute("PRAGMA user_version").fetchone()[0])


def migrate(transaction: Callable[[], AbstractContextManager[sqlite3.Connection]],
            path: Path) -> int:
    """Bring the file up to SCHEMA_VERSION, one migration per transaction; the version now."""
    for number, step in enumerate(MIGRATIONS, 1):
        with transaction() as c:
            version = user_version(c)
            if version > SCHEMA_VERSION:
                raise NewerSessionStore(
                    f"{path} was written by a newer zocrates-nb (sessions schema {version}; "
                    f"this version knows up to {SCHEMA_VERSION}): upgrade zocrates-nb to open it"
                )
            if version >= number:
                continue
            step(c)
            c.execute(f"PRAGMA user_version = {number}")
    return SCHEMA_VERSION


__all__ = ["MIGRATIONS", "SCHEMA_VERSION", "NewerSessionStore", "migrate", "result_json"]
