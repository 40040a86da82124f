"""The converter processes: PDF and HTML conversion in a pool of spawn-context workers.

Conversion runs beside embedding (in this process), and a pathological file can be stopped:
the timeout counts time *without progress* (each worker reports the pages it has read through
shared memory), and a worker that crashes or runs out of memory loses only its file.

Two guards make a worker safe to leave running:
- it dies with the process that started it, however that one ends (SIGKILL included): on Linux
  the kernel sends it SIGKILL when its parent goes (`PR_SET_PDEATHSIG`), and on every system a
  watcher thread ends it once its parent pid changes (reparented). Without them a killed
  indexer left its workers (~170 MB each) and multiprocessing's resource tracker running.
- its address space is capped at what it has mapped once its libraries are loaded plus
  `index.convert_memory_mb` (`RLIMIT_AS`): a small PDF whose content streams inflate to
  gigabytes fails alone, with a message naming the setting.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import ctypes
import errno
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from zocrates_nb.ingest.bundle import Bundle
from zocrates_nb.ingest.problems import plain_message

if TYPE_CHECKING:
    from zocrates_nb.index.model import DocumentRecord
    from zocrates_nb.index.store import Index
    from zocrates_nb.library.model import Note

try:
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

MAX_AUTO_WORKERS = 8
# Shared progress values per worker: its pid, job id, pages read, pages in all, heartbeats.
_SLOT = 5
# Documents a converter process handles before it is replaced: whatever a converter library
# leaks on odd PDFs is returned to the system, so memory stays bounded on any library size.
# (A pool is given `workers` x this many and then replaced whole: `max_tasks_per_child` hangs
# on Python 3.11 once every task is queued up front, CPython gh-115634.)
TASKS_PER_WORKER = 40
_POLL = 0.5  # how often the worker's progress is looked at while waiting
_PARENT_POLL = 1.0  # how often a worker looks whether its parent is still there
_PR_SET_PDEATHSIG = 1  # linux/prctl.h
# Plain text and Markdown convert in microseconds: not worth a trip to the worker process.
IN_PROCESS_KINDS = frozenset({"markdown", "text"})
# How a worker that hit its memory cap usually ends: PDFium aborts when an allocation fails
# (SIGABRT); the kernel's OOM killer sends SIGKILL.
_OUT_OF_MEMORY_SIGNALS = frozenset({-signal.SIGABRT, -signal.SIGKILL, -signal.SIGSEGV})


def memory_message(limit_mb: int) -> str:
    """What the report says of a file that needed more than a conversion may use."""
    return (f"converting it needed more than the {limit_mb:,} MB of memory a conversion may use "
            "(its content expands far beyond the file's size; raise index.convert_memory_mb "
            "to try again)")  # fmt: skip


def guard_worker(parent: int, memory_mb: int) -> None:
    """In a new worker: die with `parent` (see the module docstring), cap the memory."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it went before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True,
                     name="zocrates-parent-watch").start()  # fmt: skip
    if memory_mb > 0 and resource is not None:
        import zocrates_nb.ingest  # noqa: F401 - its libraries are mapped before the cap

        limit = _address_space() + memory_mb * 1024 * 1024
        with contextlib.suppress(ValueError, OSError):  # a lower hard limit stays
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        with contextlib.suppress(ValueError, OSError):  # a worker that hits it writes no core
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _address_space() -> int:
    """Bytes of address space this process uses now (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL)
    os._exit(1)


# In a converter process: its slot [job id, pages read, pages in all, heartbeats] of the
# shared array, about the file it converts (set by `_init_worker`).
_PROGRESS: Any = None
_BASE = 0
_MEMORY_MB = 0  # the worker's memory cap (index.convert_memory_mb), for its message


def _start_worker(progress: Any, lock: Any, parent: int, memory_mb: int) -> None:
    """A new worker's initializer: its guards, then its progress slot."""
    global _MEMORY_MB
    # Ctrl-C at a terminal reaches the whole process group: the indexer stops its workers
    # itself, so a worker ignores it (started with SIGINT blocked, see `_submit`: none can
    # print a KeyboardInterrupt traceback while it starts either).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    guard_worker(parent, memory_mb)
    _MEMORY_MB = memory_mb
    _init_worker(progress, lock)


def _init_worker(progress: Any, lock: Any) -> None:
    """Each worker claims a slot of the shared progress array: a free one, or that of a
    worker that has exited."""
    global _PROGRESS, _BASE
    with lock:
        for base in range(0, len(progress), _SLOT):
            pid = int(progress[base])
            if pid == 0 or not _alive(pid):
                progress[base : base + _SLOT] = [os.getpid(), 0, 0, 0, 0]
                _PROGRESS, _BASE = progress, base + 1
                return
    _PROGRESS = None  # no slot: conversions still run, only without page progress


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True


