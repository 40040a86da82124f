"""`App`'s library: indexing a source, and what the index holds (items, documents,
collections, search, outlines, reading), as typed records."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from zocrates_nb.app import library
from zocrates_nb.app.core import MAX_QUERY_CHARS, AppCore, user_text
from zocrates_nb.app.library import IndexStatus, SearchHit
from zocrates_nb.app.retractions import retraction_status
from zocrates_nb.app.view import turn_view
from zocrates_nb.errors import UsageError
from zocrates_nb.retrieval import ReadResult, TitleMatch, TocResult, search_titles
from zocrates_nb.turn import AskOptions, TurnResult, TurnView

if TYPE_CHECKING:
    from zocrates_nb.app.doctor import DoctorReport, ModelsInfo
    from zocrates_nb.index import IndexReport
    from zocrates_nb.index.model import Chunk, DocumentRecord, ItemRecord
    from zocrates_nb.ingest.bundle import Bundle
    from zocrates_nb.online.notices import RetractionStatus


class LibraryRecords(AppCore):
    """Indexing and reading the library (mixed into `App`)."""

    def status(self, *, check_retractions: bool = True) -> IndexStatus:
        """What the index holds: items, documents per status, chunks, sizes; and the papers the
        last retraction check flagged (checked again first when online search is on and the
        last check is due, unless not `check_retractions`)."""
        found = super().status()
        found.retractions = retraction_status(self, refresh=None if check_retractions else False)
        return found

    def retractions(self, *, refresh: bool | None = None) -> RetractionStatus:
        """The library's retracted papers: the last check of its DOIs against OpenAlex and
        Crossref, made again first when online search is on and it is due (`refresh` True:
        now; False: never). Offline nothing is sent and the last check's date is said."""
        return retraction_status(self, refresh=refresh)

    def index(
        self,
        *,
        zotero_dir: Path | str | None = None,
        zotero_local: bool = False,
        zotero_web: str | None = None,
        group: bool = False,
        folder: Path | str | None = None,
        sample: bool = False,
        progress: bool = False,
    ) -> IndexReport:
        """Index one library source, incrementally (none given: the auto-detected ~/Zotero).

        `zotero_web` is a Web API library id (a group's when `group`), its key from
        $ZOTERO_API_KEY; `sample=True` is the built-in sample library.
        """
        report = library.index_into(
            self._writable_index(),
            self.home,
            self.settings,
            zotero_dir=Path(zotero_dir) if zotero_dir else None,
            zotero_local=zotero_local,
            zotero_web=zotero_web,
            group=group,
            folder=Path(folder) if folder else None,
            sample=sample,
            progress=progress,
        )
        self._engine = None  # its vocabulary is the library's
        return report

    def view(self, turn: TurnResult, **changes: Any) -> TurnView:
        """The one view of a turn every surface receives (`TurnView`: chips named, sources
        and citations linked, each `[n]` at its sentence's page); `changes` applied last."""
        return turn_view(self, turn, **changes)

    def item(self, key: str) -> ItemRecord | None:
        """An item's metadata, or None when the index does not know the key."""
        return self.library_index.item(key)

    def items(self) -> list[ItemRecord]:
        return self.library_index.items()

    def documents(self, item_key: str | None = None) -> list[DocumentRecord]:
        """The documents (PDFs, notes, snapshots) of an item, or of the whole index."""
        return self.library_index.documents(item_key)

    def document(self, doc_key: str) -> DocumentRecord | None:
        return self.library_index.catalog.document(doc_key)

    def chunks(self, chunk_ids: Sequence[str]) -> list[Chunk]:
        """Passages by id, in the order asked (ids the index lacks left out)."""
        return self.library_index.chunks(list(chunk_ids))

    def collections(self) -> dict[str, str]:
        """Collection key → its path ("Parent / Child"), for naming a scope."""
        return self.library_index.collection_paths()

    def search(
        self,
        query: str,
        *,
        items: Sequence[str] | None = None,
        collections: Sequence[str] | None = None,
        chunk_type: str | None = None,
        limit: int = 10,
    ) -> list[SearchHit]:
        """Hybrid (BM25 + dense) search, within items or collections when given."""
        query = user_text(query, max_chars=MAX_QUERY_CHARS, what="the query")
        try:  # lists of keys or None, as a question's (`false` or "KEY" is refused, not read)
            scope = AskOptions.model_validate({"items": items, "collections": collections}).scope
        except ValidationError as e:
            raise UsageError.invalid(e) from None
        self.check_scope(scope)
        return library.search(self.library_index, query, scope, chunk_type=chunk_type,
                              limit=limit)  # fmt: skip

    def toc(self, key: str) -> TocResult:
        """A document's outline (parent, attachment or note key), as the search agent sees it."""
        return library.toc(self.library_index, self.settings, key)

    def read(self, key: str, asset_ids: Sequence[str]) -> ReadResult:
        """Sections (`s2`), figures (`f1`), tables (`t1`), `abstract`, `full` or pages (`p4`)."""
        return library.read(self.library_index, self.settings, key, list(asset_ids))

    def convert(self, path: Path | str) -> Bundle:
        """Convert one file as indexing would; its `.toc` is what the agents navigate."""
        return library.convert(Path(path))

    def search_titles(self, query: str, limit: int = 10) -> list[TitleMatch]:
        """Items and collections whose title or name matches `query` (for scope pickers)."""
        query = user_text(query, max_chars=MAX_QUERY_CHARS, what="the query")
        return search_titles(self.library_index, query, limit) if query else []

    def example_questions(self, *, cached: bool = False) -> list[str] | None:
        """Up to three questions drawn from the library's own topics (`index/topics.py`),
        cached per index generation. `cached=True` never computes: None when not cached yet."""
        from zocrates_nb.index.topics import cached_example_questions, example_questions

        index = self.library_index
        return cached_example_questions(index) if cached else example_questions(index)

    def models(self) -> ModelsInfo:
        """Which model each role runs and whether the offline engine answers (as `doctor`
        shows them), for a surface's header line."""
        from zocrates_nb.app.doctor import models_info

        return models_info(self)

    def doctor(self) -> DoctorReport:
        """Models per role, embedding and rerank models, library and index health, and every
        place data can go."""
        from zocrates_nb.app.doctor import doctor

        return doctor(self)
