"""What the search model is sent of its own tool results: context economy.

Every request of a search pass resends the whole pass so far, so what a result costs is paid
again at each later call. A result carries only what the model needs (where a passage is, to
read on, and what it says; chunk ids, attachment keys, authors and chunk types stay in the run
state); the latest results stay in full, and once the model has read them, older passages
shrink to their references and opening words — their full text is in the run state's
evidence for the writer. Only language models get this: the embedded offline engine is local
(no tokens to pay) and reads the full results to steer its search.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from pydantic_ai.messages import ModelMessage, ModelRequest, ToolReturnPart

from zocrates_nb.retrieval.results import succeeded

ECONOMY = True  # False only in `bench tokens --agent --compare`: the history as it was sent
ELIDED_WORDS = 6  # what an older passage keeps: its opening words, as a reminder
SHORTENED = "read earlier: shortened here, the full text is kept in the evidence"
READS = ("search_corpus", "read_document", "get_document_toc")

_RESULT_FIELDS = ("item_key", "section", "section_id", "page", "text")
_ASSET_FIELDS = ("asset_id", "type", "heading", "page", "words", "text", "caption", "csv")
_READ_DROPS = ("authors", "year", "doc_key", "parent_key")


def for_model(out: dict[str, Any]) -> dict[str, Any]:
    """A search result as the model sees it: each paper's title once, then its passages in
    rank order."""
    papers: dict[str, str] = {}
    results = []
    for r in out.get("results") or []:
        key = str(r.get("item_key", ""))
        if key not in papers:
            year = f" ({r['year']})" if r.get("year") else ""
            papers[key] = f"{r.get('title', '')}{year}"
        results.append({k: r[k] for k in _RESULT_FIELDS if r.get(k) not in (None, "")})
    slim = {k: v for k, v in out.items() if k not in ("results", "scope")}
    return {**slim, "papers": papers, "results": results}


def read_for_model(out: dict[str, Any]) -> dict[str, Any]:
    """A read as the model sees it: the paper's title once, each asset's text and place."""
    slim = {k: v for k, v in out.items() if k not in _READ_DROPS and v not in ([], None)}
    slim["assets"] = [
        {k: a[k] for k in _ASSET_FIELDS if a.get(k) not in (None, "")}
        for a in out.get("assets") or []
        if isinstance(a, dict)
    ]
    return slim


def elide_text(text: str) -> str:
    words = str(text).split()
    if len(words) <= ELIDED_WORDS + 4:
        return str(text)
    return " ".join(words[:ELIDED_WORDS]) + " …"


def _line(r: dict[str, Any], where: str) -> str:
    """One passage read earlier: `KEY s8 p5 “5.2 Leader election”: its opening words …`."""
    head = str(r.get("section") or r.get("heading") or "")
    text = str(r.get("text", ""))
    if head:  # the passage's own heading need not be said twice
        text = re.sub(r"^#+\s*" + re.escape(head) + r"\s*", "", text)
    place = " ".join(str(x) for x in (where, r.get("section_id") or r.get("asset_id")) if x)
    page = f" p{r['page']}" if r.get("page") else ""
    title = f" “{head}”" if head else ""
    return f"{place}{page}{title}: {elide_text(text)}"


def _outline_sections(outline: str) -> str:
    """An outline read earlier: its section lines only, without their sizes (figures, tables
    and word counts were listed then)."""
    lines = [
        re.sub(r" \(~[\d,]+ words\)$", "", ln)
        for ln in outline.splitlines()
        if re.match(r"\s*- \[(s\d+|abstract)\]", ln)
    ]
    return "\n".join(lines) if lines else outline


def elide_result(tool: str, content: Any) -> Any:
    """An older result as the model is reminded of it: what was asked, and one line per
    passage (where it is, its opening words), with one note that the full texts are kept."""
    if not succeeded(content):
        return content
    if content.get("note") == SHORTENED or content.get("shortened"):  # elided already
        return content
    if tool == "get_document_toc":
        out = {k: content[k] for k in ("status", "item_key", "title") if k in content}
        out["outline"] = _outline_sections(str(content.get("outline", "")))
        out["shortened"] = True
        return out
    if tool == "search_corpus":
        out = {k: content[k] for k in ("status", "query", "papers") if k in content}
        rows = content.get("results") or []
        out["results"] = [_line(r, str(r.get("item_key", ""))) for r in rows if isinstance(r, dict)]
    else:
        out = {k: content[k] for k in ("status", "item_key", "title") if k in content}
        rows = content.get("assets") or []
        out["assets"] = [_line(r, "") for r in rows if isinstance(r, dict)]
    out["note"] = SHORTENED
    return out


def elide_history(messages: list[ModelMessage]) -> list[ModelMessage]:
    """The search agent's history with every read but the latest request's shortened."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, ModelRequest)), default=-1)
    out: list[ModelMessage] = []
    for i, m in enumerate(messages):
        if (
            i != last
            and isinstance(m, ModelRequest)
            and any(isinstance(p, ToolReturnPart) and p.tool_name in READS for p in m.parts)
        ):
            parts = [
                dataclasses.replace(p, content=elide_result(p.tool_name, p.content))
                if isinstance(p, ToolReturnPart) and p.tool_name in READS
                else p
                for p in m.parts
            ]
            m = dataclasses.replace(m, parts=parts)
        out.append(m)
    return out


__all__ = [
    "ECONOMY",
    "ELIDED_WORDS",
    "READS",
    "SHORTENED",
    "elide_history",
    "elide_result",
    "elide_text",
    "for_model",
    "read_for_model",
]
