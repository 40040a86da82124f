"""Retrieval toolkit of a search run: plain Python, no agent framework.

- `RunState` (state.py): seen chunks/assets, evidence, budgets; JSON round-trip for checkpoints.
- `Toolkit` (tools.py): search_corpus, get_document_toc, read_document, conclude_search,
  request_search_extension, with the budget guard, dedup and scope enforcement inside; what
  they return are the typed results of results.py (`SearchResult`, `TocResult`, `ReadResult`,
  `Refusal`, …).
- `bind`, `allowed_keys` (scope.py): a run state for a `turn.Scope`, bound to an index.
- `Reranker`, `rerank_evidence` (rerank.py) and `format_evidence` (evidence.py): the evidence
  as the synthesizer gets it.
- `search_titles` (titles.py): items and collections by title, for scope pickers;
  `library_lexicon` (lexicon.py): whether a word occurs in the library.
"""

from zocrates_nb.retrieval.evidence import format_authors, format_evidence
from zocrates_nb.retrieval.lexicon import library_lexicon
from zocrates_nb.retrieval.rerank import FALLBACK_METHOD, Reranker, rerank_evidence, rerank_state
from zocrates_nb.retrieval.results import (
    ReadAsset,
    ReadResult,
    Refusal,
    SearchResult,
    TocResult,
    ToolResult,
)
from zocrates_nb.retrieval.scope import allowed_keys, bind, collection_names
from zocrates_nb.retrieval.state import (
    CompletionReport,
    Evidence,
    ExtensionRequest,
    RunState,
)
from zocrates_nb.retrieval.titles import TitleMatch, search_titles
from zocrates_nb.retrieval.tools import RETRIEVAL_TOOLS, Toolkit, auto_report, budget_notice

__all__ = [
    "FALLBACK_METHOD",
    "RETRIEVAL_TOOLS",
    "CompletionReport",
    "Evidence",
    "ExtensionRequest",
    "ReadAsset",
    "ReadResult",
    "Refusal",
    "Reranker",
    "RunState",
    "SearchResult",
    "TitleMatch",
    "TocResult",
    "ToolResult",
    "Toolkit",
    "allowed_keys",
    "auto_report",
    "bind",
    "budget_notice",
    "collection_names",
    "format_authors",
    "format_evidence",
    "library_lexicon",
    "rerank_evidence",
    "rerank_state",
    "search_titles",
]
