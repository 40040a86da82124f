"""The retrieval tools of a search run, as plain Python returning typed results (results.py).

The guardrails live here, not in prompts: the agent cannot be trusted to respect a budget, a
scope or what it has already read. Every retrieval call (search, toc, read) passes the budget
guard; reads mark every chunk they overlap as seen so search never returns them again; assets
are de-duplicated on canonical ids; items outside the run's scope are refused.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from zocrates_nb.index.model import CHUNK_TYPES, Hit, SearchFilter
from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.retrieval.joining import CANDIDATES, Passage, join_adjacent
from zocrates_nb.retrieval.outline import compact_outline
from zocrates_nb.retrieval.reading import ResolvedDocument, read_assets
from zocrates_nb.retrieval.results import (
    ConcludeResult,
    ExtensionResult,
    ReadResult,
    Refusal,
    SearchResult,
    SearchRow,
    TocResult,
    ToolResult,
)
from zocrates_nb.retrieval.scope import ACTIVE_WORDS, ALL_WORDS, ScopeGuard, parse_keys
from zocrates_nb.retrieval.scope_words import scope_free
from zocrates_nb.retrieval.state import (
    MAX_EXTENSIONS,
    CompletionReport,
    Evidence,
    ExtensionRequest,
    RunState,
)

if TYPE_CHECKING:
    from zocrates_nb.index import Index

log = logging.getLogger(__name__)
R = TypeVar("R", bound=ToolResult)

RETRIEVAL_TOOLS = ("search_corpus", "get_document_toc", "read_document")
SURVEY_LIMIT = 10  # frontmatter survey: at most this many papers
MAX_SEARCH_LIMIT = 25
_KIND_PRIORITY = {"pdf": 0, "html": 1, "markdown": 2, "text": 3}
_CHUNK_TYPE_ALIASES = {
    "front": "frontmatter",
    "frontmatter": "frontmatter",
    "metadata": "frontmatter",
    "titles": "frontmatter",
    "abstracts": "abstract",
    "abstract": "abstract",
    "body": "body",
    "text": "body",
    "figure": "figure",
    "figures": "figure",
    "table": "table",
    "tables": "table",
    "note": "note",
    "notes": "note",
}


def budget_notice(state: RunState) -> str | None:
    """The notice a retrieval call carries when the budget is nearly or fully spent."""
    n, b = state.tool_count, state.budget
    if n == b - 1:
        return (
            f"[Notice: {n}/{b} retrieval tool calls used ({b - n} call remaining). Plan your "
            "final retrieval, request an extension via `request_search_extension`, or prepare "
            "to call `conclude_search`.]"
        )
    if n >= b:
        return (
            f"[Notice: Retrieval tool budget exhausted ({n}/{b}). Call `conclude_search` to "
            "synthesize, or call `request_search_extension` to request additional search "
            "allowance.]"
        )
    return None


def _refused(message: str) -> Refusal:
    return Refusal(status="budget_exhausted", message=message)


class Toolkit:
    """The five tools of one search run over one index, sharing one `RunState`."""

    def __init__(self, index: Index, state: RunState) -> None:
        self.index = index
        self.state = state
        self.guard = ScopeGuard(index, state)
        self._bundles: dict[str, Bundle] = {}

    # ================================================================== guard
    def _run(self, tool: str, args: dict[str, Any], body: Callable[[], R | Refusal]) -> R | Refusal:
        """Budget guard around one retrieval call: refuse, or count it and add the notice."""
        st = self.state
        out: R | Refusal
        if st.tool_count >= st.budget:
            out = _refused(
                f"Retrieval tool budget exhausted ({st.tool_count}/{st.budget}): no further "
                "retrieval in this run. Call `conclude_search` to synthesize what was found, or "
                "`request_search_extension` to ask for more."
            )
        elif st.words >= st.word_ceiling:
            out = _refused(
                f"Evidence word ceiling reached ({st.words:,}/{st.word_ceiling:,} words): no "
                "further retrieval in this run. Call `conclude_search` now."
            )
        else:
            st.tool_count += 1
            try:
                out = body()
            except Exception as e:  # a broken bundle or store must not end the run
                log.warning("%s failed: %s", tool, e, exc_info=True)
                out = Refusal(message=f"{tool} failed: {' '.join(str(e).split())}")
            ceiling = None
            if st.words >= st.word_ceiling and out.ok:
                ceiling = (
                    f"[Notice: Evidence word ceiling reached ({st.words:,}/{st.word_ceiling:,} "
                    "words). Further retrieval will be refused: call `conclude_search`.]"
                )
            out.add_notices([ceiling, budget_notice(st)])
        st.tool_log.append({"tool": tool, "args": args, "status": out.status})
        return out

    # ================================================================== search_corpus
    def search_corpus(
        self,
        query: str,
        item_key: str | list[str] | None = None,
        chunk_type: str | None = None,
        limit: int = 10,
    ) -> SearchResult | Refusal:
        """Hybrid search within the run's scope, never returning a chunk already seen."""
        args = {"query": query, "item_key": item_key, "chunk_type": chunk_type, "limit": limit}
        return self._run(
            "search_corpus", args, lambda: self._search(query, item_key, chunk_type, limit)
        )

    def _search_keys(
        self, item_key: str | list[str] | None
    ) -> tuple[list[str] | None, list[str], Refusal | None]:
        """(filter keys or None for all, notices, refusal)."""
        words = item_key.strip().lower() if isinstance(item_key, str) else None
        empty = isinstance(item_key, (list, tuple)) and not item_key
        if item_key is None or empty or (words is not None and words in ALL_WORDS):
            return self.guard.search_keys(), [], None
        if words is not None and words in ACTIVE_WORDS:
            active = self.guard.active_keys()
            if active:
                return active, [], None
            return (
                self.guard.search_keys(),
                [f"[No items are selected in this run; searched {self.guard.describe()}.]"],
                None,
            )
        check = self.guard.check(parse_keys(item_key))
        if check.outside:
            return None, [], self.guard.refusal(check.outside)
        notices = []
        if check.unknown:
            notices.append(f"[Unknown item key(s) ignored: {', '.join(check.unknown)}.]")
        if not check.keys:
            return (
                None,
                notices,
                Refusal(
                    message=f"No known item key in {item_key!r}. Use keys from search results "
                    "or the active items, or item_key=None to search the whole scope."
                ),
            )
        return check.keys, notices, None

    def _search(
        self, query: str, item_key: str | list[str] | None, chunk_type: str | None, limit: int
    ) -> SearchResult | Refusal:
        st = self.state
        if not query or not query.strip():
            return Refusal(message="Give a non-empty query.")
        keys, notices, refusal = self._search_keys(item_key)
        if refusal is not None:
            return refusal
        ctype = None
        if chunk_type:
            ctype = _CHUNK_TYPE_ALIASES.get(chunk_type.strip().lower())
            if ctype is None:
                return Refusal(
                    message=f"Unknown chunk_type {chunk_type!r}; use "
                    f"one of {', '.join(CHUNK_TYPES)} (or omit it)."
                )
        survey = ctype == "frontmatter"
        limit = max(1, min(int(limit or 10), SURVEY_LIMIT if survey else MAX_SEARCH_LIMIT))
        flt = SearchFilter(
            item_keys=keys,
            chunk_types=[ctype] if ctype else None,
            exclude_chunk_ids=list(st.seen_chunk_ids),
        )
        words_left = st.word_ceiling - st.words
        searched = scope_free(query)  # the scope is the filter: its words would only be searched
        if survey:  # one frontmatter chunk per paper (an item may have several documents)
            by_item: dict[str, Hit] = {}
            for h in self.index.search(searched, flt, limit=limit * 3):
                by_item.setdefault(h.chunk.item_key, h)
            passages = [Passage(h, [h.chunk.chunk_id]) for h in list(by_item.values())[:limit]]
        else:
            hits = self.index.search(searched, flt, limit=max(limit, CANDIDATES))
            passages = join_adjacent(hits, limit, words_left=words_left)
        items = [
            Evidence.from_passage(
                p.hit.chunk,
                tool="search_corpus",
                query=query,
                rank=rank,
                score=round(p.hit.score, 6),
                ranks=dict(p.hit.ranks),
            )
            for rank, p in enumerate(passages, 1)
        ]
        fit = _within_ceiling(items, words_left)
        if len(fit) < len(items):
            notices.append(
                f"[Word ceiling: {len(items) - len(fit)} more matching passage(s) not added "
                f"({st.word_ceiling:,} words is the limit). Call `conclude_search`.]"
            )
        items = fit
        st.mark_seen([cid for p in passages[: len(fit)] for cid in p.chunk_ids])
        st.add_evidence(items)
        results = [SearchRow.model_validate(e, from_attributes=True) for e in items]
        if not results:
            notices.append(
                "[No new passages matched: everything relevant may already be read, "
                "or the scope does not cover this topic.]"
            )
        out = SearchResult(query=query, scope=self._scope_label(keys), results=results)
        out.add_notices(list(notices))
        return out

    def _scope_label(self, keys: list[str] | None) -> str:
        if keys is None:
            return "whole library"
        if not self.guard.restricted or len(keys) <= 5:
            return ", ".join(keys)
        return self.guard.describe()

    # ================================================================== documents
    def resolve_document(self, item_key: str) -> ResolvedDocument | Refusal:
        """A key (parent, attachment or note) → the document to read, or an error/refusal."""
        raw = parse_keys(item_key)
        if len(raw) != 1:
            return Refusal(
                message="Give exactly one item key (parent, attachment "
                f"or note key); got {item_key!r}."
            )
        check = self.guard.check(raw)
        if check.outside:
            return self.guard.refusal(check.outside)
        if not check.keys:
            return Refusal(
                message=f"Unknown item key {raw[0]!r}: use a key from "
                "search results, the active items or a document outline."
            )
        key = check.keys[0]
        docs = self.index.documents(key)
        own = next((d for d in docs if d.doc_key == key), None)
        notices: list[str] = []
        if own is not None:
            if own.status != "done":
                return Refusal(
                    message=f"Document {key} is not readable "
                    f"({own.status}{': ' + own.error if own.error else ''})."
                )
            chosen = own
        else:
            ready = [d for d in docs if d.status == "done"]
            files = sorted(
                (d for d in ready if d.kind != "note"),
                key=lambda d: (_KIND_PRIORITY.get(d.kind, 9), d.doc_key),
            )
            notes = sorted((d for d in ready if d.kind == "note"), key=lambda d: d.doc_key)
            if not files and not notes:
                why = "; ".join(f"{d.doc_key}: {d.error or d.status}" for d in docs) or "none"
                return Refusal(message=f"Item {key} has no readable document (attachments: {why}).")
            chosen = files[0] if files else notes[0]
            others = [d for d in (*files, *notes) if d.doc_key != chosen.doc_key]
            if others:
                listed = "; ".join(
                    f"[{'Note' if d.kind == 'note' else 'Attachment'} Key: {d.doc_key}] "
                    f'"{d.title or d.kind}" ({d.kind})'
                    for d in others
                )
                notices.append(
                    f"[Item {key} resolved to its {chosen.kind} {chosen.doc_key}. "
                    f"Other documents of this item: {listed}. Read one by its key.]"
                )
        item = self.index.item(chosen.item_key)
        bundle = self.bundle(chosen.doc_key)
        title = (
            (item.title if item and item.item_type not in ("note", "attachment") else "")
            or bundle.toc.title
            or chosen.title
        )
        if chosen.kind == "note" and item is not None and chosen.doc_key != chosen.item_key:
            title = f'{chosen.title or "Note"} (note on "{item.title}")'
        return ResolvedDocument(
            key=key,
            doc_key=chosen.doc_key,
            parent_key=chosen.item_key,
            kind=chosen.kind,
            title=title,
            authors=list(item.authors if item else bundle.toc.authors),
            year=item.year if item else bundle.toc.year,
            notices=notices,
        )

    def bundle(self, doc_key: str) -> Bundle:
        if doc_key not in self._bundles:
            self._bundles[doc_key] = self.index.bundle(doc_key)
        return self._bundles[doc_key]

    # ================================================================== get_document_toc
    def get_document_toc(self, item_key: str) -> TocResult | Refusal:
        """The compact outline of a document (about 150 words) with both keys in its header."""
        return self._run(
            "get_document_toc", {"item_key": item_key}, lambda: self.document_toc(item_key)
        )

    def document_toc(self, item_key: str) -> TocResult | Refusal:
        """The outline without counting a call (for pre-injection and the CLI)."""
        doc = self.resolve_document(item_key)
        if isinstance(doc, Refusal):
            return doc
        toc = self.bundle(doc.doc_key).toc
        parent = doc.parent_key if doc.parent_key != doc.doc_key else None
        out = TocResult(**doc.names(), outline=compact_outline(toc, doc.doc_key, parent, doc.title))
        out.add_notices(list(doc.notices))
        return out

    # ================================================================== read_document
    def read_document(
        self, item_key: str, asset_id: Any = None, page: int | None = None
    ) -> ReadResult | Refusal:
        """Whole sections, figures, tables, the abstract, a page, or the full text."""
        args = {"item_key": item_key, "asset_id": asset_id, "page": page}
        return self._run("read_document", args, lambda: self._read(item_key, asset_id, page))

    def _read(self, item_key: str, asset_id: Any, page: int | None) -> ReadResult | Refusal:
        doc = self.resolve_document(item_key)
        if isinstance(doc, Refusal):
            return doc
        return read_assets(self.index, self.state, doc, self.bundle(doc.doc_key), asset_id, page)

    # ================================================================== run control
    def conclude_search(
        self, summary: str, notes: str = "", gaps: list[str] | str | None = None
    ) -> ConcludeResult:
        """Record the agent's completion report; ends the search (does not count as a call)."""
        self.state.report = CompletionReport(
            summary=str(summary).strip(),
            notes=str(notes or "").strip(),
            gaps=_as_list(gaps),
            source="agent",
        )
        self.state.tool_log.append({"tool": "conclude_search", "args": {}, "status": "success"})
        return ConcludeResult(
            message="Search concluded. The evidence goes to synthesis.",
            evidence_passages=len(self.state.evidence),
            words=self.state.words,
        )

    def request_search_extension(
        self,
        justification: str,
        covered_summary: str = "",
        missing_aspects: list[str] | str | None = None,
    ) -> ExtensionResult | Refusal:
        """Ask for +5 calls / +3,750 words; stamped with this pass (does not count as a call)."""
        st = self.state
        if st.extension_count >= MAX_EXTENSIONS:
            st.tool_log.append(
                {"tool": "request_search_extension", "args": {}, "status": "unavailable"}
            )
            return Refusal(
                status="unavailable",
                message=f"The maximum of {MAX_EXTENSIONS} "
                "extensions is used. Call `conclude_search` with what was found.",
            )
        st.extension_request = ExtensionRequest(
            justification=str(justification).strip(),
            covered_summary=str(covered_summary).strip(),
            missing_aspects=_as_list(missing_aspects),
            pass_number=st.extension_count + 1,
        )
        st.tool_log.append({"tool": "request_search_extension", "args": {}, "status": "success"})
        return ExtensionResult(
            message="Extension requested. Stop here: the user decides "
            "whether the search continues.",
            pass_number=st.extension_count + 1,
        )

    def finish(self) -> CompletionReport:
        """The run's report: the agent's, or one built from the evidence."""
        if self.state.report is None:
            self.state.report = auto_report(self.state)
        return self.state.report