def _convert_to_cache(
    path: str,
    content_type: str,
    fallback: str | None,
    max_pages: int,
    out_dir: str,
    job: int = 0,
) -> str | None:
    """Runs in the converter process: bundle written to `out_dir`; else a one-line error."""
    from zocrates_nb.ingest import convert_file

    shared, b = _PROGRESS, _BASE

    def progress(done: int, total: int) -> None:
        if shared is not None:
            shared[b + 1], shared[b + 2], shared[b + 3] = done, total, shared[b + 3] + 1

    if shared is not None:
        shared[b], shared[b + 1], shared[b + 2], shared[b + 3] = job, 0, 0, 0
    try:
        bundle = convert_file(
            Path(path),
            content_type,
            fallback_text=Path(fallback) if fallback else None,
            max_pages=max_pages,
            progress=progress,
        )
        bundle.save(Path(out_dir))
    except MemoryError:
        return memory_message(_MEMORY_MB) if _MEMORY_MB else plain_message(MemoryError())
    except OSError as e:
        if _MEMORY_MB and e.errno == errno.ENOMEM:
            return memory_message(_MEMORY_MB)
        return plain_message(e)
    except Exception as e:  # any failure (or converter bug) is one document's plain error
        return plain_message(e)
    return None


class _Doc(Protocol):
    """A document to convert, as the indexer holds it (indexer.py, which imports this module)."""

    @property
    def record(self) -> DocumentRecord: ...
    @property
    def note(self) -> Note | None: ...
    @property
    def path(self) -> Path | None: ...
    @property
    def content_type(self) -> str: ...
    @property
    def fallback(self) -> Path | None: ...


