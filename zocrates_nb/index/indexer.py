"""Incremental indexing of a `Library` into an `Index`.

Only what changed is redone. A document's fingerprint covers its content (file sha256, or the
note's HTML), the metadata that goes into its chunks (title, authors, year, abstract, venue,
tags, parent) and the chunking/embedding settings; file hashes are only recomputed when size or
mtime changed. Converted bundles are cached by content, so a metadata edit re-chunks and
re-embeds one document without converting it again.

Crash safety (kill -9 at any point leaves a consistent index):
1. the new version is converted, chunked and embedded while the old one stays searchable;
2. one transaction marks the document `indexing` and drops its chunk rows;
3. its old vectors are deleted and the new ones upserted (ids are chunk ids);
4. one transaction writes the chunk rows (+ FTS rows) and marks the document `done`.
A run interrupted between 2 and 4 leaves the document `indexing`: its vectors are purged when
the index is next opened and the next run redoes it. A new version that fails to convert leaves
the previous good version searchable (the error is reported, and retried when the file changes).

PDF and HTML conversion runs in a pool of worker processes (converter.py), one per core by
default (`index.convert_workers`; spawn: never fork a process that has loaded torch), so it overlaps
embedding in this process and a pathological PDF can be timed out and reported; Markdown and
plain text convert in-process. Workers write bundles to the on-disk cache and hold one document
each, so memory grows with the worker count, never with the library. Each worker reports the
pages it has read through shared memory: the progress bar shows them, and the timeout counts
time *without progress*, so a 600-page thesis converts while a stuck page is still stopped.
Damaged derived data (a truncated catalogue, a deleted vector store) is rebuilt at the start of
a run from the cached bundles (health.py); every document folder is checked to be inside the
data home before it is written or removed (library/paths.py).

Embedding and writing go by groups of documents (`EMBED_GROUP` passages): the group's passages
are sorted by length and embedded in slices (little padding in a batch, and torch's thread
count re-measured per slice, see `threads.py`); then one transaction marks the group
`indexing`, one vector delete and upsert, one transaction writes every chunk row. Steps 2–4
above then hold for the group as a whole.

Whatever goes wrong with one document is one plain line in the report (`ingest.problems`);
what a reader should know about a document that did convert (bytes replaced, markup
flattened, an HTML page saved as .pdf) is a warning line; files the library reader passed
over (links leaving the library folder, special files) are listed as skipped.
"""

from __future__ import annotations

import copy
import errno
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from zocrates_nb.index import healing
from zocrates_nb.index.chunking import CHUNKER_VERSION, chunk_bundle
from zocrates_nb.index.converter import IN_PROCESS_KINDS, Converter, convert_workers, cores
from zocrates_nb.index.model import Chunk, DocumentRecord, ItemRecord
from zocrates_nb.index.passages import PASSAGE_VERSION, dense_passages
from zocrates_nb.index.query_model import export_for_questions
from zocrates_nb.index.store import RUN_FINISHED, RUN_STARTED
from zocrates_nb.index.threads import ThreadTuner, embed_sorted
from zocrates_nb.ingest import bundle as ingest_bundle
from zocrates_nb.ingest import document_kind, sniff
from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.ingest.problems import DISK_FULL, one_line, os_message, plain_message
from zocrates_nb.library.model import Attachment, Item, Library, Note
from zocrates_nb.library.paths import UnsafePath, printable

if TYPE_CHECKING:
    from zocrates_nb.index.store import Index

CONVERT_TIMEOUT = 120.0  # seconds a conversion may go without reading another page
EMBED_GROUP = 256  # passages embedded and written together (several documents' worth)

@dataclass
class IndexReport:
    """What one indexing run did; `errors`/`skipped`/`warnings` hold one line per document
    (`skipped` also lists files the library reader passed over, with empty keys)."""

    items: int = 0  # regular items (papers) in the library
    attachments: int = 0
    notes: int = 0
    chunks: int = 0  # total in the index after the run
    errors: list[dict[str, str]] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    warnings: list[dict[str, str]] = field(default_factory=list)
    repairs: list[str] = field(default_factory=list)  # damaged derived data rebuilt (health.py)
    converted: int = 0  # documents converted this run
    reused: int = 0  # documents (re)indexed from a cached bundle
    unchanged: int = 0
    removed: int = 0
    seconds: float = 0.0
    # Where the time went (wall seconds in this process): waiting for conversions, chunking,
    # embedding, writing SQLite + Chroma + bundles. What a scale benchmark extrapolates from.
    timings: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["seconds"] = round(self.seconds, 2)
        out["timings"] = {k: round(v, 2) for k, v in self.timings.items()}
        return out

    def _add(self, step: str, seconds: float) -> None:
        self.timings[step] = self.timings.get(step, 0.0) + seconds


