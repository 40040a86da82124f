"""pandas views of what a session searched, read and cited, and of what the library holds.

Read-only: the frames are built from the session store's turn and audit records and from the
index catalogue, never by re-running anything. Every frame has fixed columns with nullable pandas
dtypes (listed in the *_COLUMNS mappings below), so an empty session gives an empty frame with the
same columns and dtypes, and code written against a full frame works on an empty one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from zocrates_nb.sessions import AuditRecord, SessionStore, TurnRecord

# One row per evidence chunk a turn gathered: what the synthesizer was given (ranked, in order),
# then the other passages the search found.
EVIDENCE_COLUMNS: dict[str, str] = {
    "turn": "Int64",  # the turn's number in its session (1, 2, …)
    "turn_id": "string",
    "chunk_id": "string",
    "item_key": "string",  # the Zotero item (parent) key
    "title": "string",
    "authors": "object",  # list[str]
    "year": "Int64",
    "section": "string",
    "chunk_type": "string",  # frontmatter | abstract | body | figure | table | note
    "words": "Int64",
    "retrieval_rank": "Int64",  # 1-based rank in the search that found it (null: a section read)
    "ranked": "boolean",  # handed to the synthesizer after reranking (else only gathered)
    "rerank_rank": "Int64",  # 1-based position after reranking (null: not ranked)
    "rerank_score": "Float64",
    "cited": "boolean",  # at least one verified citation in the answer points at it
    "support": "Float64",  # best verification support probability of its citations (0–1)
    "tool": "string",  # search_corpus | read_document
    "page": "Int64",
    "text": "string",
}

# One row per turn.
AUDIT_COLUMNS: dict[str, str] = {
    "turn": "Int64",
    "turn_id": "string",
    "status": "string",  # answered | checkpoint | running | error | cancelled
    "query": "string",  # what the researcher asked
    "search_goal": "string",  # the standalone goal the coordinator gave the search ("" : none)
    "scope": "string",  # "library", "items: K1, K2" or "collections: C1"
    "calls": "Int64",  # retrieval tool calls used
    "words": "Int64",  # evidence words gathered
    "extensions": "Int64",  # deep-research extensions granted
    "evidence": "Int64",  # evidence chunks gathered by the search
    "cited": "Int64",  # distinct chunks cited in the answer
    "seconds": "Float64",  # the turn's wall time
    "timings": "object",  # dict phase → seconds
    "input_tokens": "Int64",
    "output_tokens": "Int64",
    "cost_usd": "Float64",  # null: no priced model (the offline engine costs nothing: 0.0)
    "model": "string",
    "created": "datetime64[ns, UTC]",
}

# One row per library item (regular items, and standalone notes/attachments).
LIBRARY_COLUMNS: dict[str, str] = {
    "item_key": "string",
    "item_type": "string",
    "title": "string",
    "authors": "object",  # list[str]
    "year": "Int64",
    "venue": "string",
    "doi": "string",
    "collections": "object",  # list[str] of 'Parent/Child' paths
    "documents": "Int64",  # attachments and notes found
    "indexed": "Int64",  # of which are indexed
    "chunks": "Int64",
    "status": "string",  # indexed | partial | error | skipped | indexing | no documents
    "problem": "string",  # why a document failed or was skipped ("" for none)
}


def empty_frame(columns: Mapping[str, str]) -> pd.DataFrame:
    return _frame([], columns)


def _frame(rows: list[dict[str, Any]], columns: Mapping[str, str]) -> pd.DataFrame:
    data: dict[str, pd.Series] = {}
    for name, dtype in columns.items():
        values = [row.get(name) for row in rows]
        if dtype.startswith("datetime64"):
            stamps = pd.to_datetime(pd.Series(values, dtype=object), utc=True)
            data[name] = stamps.astype(pd.DatetimeTZDtype("ns", "UTC"))
        else:
            data[name] = pd.Series(values, dtype=object if dtype == "object" else dtype)
    return pd.DataFrame(data, columns=list(columns))


# ---------------------------------------------------------------------------- sources
def _store(app_or_store: Any) -> SessionStore:
    """A SessionStore from an App, a store, or a data home path."""
    if isinstance(app_or_store, SessionStore):
        return app_or_store
    if isinstance(app_or_store, str | Path):
        return SessionStore.open(Path(app_or_store).expanduser())
    store = getattr(app_or_store, "store", None) or getattr(app_or_store, "sessions_store", None)
    if isinstance(store, SessionStore):
        return store
    raise TypeError(f"expected an App, a SessionStore or a data home, got {type(app_or_store)}")


def _index(app_or_index: Any) -> Any:
    if isinstance(app_or_index, str | Path):
        from zocrates_nb.index import Index

        return Index.open(Path(app_or_index).expanduser())
    index = getattr(app_or_index, "index", None)
    if index is not None and hasattr(index, "items"):
        return index
    if hasattr(app_or_index, "items") and hasattr(app_or_index, "documents"):
        return app_or_index
    raise TypeError(f"expected an App, an Index or a data home, got {type(app_or_index)}")


def _audits(store: SessionStore, session_id: str) -> dict[str, AuditRecord]:
    return {r.turn_id: r for r in store.get_state(session_id).audit}


def _pick_turns(turns: list[TurnRecord], turn: int | str | None) -> list[TurnRecord]:
    """All turns, or one by its number (1-based; negative counts from the end) or its id."""
    if turn is None:
        return turns
    if isinstance(turn, str):
        picked = [t for t in turns if t.turn_id == turn]
        if not picked:
            raise KeyError(f"no turn {turn!r} in this session")
        return picked
    if turn < 0:
        return turns[turn:][:1] if -turn <= len(turns) else []
    picked = [t for t in turns if t.index == turn]
    if not picked:
        raise KeyError(f"no turn {turn} in this session (it has {len(turns)})")
    return picked


def _extra(record: AuditRecord | None, name: str) -> Any:
    if record is None:
        return None
    value = getattr(record, name, None)
    if value is None and record.model_extra:
        value = record.model_extra.get(name)
    return value


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


# ---------------------------------------------------------------------------- evidence
def evidence_frame(
    app_or_store: Any, session_id: str, turn: int | str | None = None
) -> pd.DataFrame:
    """One row per evidence chunk of a session's turns (or of one turn: its number or id).

    Columns and dtypes: `EVIDENCE_COLUMNS`. Rows keep the order the synthesizer saw them in
    (the reranked evidence), then the other gathered passages (`ranked` false). A turn paused at
    a checkpoint lists what it gathered so far. Given an App (not only a store), chunk types
    missing from the stored rows are looked up in the index.
    """
    store = _store(app_or_store)
    audits = _audits(store, session_id)
    rows: list[dict[str, Any]] = []
    for t in _pick_turns(store.turns(session_id), turn):
        rows.extend(_evidence_rows(t, audits.get(t.turn_id)))
    _fill_chunk_types(rows, getattr(app_or_store, "index", None))
    return _frame(rows, EVIDENCE_COLUMNS)


def _evidence_rows(t: TurnRecord, audit: AuditRecord | None) -> list[dict[str, Any]]:
    p = t.payload
    evidence: list[dict[str, Any]] = list(p.get("evidence") or (audit.evidence if audit else []))
    cited_ids = set(audit.cited_chunk_ids if audit else [])
    support: dict[str, float] = {}
    for c in p.get("citations") or []:
        cid = c.get("chunk_id")
        if not cid:
            continue
        cited_ids.add(cid)
        if isinstance(c.get("support"), int | float):
            support[cid] = max(support.get(cid, 0.0), float(c["support"]))
    # Authors and years come with the sources: every retrieved paper is in one of the tiers.
    papers = {s.get("item_key"): s for s in [*(p.get("cited_sources") or []),
                                             *(p.get("other_sources") or []),
                                             *(audit.sources if audit else [])]}
    rows = []
    position = 0
    for e in evidence:
        cid = str(e.get("chunk_id", ""))
        paper = papers.get(e.get("item_key")) or {}
        own_support = e.get("support")
        ranked = e["ranked"] if isinstance(e.get("ranked"), bool) else (
            e.get("rerank_score") is not None or bool(e.get("rerank_method")))
        position += ranked
        rows.append({
            "turn": t.index,
            "turn_id": t.turn_id,
            "chunk_id": cid,
            "item_key": e.get("item_key"),
            "title": e.get("title") or paper.get("title"),
            "authors": list(e.get("authors") or paper.get("authors") or []),
            "year": _first(e.get("year"), paper.get("year")),
            "section": e.get("section"),
            "chunk_type": e.get("chunk_type"),
            "words": _first(e.get("words"), len(str(e.get("text", "")).split())),
            "retrieval_rank": _first(e.get("retrieval_rank"), e.get("rank")),
            "ranked": ranked,
            "rerank_rank": _first(e.get("rerank_rank"), position if ranked else None),
            "rerank_score": e.get("rerank_score"),
            "cited": bool(e["cited"]) if isinstance(e.get("cited"), bool) else cid in cited_ids,
            "support": _first(own_support if isinstance(own_support, int | float) else None,
                              support.get(cid)),
            "tool": e.get("tool"),
            "page": e.get("page"),
            "text": e.get("text"),
        })
    return rows


def _fill_chunk_types(rows: list[dict[str, Any]], index: Any) -> None:
    missing = [r["chunk_id"] for r in rows if not r["chunk_type"]]
    if not missing or index is None or not hasattr(index, "chunks"):
        return
    types = {c.chunk_id: c.chunk_type for c in index.chunks(missing)}
    for r in rows:
        r["chunk_type"] = r["chunk_type"] or types.get(r["chunk_id"])


# ---------------------------------------------------------------------------- audit
def audit_frame(app_or_store: Any, session_id: str) -> pd.DataFrame:
    """One row per turn of a session: what was asked and searched, what it used and cost.

    Columns and dtypes: `AUDIT_COLUMNS`. The session keeps detailed audit records for its last
    five turns; older turns still have their query, status, timings, tokens and cost.
    """
    store = _store(app_or_store)
    audits = _audits(store, session_id)
    rows = [_audit_row(t, audits.get(t.turn_id)) for t in store.turns(session_id)]
    return _frame(rows, AUDIT_COLUMNS)


def _audit_row(t: TurnRecord, a: AuditRecord | None) -> dict[str, Any]:
    p = t.payload
    usage: dict[str, Any] = {**(p.get("usage") or {}), **(a.usage if a else {})}
    timings: dict[str, Any] = {**(p.get("timings") or {}), **(a.timings if a else {})}
    checkpoint: dict[str, Any] = p.get("checkpoint") or {}  # a paused turn's counters
    evidence = p.get("evidence") or (a.evidence if a else [])
    cited = {c.get("chunk_id") for c in p.get("citations") or [] if c.get("chunk_id")}
    if a:
        cited |= set(a.cited_chunk_ids)
    scope = a.scope.model_dump() if a else t.scope
    granted = checkpoint["extension"] - 1 if checkpoint.get("extension") else None
    return {
        "turn": t.index,
        "turn_id": t.turn_id,
        "status": t.status,
        "query": a.user_query if a and a.user_query else t.prompt,
        "search_goal": _first(a.search_goal if a else None, p.get("search_goal"), ""),
        "scope": describe_scope(scope),
        "calls": _first(_extra(a, "tool_calls"), _extra(a, "calls_used"),
                        checkpoint.get("calls_used")),
        "words": _first(_extra(a, "words_used"), checkpoint.get("words_used")),
        "extensions": _first(_extra(a, "extensions"), granted),
        "evidence": _first(_extra(a, "gathered"), len(evidence)),
        "cited": len(cited),
        "seconds": _first(p.get("seconds"), _extra(a, "seconds")),
        "timings": timings,
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "cost_usd": _first(a.cost_usd if a else None, usage.get("cost_usd")),
        "model": p.get("model"),
        "created": t.created,
    }


def describe_scope(scope: Mapping[str, Any] | None) -> str:
    """'library', 'items: K1, K2' or 'collections: C1' from a stored scope."""
    scope = scope or {}
    items = [str(i.get("key", i)) if isinstance(i, dict) else str(i)
             for i in scope.get("items") or []]
    collections = [str(c.get("key", c)) if isinstance(c, dict) else str(c)
                   for c in scope.get("collections") or []]
    if items:
        return "items: " + ", ".join(items)
    if collections:
        return "collections: " + ", ".join(collections)
    return "library"


# ---------------------------------------------------------------------------- library
def library_frame(app_or_index: Any) -> pd.DataFrame:
    """One row per library item with its index status. Columns and dtypes: `LIBRARY_COLUMNS`."""
    index = _index(app_or_index)
    paths: dict[str, str] = index.collection_paths() if hasattr(index, "collection_paths") else {}
    by_item: dict[str, list[Any]] = {}
    for doc in index.documents():
        by_item.setdefault(doc.item_key, []).append(doc)
    rows = []
    for item in index.items():
        docs = by_item.get(item.key, [])
        rows.append({
            "item_key": item.key,
            "item_type": item.item_type,
            "title": item.title,
            "authors": list(item.authors),
            "year": item.year,
            "venue": item.venue,
            "doi": item.doi,
            "collections": sorted(paths.get(k, k) for k in item.collections),
            "documents": len(docs),
            "indexed": sum(d.status == "done" for d in docs),
            "chunks": sum(int(d.n_chunks or 0) for d in docs if d.status == "done"),
            "status": _item_status(d.status for d in docs),
            "problem": "; ".join(f"{d.doc_key}: {d.error}" for d in docs
                                 if d.error and d.status in ("error", "skipped")),
        })
    return _frame(rows, LIBRARY_COLUMNS)


def _item_status(statuses: Iterable[str]) -> str:
    s = list(statuses)
    if not s:
        return "no documents"
    if all(x == "done" for x in s):
        return "indexed"
    if any(x == "done" for x in s):
        return "partial"
    for state in ("indexing", "error", "skipped"):
        if state in s:
            return state
    return s[0]


__all__ = [
    "AUDIT_COLUMNS",
    "EVIDENCE_COLUMNS",
    "LIBRARY_COLUMNS",
    "audit_frame",
    "describe_scope",
    "empty_frame",
    "evidence_frame",
    "library_frame",
]
