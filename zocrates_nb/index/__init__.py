"""Index: section-aware chunks, BM25 (SQLite FTS5) + dense (Chroma) search fused (RRF plus a
score term), and the incremental indexer.

Names are imported lazily so that the converter worker process, which unpickles
`zocrates_nb.index.indexer._convert_to_cache`, never imports chromadb or torch.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from zocrates_nb.index.chroma_import import spare_iri_grammar

spare_iri_grammar()  # before any module of the index imports chromadb

if TYPE_CHECKING:
    from zocrates_nb.index.catalog_schema import CATALOGUE_VERSION
    from zocrates_nb.index.chunking import chunk_bundle
    from zocrates_nb.index.fusion import rrf
    from zocrates_nb.index.health import IndexDamaged
    from zocrates_nb.index.indexer import IndexReport, index_library
    from zocrates_nb.index.lexical import IndexVersionError
    from zocrates_nb.index.model import (
        CHUNK_TYPES,
        Chunk,
        DocumentRecord,
        Hit,
        ItemRecord,
        SearchFilter,
    )
    from zocrates_nb.index.store import Index, IndexBusyError

_WHERE = {
    "chunk_bundle": "chunking",
    "rrf": "fusion",
    "IndexDamaged": "health",
    "IndexReport": "indexer",
    "CATALOGUE_VERSION": "catalog_schema",
    "IndexVersionError": "lexical",
    "index_library": "indexer",
    "CHUNK_TYPES": "model",
    "Chunk": "model",
    "DocumentRecord": "model",
    "Hit": "model",
    "ItemRecord": "model",
    "SearchFilter": "model",
    "Index": "store",
    "IndexBusyError": "store",
}

__all__ = [
    "CATALOGUE_VERSION",
    "CHUNK_TYPES",
    "Chunk",
    "DocumentRecord",
    "Hit",
    "Index",
    "IndexBusyError",
    "IndexDamaged",
    "IndexReport",
    "IndexVersionError",
    "ItemRecord",
    "SearchFilter",
    "chunk_bundle",
    "index_library",
    "rrf",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'zocrates_nb.index' has no attribute {name!r}")
    return getattr(import_module(f"zocrates_nb.index.{module}"), name)