@dataclass
class _Meta:
    """Metadata written over the converter's guesses (from the Zotero item)."""

    title: str = ""
    authors: list[str] = field(default_factory=list)
    year: int | None = None
    abstract: str = ""
    venue: str = ""
    tags: list[str] = field(default_factory=list)


@dataclass
class _Doc:
    record: DocumentRecord
    meta: _Meta
    path: Path | None = None
    content_type: str = ""
    fallback: Path | None = None
    note: Note | None = None
    skip_reason: str | None = None
    fingerprint: str = ""
    attempt_fingerprint: str = ""


def index_library(
    library: Library,
    index: Index,
    *,
    progress: bool = True,
    max_pages: int | None = None,
    timeout: float = CONVERT_TIMEOUT,
    retry_errors: bool = False,
) -> IndexReport:
    """Bring `index` in line with `library`, redoing only what changed.

    `max_pages` defaults to settings.index.max_pages (longer PDFs are reported, not indexed);
    `timeout` bounds how long one file's conversion may go without progress (a PDF page
    read); the worker is then killed and the file reported;
    `retry_errors` converts again documents that failed before although unchanged
    (a failure is otherwise retried only when the file, its metadata or max_pages change).
    """
    t0 = time.perf_counter()
    if max_pages is None:
        max_pages = index.settings.index.max_pages
    report = IndexReport(
        items=len(library.items),
        attachments=sum(1 for _ in library.attachments()),
        notes=sum(1 for _ in library.notes()),
        skipped=[{"item_key": "", "doc_key": "", "file": sk.path, "reason": sk.reason}
                 for sk in library.skipped],
    )
    with index.writer_lock():
        # Damaged derived data is rebuilt from the cached bundles (health.py).
        report.repairs = [*index.repairs, *healing.heal_catalog(index)]
        index.repairs = []
        if index.catalog.outdated:  # written by an older zocrates-nb: rebuilt, not migrated
            index.rebuild()
        repairs, redo = healing.heal(index)
        report.repairs += repairs
        _check_model(index)
        catalog = index.catalog
        catalog.set_meta(RUN_STARTED, _now())  # `run_state`: a run that never finishes shows
        unfinished = catalog.doc_keys_with_status("indexing")
        if unfinished:
            index.dense.delete_documents(unfinished)
        catalog.replace_items(_item_records(library), library.collections.values())

        states = catalog.document_states()
        docs = list(_documents(library, index, states, max_pages))
        current = {d.record.doc_key for d in docs}
        stale = [k for k in states if k not in current]
        if stale:
            catalog.mark_indexing(stale)
            index.dense.delete_documents(stale)
            catalog.delete_documents(stale)
            for key in stale:
                try:
                    shutil.rmtree(index.document_dir(key), ignore_errors=True)
                except UnsafePath as e:  # a key an older version took as a path: left alone
                    report.warnings.append({"item_key": "", "doc_key": printable(key), "file": "",
                                            "warning": one_line(str(e))})  # fmt: skip
            report.removed = len(stale)

        todo: list[_Doc] = []
        for doc in docs:
            rec = doc.record
            state = states.get(rec.doc_key)
            if doc.skip_reason is not None:
                report.skipped.append(_line(rec, "reason", doc.skip_reason))
                if state is None or state.status != "skipped" or state.error != doc.skip_reason:
                    catalog.record_problem(
                        rec, status="skipped", error=doc.skip_reason, attempt_fingerprint=None
                    )
                continue
            done = state is not None and state.status == "done" and rec.doc_key not in redo
            if done and state is not None and state.fingerprint == doc.fingerprint:
                report.unchanged += 1
                moved = (state.file_size, state.file_mtime_ns) != (rec.file_size, rec.file_mtime_ns)
                if moved or state.error:
                    catalog.touch_document(rec)
                continue
            if (
                not retry_errors
                and state is not None
                and state.status in ("done", "error")
                and state.attempt_fingerprint == doc.attempt_fingerprint
                and state.error
            ):
                report.errors.append(_line(rec, "error", state.error))
                continue
            todo.append(doc)

        if todo:
            _run(todo, index, report, max_pages=max_pages, timeout=timeout, progress=progress)
        index.prune_bundle_cache()  # after an upgrade: the old converter's bundles
        report.chunks = catalog.chunk_count()
        healing.record_vectors(index)
        catalog.set_meta(RUN_FINISHED, _now())
    from zocrates_nb.index.embedder import model_path

    export_for_questions(index.model_name, model_path)
    report.seconds = time.perf_counter() - t0
    return report


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")




