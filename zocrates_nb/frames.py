"""pandas views of what a session searched, read and cited, and of what the library holds.

Read-only: the frames flatten the session's `TurnResult`s (their evidence rows and usage; a
turn's scope as `App.view` names it, as every surface shows it) and the index catalogue, never
re-running anything; they read through an `App` (given, or opened on a data home path for the
call). Every frame has fixed columns with nullable pandas dtypes (listed in the *_COLUMNS
mappings below), so an empty session gives an empty frame with the same columns and dtypes, and
code written against a full frame works on an empty one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from zocrates_nb.turn import ScopeChips, TurnResult, TurnView

if TYPE_CHECKING:
    from zocrates_nb.app import App
    from zocrates_nb.turn import Candidate, Discovery


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
    "unsupported": "boolean",  # cited only by claims verification did not support
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
    "words": "Int64",  # evidence words gathered (the turn's evidence rows)
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

# One row per paper found beyond the library (a discover run, or a staging list).
CANDIDATE_COLUMNS: dict[str, str] = {
    "id": "string",  # what `stage add` takes
    "title": "string",
    "authors": "object",  # list[str]
    "year": "Int64",
    "venue": "string",
    "doi": "string",
    "arxiv_id": "string",
    "url": "string",
    "pdf_url": "string",  # open-access PDF when a source knows one
    "in_library": "boolean",
    "library_key": "string",
    "why": "string",  # the abstract's sentence that bears on the query
    "sources": "object",  # list[str]: which APIs reported it
    "score": "Float64",
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
@contextlib.contextmanager
def _app(source: App | str | Path) -> Iterator[App]:
    """The App given, or one opened on a data home path for the length of the call."""
    if not isinstance(source, str | Path):
        yield source
        return
    from zocrates_nb.app import App

    with App.open(Path(source).expanduser()) as app:
        yield app


def _pick_turns(turns: list[TurnResult], turn: int | str | None) -> list[TurnResult]:
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


# ---------------------------------------------------------------------------- evidence
def evidence_frame(
    source: App | str | Path, session_id: str, turn: int | str | None = None
) -> pd.DataFrame:
    """One row per evidence chunk of a session's turns (or of one turn: its number or id).

    Columns and dtypes: `EVIDENCE_COLUMNS`, each one a field of `turn.EvidenceRow`. Rows keep
    the order the synthesizer saw them in (the reranked evidence), then the other gathered
    passages (`ranked` false). A turn paused at a checkpoint lists what it gathered so far.
    """
    with _app(source) as app:
        rows = [
            {"turn": t.index, "turn_id": t.turn_id, **e.model_dump()}
            for t in _pick_turns(app.history(session_id), turn)
            for e in t.evidence
        ]
        _fill_chunk_types(rows, app)
    return _frame(rows, EVIDENCE_COLUMNS)


def _fill_chunk_types(rows: list[dict[str, Any]], app: App) -> None:
    """Rows stored by the first release lack their chunk type: the index knows it."""
    missing = [r["chunk_id"] for r in rows if not r["chunk_type"]]
    if missing:
        types = {c.chunk_id: c.chunk_type for c in app.chunks(missing)}
        for r in rows:
            r["chunk_type"] = r["chunk_type"] or types.get(r["chunk_id"])


# ---------------------------------------------------------------------------- audit
def audit_frame(source: App | str | Path, session_id: str) -> pd.DataFrame:
    """One row per turn of a session: what was asked and searched, what it used and cost.

    Columns and dtypes: `AUDIT_COLUMNS`; collections are shown by name.
    """
    with _app(source) as app:  # each turn as every surface receives it (`App.view`)
        views = [app.view(t) for t in app.history(session_id)]
    return _frame([_audit_row(v) for v in views], AUDIT_COLUMNS)


def _audit_row(t: TurnView) -> dict[str, Any]:
    return {
        "turn": t.index,
        "turn_id": t.turn_id,
        "status": t.status,
        "query": t.prompt,
        "search_goal": t.search_goal,
        "scope": describe_scope(t.chips),
        "calls": t.tool_calls,
        "words": t.evidence_words,
        "extensions": t.extensions,
        "evidence": len(t.evidence),
        "cited": len(t.cited_chunk_ids),
        "seconds": t.seconds,
        "timings": dict(t.timings),
        "input_tokens": t.usage.input_tokens,
        "output_tokens": t.usage.output_tokens,
        "cost_usd": t.usage.cost_usd,
        "model": t.model,
        "created": t.created,
    }


def describe_scope(chips: ScopeChips) -> str:
    """'library', 'items: K1, K2' or 'collections: Systems' (a turn view's chips: collections
    by the names the view gave them)."""
    if chips.items:
        return "items: " + ", ".join(i.key for i in chips.items)
    if chips.collections:
        return "collections: " + ", ".join(c.name or c.key for c in chips.collections)
    return "library"


# ---------------------------------------------------------------------------- library
def library_frame(source: App | str | Path) -> pd.DataFrame:
    """One row per library item with its index status. Columns and dtypes: `LIBRARY_COLUMNS`."""
    with _app(source) as app:
        paths = app.collections()
        documents, items = app.documents(), app.items()
    by_item: dict[str, list[Any]] = {}
    for doc in documents:
        by_item.setdefault(doc.item_key, []).append(doc)
    rows = []
    for item in items:
        docs = by_item.get(item.key, [])
        rows.append(
            {
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
                "problem": "; ".join(
                    f"{d.doc_key}: {d.error}"
                    for d in docs
                    if d.error and d.status in ("error", "skipped")
                ),
            }
        )
    return _frame(rows, LIBRARY_COLUMNS)


def candidates_frame(
    source: App | Discovery | Iterable[Candidate],
    *,
    session_id: str | None = None,
    staged: bool = False,
) -> pd.DataFrame:
    """Candidates as a frame: a `Discovery` or list of them, or an App's remembered candidates
    (its staging list with `staged=True`) for the data home or `session_id`. Columns and
    dtypes: `CANDIDATE_COLUMNS`."""
    from zocrates_nb.app import App
    from zocrates_nb.turn import Discovery

    if isinstance(source, Discovery):
        found: Iterable[Candidate] = source.candidates
    elif isinstance(source, App):
        found = (source.staged if staged else source.discovered)(session_id=session_id)
    else:
        found = source
    return _frame([c.model_dump(mode="json") for c in found], CANDIDATE_COLUMNS)


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
    "CANDIDATE_COLUMNS",
    "EVIDENCE_COLUMNS",
    "LIBRARY_COLUMNS",
    "audit_frame",
    "candidates_frame",
    "describe_scope",
    "empty_frame",
    "evidence_frame",
    "library_frame",
]
