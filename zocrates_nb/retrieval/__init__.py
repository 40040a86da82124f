"""Retrieval toolkit of a search run: plain Python, no agent framework.

- `RunState` (state.py): seen chunks/assets, evidence, budgets; JSON round-trip for checkpoints.
- `Toolkit` (tools.py): search_corpus, get_document_toc, read_document, conclude_search,
  request_search_extension, with the budget guard, dedup and scope enforcement inside.
- `make_scope` (scope.py): library, selection or collection scope bound to an index.
- `Reranker`, `rerank_evidence` (rerank.py) and `format_evidence` (evidence.py): the evidence
  as the synthesizer gets it.
"""

from zocrates_nb.retrieval.evidence import format_authors, format_evidence
from zocrates_nb.retrieval.rerank import FALLBACK_METHOD, Reranker, rerank_evidence, rerank_state
from zocrates_nb.retrieval.scope import make_scope
from zocrates_nb.retrieval.state import (
    CompletionReport,
    Evidence,
    ExtensionRequest,
    RunState,
    Scope,
)
from zocrates_nb.retrieval.tools import RETRIEVAL_TOOLS, Toolkit, auto_report, budget_notice

__all__ = [
    "FALLBACK_METHOD",
    "RETRIEVAL_TOOLS",
    "CompletionReport",
    "Evidence",
    "ExtensionRequest",
    "Reranker",
    "RunState",
    "Scope",
    "Toolkit",
    "auto_report",
    "budget_notice",
    "format_authors",
    "format_evidence",
    "make_scope",
    "rerank_evidence",
    "rerank_state",
]