# -- planning -----------------------------------------------------------------------------


def _check_model(index: Index) -> None:
    """A different embedding model (or dimension) means every vector must be redone."""
    catalog = index.catalog
    stored = catalog.get_meta("embedding_model")
    wanted = index.configured_model
    if stored == wanted:
        return
    if stored is not None:
        done = catalog.doc_keys_with_status("done")
        catalog.mark_indexing(done)
        catalog.set_meta("embedding_model", wanted)
        index._dense = None
        index.dense.reset()
    else:
        catalog.set_meta("embedding_model", wanted)
        index._dense = None


def _item_records(library: Library) -> Iterator[ItemRecord]:
    for it in library.items.values():
        yield ItemRecord(
            key=it.key,
            item_type=it.item_type,
            title=it.title,
            authors=it.authors,
            year=it.year,
            date=it.date,
            doi=it.doi,
            abstract=it.abstract,
            venue=it.venue,
            url=it.url,
            tags=list(it.tags),
            collections=list(it.collections),
            version=it.version,
        )
    for note in library.standalone_notes:
        yield ItemRecord(
            key=note.key, item_type="note", title=note.title,
            collections=list(note.collections), version=note.version,
        )
    for att in library.standalone_attachments:
        yield ItemRecord(key=att.key, item_type="attachment", title=att.title,
                         url=att.url, version=att.version)


def _documents(
    library: Library, index: Index, states: dict[str, Any], max_pages: int
) -> Iterator[_Doc]:
    settings = index.settings.index
    # The converter version makes an upgraded converter redo every converted document.
    salt = [CHUNKER_VERSION, PASSAGE_VERSION, ingest_bundle.CONVERTER_VERSION,
            index.configured_model, settings.chunk_min_words, settings.chunk_max_words]
    docs: list[_Doc] = []
    for item in library.items.values():
        docs += [_attachment_doc(a, item, index, states, salt, max_pages) for a in item.attachments]
        docs += [_note_doc(note, item, salt) for note in item.notes]
    docs += [_attachment_doc(a, None, index, states, salt, max_pages)
             for a in library.standalone_attachments]  # fmt: skip
    docs += [_note_doc(note, None, salt) for note in library.standalone_notes]
    for doc in docs:
        try:  # its key names its folder under documents/: it must stay there
            index.document_dir(doc.record.doc_key)
        except UnsafePath as e:
            doc.skip_reason, doc.note = str(e), None
        yield doc


def _item_meta(item: Item | None) -> _Meta:
    if item is None:
        return _Meta()
    return _Meta(
        title=item.title,
        authors=item.authors,
        year=item.year,
        abstract=item.abstract,
        venue=item.venue,
        tags=list(item.tags),
    )


def _fingerprint(salt: list[Any], doc: _Doc) -> str:
    rec = doc.record
    payload = [*salt, rec.kind, rec.sha256, rec.item_key, asdict(doc.meta)]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]