def _within_ceiling(items: list[Evidence], left: int) -> list[Evidence]:
    """The leading passages that fit in the `left` words (never one past the ceiling)."""
    out: list[Evidence] = []
    for e in items:
        if e.words > left:
            break
        out.append(e)
        left -= e.words
    return out


def _as_list(value: list[str] | str | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        parts = [p.strip(" -•*") for p in value.replace(";", "\n").splitlines()]
        return [p for p in parts if p]
    return [str(v).strip() for v in value if str(v).strip()]


def auto_report(state: RunState) -> CompletionReport:
    """A completion report built from the evidence when the agent did not conclude."""
    papers: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for e in state.evidence:
        titles.setdefault(e.item_key, e.title or e.item_key)
        label = e.section or e.chunk_type
        if label and label not in papers.setdefault(e.item_key, []):
            papers[e.item_key].append(label)
    if not state.evidence:
        summary = "No evidence was retrieved."
    else:
        parts = []
        for key, sections in papers.items():
            shown = ", ".join(sections[:4]) + (
                f" and {len(sections) - 4} more" if len(sections) > 4 else ""
            )
            parts.append(f'"{titles[key]}"' + (f" ({shown})" if shown else ""))
        summary = (
            f"Retrieved {len(state.evidence)} passages (~{state.words:,} words) from "
            f"{len(papers)} paper(s): " + "; ".join(parts) + "."
        )
    why = (
        "the retrieval budget was exhausted"
        if state.tool_count >= state.budget
        else "the evidence word ceiling was reached"
        if state.words >= state.word_ceiling
        else "the search ended"
    )
    return CompletionReport(
        summary=summary,
        notes=f"Auto-generated: {why} ({state.tool_count}/{state.budget} calls) before the agent "
        "called conclude_search; coverage was not assessed by the agent.",
        gaps=[],
        source="auto_generated",
    )
