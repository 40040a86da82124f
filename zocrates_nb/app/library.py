"""What the App does with the library and its index, as typed records: index a library, report
the index's status, search it, show a document's outline or sections, convert one file.

The CLI's `index`, `status`, `search`, `toc`, `read` and `convert` are these calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, ConfigDict

from zocrates_nb.config import Settings
from zocrates_nb.errors import UsageError
from zocrates_nb.online.notices import RetractionStatus
from zocrates_nb.retrieval.results import ReadResult, Refusal, TocResult
from zocrates_nb.turn import PlacedPassage, Scope

if TYPE_CHECKING:
    from zocrates_nb.index import Hit, Index, IndexReport
    from zocrates_nb.ingest.bundle import Bundle
    from zocrates_nb.retrieval import Toolkit


class SearchHit(PlacedPassage):
    """One passage a search found, with its paper's metadata (higher `score` is better)."""

    model_config = ConfigDict(frozen=True)

    score: float

    @classmethod
    def of(cls, hit: Hit) -> SearchHit:
        return cls.from_passage(hit.chunk, score=round(hit.score, 6))


class IndexStatus(BaseModel):
    """What a data home's index holds (counts and sizes; no model is loaded to tell)."""

    home: str
    items: int
    documents: dict[str, int]  # documents per status: done, error, skipped, indexing
    chunks: int
    vectors: int | None = None  # in the vector store (a chunk has one per window of its text)
    problems: list[str] = []  # the vectors checked against the chunks (`index` repairs them)
    last_indexed: str | None
    embedding_model: str
    chroma_mode: str
    chroma: str
    sizes: dict[str, int]  # bytes per part
    # The library's retracted papers, from the last check (made first when online and due).
    retractions: RetractionStatus | None = None


def index_into(
    index: Index,
    home: Path,
    settings: Settings,
    *,
    zotero_dir: Path | None = None,
    zotero_local: bool = False,
    zotero_web: str | None = None,
    group: bool = False,
    folder: Path | None = None,
    sample: bool = False,
    progress: bool = False,
) -> IndexReport:
    """Bring the index in line with one library source: the one given, else the one this home
    was last indexed from, else the auto-detected Zotero data directory. The source is
    remembered in the home once it has been read."""
    from zocrates_nb.index import index_library
    from zocrates_nb.library import find_zotero_dir, open_library, source

    given = [zotero_dir, zotero_local or None, zotero_web, folder, sample or None]
    if sum(g is not None for g in given) > 1:
        raise UsageError(
            "give one library source: a Zotero data directory, Zotero's local API, a Zotero "
            "Web API library, a folder, or the sample library"
        )
    src = source.LibrarySource.given(
        zotero_dir=zotero_dir, zotero_local=zotero_local, zotero_web=zotero_web, group=group,
        folder=folder, sample=sample,
    ) or source.remembered(home)  # fmt: skip
    if src is None and (found := find_zotero_dir()) is not None:
        src = source.LibrarySource.given(zotero_dir=found)
    if src is not None and src.kind == "sample":
        from zocrates_nb import sample as samples

        library = open_library(folder=samples.build(home / "sample-library"))
    else:
        library = open_library(
            zotero_dir=Path(src.path) if src and src.kind == "zotero_dir" and src.path else None,
            zotero_local=src is not None and src.kind == "zotero_local",
            zotero_web=src.library_id if src and src.kind == "zotero_web" else None,
            group=src is not None and src.group,
            folder=Path(src.path) if src and src.kind == "folder" and src.path else None,
            download_dir=home / "downloads",
            web_base_url=settings.zotero.web.base_url,
        )
    if src is not None:
        source.remember(home, src)
    return index_library(library, index, progress=progress, max_pages=settings.index.max_pages)


def status(index: Index) -> IndexStatus:
    return IndexStatus.model_validate(index.status())


def search(
    index: Index,
    query: str,
    scope: Scope,
    *,
    chunk_type: str | None = None,
    limit: int = 10,
) -> list[SearchHit]:
    """Hybrid search within a scope, by the rule a question's tools follow (`allowed_keys`:
    an attachment or note key stands for its parent item); unknown collections are a
    UsageError naming the known ones."""
    from zocrates_nb.index import SearchFilter
    from zocrates_nb.retrieval import allowed_keys

    try:
        keys = allowed_keys(index, scope)
    except ValueError as e:
        raise UsageError(str(e)) from None
    flt = SearchFilter(
        item_keys=keys if scope.kind != "library" else None,  # restricted to none: nothing
        chunk_types=[chunk_type] if chunk_type else None,
    )
    return [SearchHit.of(h) for h in index.search(query, flt, limit=limit)]


def toc(index: Index, settings: Settings, key: str) -> TocResult:
    """A document's compact outline, exactly as the search agent gets it."""
    return _succeeded(_toolkit(index, settings).document_toc(key))


def read(index: Index, settings: Settings, key: str, asset_ids: list[str]) -> ReadResult:
    """Sections, figures or tables of a document, exactly as the search agent reads them."""
    return _succeeded(_toolkit(index, settings).read_document(key, asset_ids))


def convert(path: Path) -> Bundle:
    """Convert one file as indexing would (its Markdown and table of contents)."""
    from zocrates_nb.ingest import ConversionError, convert_file

    path = Path(path).expanduser()
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        return convert_file(path)
    except ConversionError as e:
        raise UsageError(f"{path.name}: {e}") from None


def _toolkit(index: Index, settings: Settings) -> Toolkit:
    """The agent's tools with a fresh run state at library scope."""
    from zocrates_nb.retrieval import RunState, Toolkit

    return Toolkit(index, RunState.new(settings.retrieval))


R = TypeVar("R", TocResult, ReadResult)


def _succeeded(result: R | Refusal) -> R:
    if isinstance(result, Refusal):
        raise UsageError(result.message or result.status)
    return result


__all__ = ["IndexStatus", "SearchHit"]