def _attachment_doc(
    att: Attachment,
    item: Item | None,
    index: Index,
    states: dict[str, Any],
    salt: list[Any],
    max_pages: int,
) -> _Doc:
    path = att.path
    rec = DocumentRecord(
        doc_key=att.key,
        item_key=item.key if item is not None else att.key,
        kind=_kind(path, att.content_type),
        title=att.title,
        file=printable(str(path)) if path is not None else (att.url or ""),
        version=att.version,
        bundle_dir=str(Path("documents") / att.key),
    )
    doc = _Doc(record=rec, meta=_item_meta(item), path=path, content_type=att.content_type,
               fallback=att.fulltext_cache)
    if att.skip_reason:
        doc.skip_reason = att.skip_reason
    elif path is None:
        doc.skip_reason = f"no local file ({att.link_mode.replace('_', ' ')})"
    elif path.is_dir():
        doc.skip_reason = f"a folder, not a file: {printable(path)}"
    elif not path.is_file():
        doc.skip_reason = f"file not found: {printable(path)}"
    elif rec.kind == "file":
        doc.skip_reason = f"unsupported file type: {att.content_type or path.suffix or '?'}"
    if doc.skip_reason:
        return doc
    assert path is not None
    try:
        st = path.stat()
        rec.file_size, rec.file_mtime_ns = st.st_size, st.st_mtime_ns
        state = states.get(att.key)
        if (
            state is not None
            and state.sha256
            and (state.file_size, state.file_mtime_ns) == (st.st_size, st.st_mtime_ns)
        ):
            rec.sha256 = state.sha256  # same size and mtime: trust the stored hash
        else:
            with open(path, "rb") as fh:
                rec.sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError as e:
        doc.skip_reason = os_message(e)
        return doc
    doc.fingerprint = _fingerprint(salt, doc)
    doc.attempt_fingerprint = f"{doc.fingerprint}:{max_pages}"
    return doc


def _kind(path: Path | None, content_type: str) -> str:
    """The document kind; a PDF saved under a text name is a PDF (it converts in the worker)."""
    kind = document_kind(path, content_type) or "file"
    if kind in IN_PROCESS_KINDS and path is not None:
        try:
            with open(path, "rb") as fh:
                if sniff(fh.read(1024)) == "pdf":
                    return "pdf"
        except OSError:
            pass  # reported when the file is hashed
    return kind


def _note_doc(note: Note, item: Item | None, salt: list[Any]) -> _Doc:
    meta = _item_meta(item)
    meta.title, meta.abstract, meta.venue, meta.tags = note.title, "", "", []
    rec = DocumentRecord(
        doc_key=note.key,
        item_key=item.key if item is not None else note.key,
        kind="note",
        title=note.title,
        sha256=hashlib.sha256(note.html.encode("utf-8")).hexdigest(),
        version=note.version,
        bundle_dir=str(Path("documents") / note.key),
    )
    doc = _Doc(record=rec, meta=meta, note=note)
    doc.fingerprint = _fingerprint(salt, doc)
    doc.attempt_fingerprint = doc.fingerprint
    return doc


# -- running ------------------------------------------------------------------------------


@dataclass
class _Ready:
    """A document converted and chunked, waiting for its group to be embedded and written."""

    doc: _Doc
    bundle: Bundle
    chunks: list[Chunk]
    owners: list[Chunk]  # the chunk of each text embedded (a chunk has a few windows)
    texts: list[str]
    converted: bool


def _run(
    todo: list[_Doc],
    index: Index,
    report: IndexReport,
    *,
    max_pages: int,
    timeout: float,
    progress: bool,
) -> None:
    catalog = index.catalog
    settings = index.settings.index
    tuner = ThreadTuner(cores())
    fresh = {id(d) for d in todo if not Bundle.exists(index.bundle_cache_dir(str(d.record.sha256)))}
    workers = min(convert_workers(settings.convert_workers), max(len(fresh), 1))
    converter = Converter(index, todo, max_pages, timeout, workers)
    converter.prefetch()
    bar = tqdm(total=len(todo), desc="indexing", unit="doc", disable=not progress)
    group: list[_Ready] = []

    def flush() -> None:
        if group:
            _write_group(group, index, report, tuner, fresh)
            bar.update(len(group))
            group.clear()

    finished = False
    try:
        for doc in todo:
            rec = doc.record
            bar.set_postfix_str(rec.title[:40], refresh=False)

            def pages(done: int, total: int, title: str = rec.title) -> None:
                if total >= 50:  # long documents: show the pages as they are read
                    bar.set_postfix_str(f"{title[:30]} · page {done:,}/{total:,}")

            t0 = time.perf_counter()
            converter.rotate()  # keep the converters ahead of this loop
            try:
                bundle, converted = _obtain(doc, index, converter, pages)
            except _Failed as e:
                if str(e) == DISK_FULL:  # every file would fail the same: stop, retry later
                    raise OSError(errno.ENOSPC, "No space left on device", str(index.home)) from e
                catalog.record_problem(
                    rec, status="error", error=str(e), attempt_fingerprint=doc.attempt_fingerprint
                )
                report.errors.append(_line(rec, "error", str(e)))
                bar.update(1)
                continue
            finally:
                report._add("convert_wait", time.perf_counter() - t0)
            t0 = time.perf_counter()
            report.warnings.extend(_line(rec, "warning", w) for w in bundle.toc.warnings)
            bundle = _with_meta(bundle, doc.meta)
            chunks = chunk_bundle(
                bundle,
                item_key=rec.item_key,
                doc_key=rec.doc_key,
                kind=rec.kind,
                min_words=settings.chunk_min_words,
                max_words=settings.chunk_max_words,
                venue=doc.meta.venue,
                tags=doc.meta.tags,
            )
            owners, texts = dense_passages(chunks)
            group.append(_Ready(doc, bundle, chunks, owners, texts, converted))
            report._add("chunk", time.perf_counter() - t0)
            if sum(len(r.texts) for r in group) >= EMBED_GROUP:
                flush()
        flush()
        finished = True
    finally:
        bar.close()
        converter.close(kill=not finished)