class Converter:
    """A pool of spawn-context worker processes converting files while this process embeds.

    Every file to convert is queued up front in processing order (the pool hands them out in
    that order), so the document this process waits for is always being converted, and the
    workers finish early and leave the cores to the embedding; a stuck or crashed conversion
    kills the pool, is reported, and the rest is queued again on a fresh one. A pool takes
    `TASKS_PER_WORKER` documents per worker; once it has converted them a fresh pool takes
    the next ones.
    """

    def __init__(
        self, index: Index, docs: Sequence[_Doc], max_pages: int, timeout: float, workers: int = 1
    ) -> None:
        self.index = index
        self.max_pages = max_pages
        self.timeout = timeout
        self.workers = max(1, workers)
        self.memory_mb = index.settings.index.convert_memory_mb
        self._pool: cf.ProcessPoolExecutor | None = None
        self._futures: dict[str, cf.Future[str | None]] = {}
        self._share = TASKS_PER_WORKER * self.workers  # documents per pool
        self._in_pool: list[cf.Future[str | None]] = []  # what the current pool was given
        self._jobs: dict[str, int] = {}  # sha → job id, to match the worker's progress
        self._progress: Any = None
        self._pending = [d for d in docs if self.needs(d)]  # in processing order
        self._consumed: set[int] = set()

    def needs(self, doc: _Doc) -> bool:
        """Whether the document waits for the worker (files not yet in the bundle cache)."""
        return (
            doc.note is None
            and doc.record.kind not in IN_PROCESS_KINDS
            and not Bundle.exists(self._out(doc))
        )

    def _out(self, doc: _Doc) -> Path:
        return self.index.bundle_cache_dir(str(doc.record.sha256))

    def prefetch(self) -> None:
        for doc in self._pending:
            if id(doc) not in self._consumed:
                self._submit(doc)

    def _submit(self, doc: _Doc, *, waited: bool = False) -> None:
        """Give `doc` to the pool; a pool that has its share takes no more, except the
        document this process is about to wait for (`waited`)."""
        sha = str(doc.record.sha256)
        if sha in self._futures or not self.needs(doc):
            return
        if not waited and self._pool is not None and len(self._in_pool) >= self._share:
            return  # this pool has its share: the next one takes it (see `rotate`)
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._progress = context.Array("q", _SLOT * self.workers, lock=False)
            self._pool = cf.ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=context,
                initializer=_start_worker,
                initargs=(self._progress, context.Lock(), os.getpid(), self.memory_mb),
            )
        job = len(self._jobs) + 1
        self._jobs[sha] = job
        with _sigint_blocked():  # a worker started here inherits the mask (see _start_worker)
            future = self._pool.submit(
                _convert_to_cache,
                str(doc.path),
                doc.content_type,
                str(doc.fallback) if doc.fallback else None,
                self.max_pages,
                str(self._out(doc)),
                job,
            )
        self._futures[sha] = future
        self._in_pool.append(future)

    def rotate(self, doc: _Doc | None = None) -> None:
        """Replace a pool that has converted its share with a fresh one given the next
        documents; and make sure `doc` (about to be waited for) is given to a pool."""
        if self._pool is None or len(self._in_pool) < self._share:
            return
        finished = all(f.done() for f in self._in_pool)
        waiting = doc is not None and str(doc.record.sha256) not in self._futures
        if finished or (waiting and doc is not None and self.needs(doc)):
            self.close(kill=not finished)  # unfinished ones are queued again on the new pool
            self._futures = {k: f for k, f in self._futures.items() if _completed(f)}
            if doc is not None:
                self._submit(doc, waited=True)  # first: prefetch skips it (it is consumed)
            self.prefetch()

    def _pages(self, sha: str) -> tuple[int, int, int] | None:
        """(pages read, pages in all, heartbeats) while the worker converts this document."""
        shared, job = self._progress, self._jobs.get(sha)
        if shared is None or job is None:
            return None
        for b in range(1, len(shared), _SLOT):
            if shared[b] == job:
                return int(shared[b + 1]), int(shared[b + 2]), int(shared[b + 3])
        return None

    def convert(
        self, doc: _Doc, on_progress: Callable[[int, int], None] | None = None
    ) -> str | None:
        """Convert a document into the bundle cache; a one-line error, or None on success.

        Waits while the worker makes progress; `timeout` seconds without a page read
        stop it."""
        self._consumed.add(id(doc))
        self.rotate(doc)
        if doc.record.kind in IN_PROCESS_KINDS:
            return _convert_to_cache(
                str(doc.path),
                doc.content_type,
                str(doc.fallback) if doc.fallback else None,
                self.max_pages,
                str(self._out(doc)),
            )
        self._submit(doc, waited=True)
        sha = str(doc.record.sha256)
        future = self._futures.get(sha)
        if future is None:  # converted meanwhile (another item holds the same file)
            return None
        deadline = time.monotonic() + self.timeout
        seen: tuple[int, int, int] | None = None
        while True:
            try:
                wait = max(min(_POLL, deadline - time.monotonic()), 0.0)
                error = future.result(timeout=wait)
                break
            except cf.TimeoutError:
                pages = self._pages(sha)
                if pages is not None and pages != seen:
                    seen, deadline = pages, time.monotonic() + self.timeout
                    if on_progress is not None and pages[1]:
                        on_progress(pages[0], pages[1])
                if time.monotonic() >= deadline:
                    self._restart()
                    at = f" (at page {seen[0] + 1:,} of {seen[1]:,})" if seen and seen[1] else ""
                    return f"conversion timed out after {self.timeout:.0f} s without progress{at}"
            except BrokenProcessPool:
                ended = self._exit_codes()
                self._restart()
                if self.memory_mb and ended & _OUT_OF_MEMORY_SIGNALS:
                    return memory_message(self.memory_mb)
                return "the converter stopped on this file (it may be too large or damaged)"
            except Exception as e:  # the worker could not even run it (e.g. a pickling error)
                self._futures.pop(sha, None)
                return plain_message(e)
        self._futures.pop(sha, None)
        return error

    def _exit_codes(self) -> set[int]:
        """How the current pool's workers ended (negative: by that signal). The pool breaks
        as soon as a worker's pipe closes; the worker may still be dumping core: wait a bit."""
        procs = list((getattr(self._pool, "_processes", None) or {}).values())
        deadline = time.monotonic() + 5.0
        for p in procs:
            p.join(max(deadline - time.monotonic(), 0.0))
        return {p.exitcode for p in procs if p.exitcode is not None}

    def _restart(self) -> None:
        """Kill the worker (a stuck conversion cannot be cancelled); queue the rest again."""
        self.close(kill=True)
        self._futures.clear()
        self.prefetch()

    def close(self, *, kill: bool = False) -> None:
        pool, self._pool = self._pool, None
        self._progress = None
        self._in_pool = []
        if pool is None:
            return
        if kill:
            for proc in list(getattr(pool, "_processes", {}).values()):
                proc.kill()
        pool.shutdown(wait=not kill, cancel_futures=True)


def _completed(future: cf.Future[str | None]) -> bool:
    """Whether a future of a replaced pool holds its document's outcome. One that was running
    when its pool was killed may already be done with the pool's breakage (`BrokenProcessPool`):
    that is no outcome, and the document is queued again."""
    return future.done() and not future.cancelled() and future.exception() is None


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back in this thread while it may start worker processes (they inherit the
    mask through spawn's exec); one arriving meanwhile is delivered when it ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def convert_workers(configured: int) -> int:
    """How many conversion processes: as configured, else one per usable core (at most 8)."""
    return configured if configured > 0 else min(cores(), MAX_AUTO_WORKERS)


def cores() -> int:
    """CPUs this process may run on (a container's share, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