def _write_group(
    group: list[_Ready], index: Index, report: IndexReport, tuner: ThreadTuner, fresh: set[int]
) -> None:
    """Embed a group of documents in one call, then write it (see the module docstring)."""
    catalog = index.catalog
    texts = [t for r in group for t in r.texts]
    t0 = time.perf_counter()
    vectors = embed_sorted(texts, index, tuner)
    report._add("embed", time.perf_counter() - t0)
    t0 = time.perf_counter()
    records = [r.doc.record for r in group]
    keys = [rec.doc_key for rec in records]
    # From here to finish_documents the group is `indexing` (see module docstring).
    catalog.begin_documents(records)
    index.dense.delete_documents(keys)
    for r in group:
        r.bundle.save(index.document_dir(r.doc.record.doc_key))
    index.dense.upsert([c for r in group for c in r.owners], vectors)
    catalog.finish_documents([(r.doc.record, r.doc.fingerprint, r.chunks) for r in group])
    report._add("write", time.perf_counter() - t0)
    for r in group:
        if r.converted or id(r.doc) in fresh:
            report.converted += 1
        else:
            report.reused += 1


class _Failed(Exception):
    """A document that could not be converted (one-line reason)."""


def _obtain(
    doc: _Doc,
    index: Index,
    converter: Converter,
    on_progress: Callable[[int, int], None] | None = None,
) -> tuple[Bundle, bool]:
    """The document's bundle from the content cache, converting it when absent."""
    cache = index.bundle_cache_dir(str(doc.record.sha256))
    if Bundle.exists(cache):
        try:
            return Bundle.load(cache), False
        except (OSError, ValueError, TypeError) as e:  # a damaged cache entry: redo it
            shutil.rmtree(cache, ignore_errors=True)
            if doc.note is None:
                error = converter.convert(doc, on_progress)
                if error is None and Bundle.exists(cache):
                    return Bundle.load(cache), True
                raise _Failed(error or "the cached conversion was damaged; index again") from e
    if doc.note is not None:
        from zocrates_nb.ingest import convert_note

        try:
            bundle = convert_note(doc.note.html, doc.note.title)
        except Exception as e:  # any failure is the note's plain error
            raise _Failed(plain_message(e)) from e
        bundle.save(cache)
        return bundle, True
    error = converter.convert(doc, on_progress)
    if error is not None:
        raise _Failed(error)
    if not Bundle.exists(cache):
        raise _Failed("the converter wrote no bundle")
    return Bundle.load(cache), True


def _with_meta(bundle: Bundle, meta: _Meta) -> Bundle:
    """The bundle with the library's metadata over the converter's guesses."""
    toc = copy.deepcopy(bundle.toc)
    if meta.title:
        toc.title = meta.title
    if meta.authors:
        toc.authors = list(meta.authors)
    if meta.year is not None:
        toc.year = meta.year
    if meta.abstract:
        toc.abstract = meta.abstract
        toc.abstract_source = "metadata"
    return Bundle(markdown=bundle.markdown, toc=toc)


def _line(rec: DocumentRecord, what: str, text: str) -> dict[str, str]:
    return {"item_key": rec.item_key, "doc_key": rec.doc_key, "file": rec.file,
            what: one_line(text)}
