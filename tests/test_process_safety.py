"""Process-wide state under concurrency: torch's thread count with embeddings from several
threads at once (a query during indexing, the server's handlers); the event loop while
sessions.db is locked by another writer."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import index_small_library, scripted, terminal
from conftest import LibraryBuilder

from zocrates_nb.app import App
from zocrates_nb.index.embedder import Embedder
from zocrates_nb.sessions import SessionStore


def _in_a_new_thread(fn: Callable[[], Any]) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join(timeout=300)
    return out[0] if out else None


def test_concurrent_embeddings_leave_torchs_thread_count_as_it_was() -> None:
    """torch keeps a per-thread count plus the default new threads start with; a query on one
    thread (count 1) racing a batch on another (count n) must restore both, even while new
    worker threads start mid-race (asyncio.to_thread's pool grows that way)."""
    import torch

    fresh = _in_a_new_thread(torch.get_num_threads)  # what a new worker thread starts with
    main = torch.get_num_threads()
    embedder = Embedder()
    embedder.embed_query("warm up")  # load the model once, outside the race
    wanted = fresh + 1
    start = threading.Barrier(3)
    errors: list[BaseException] = []

    def queries() -> None:
        start.wait()
        for i in range(15):  # each query on a thread born during the race
            _in_a_new_thread(lambda i=i: embedder.embed_query(f"leader election {i}"))

    def batches() -> None:
        start.wait()
        for i in range(6):
            embedder.embed([f"passage {i} about consensus", "another passage"], threads=wanted)

    def guard(fn: Callable[[], None]) -> threading.Thread:
        def run() -> None:
            try:
                fn()
            except BaseException as e:
                errors.append(e)

        return threading.Thread(target=run)

    threads = [guard(queries), guard(queries), guard(batches)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors
    assert torch.get_num_threads() == main
    assert _in_a_new_thread(torch.get_num_threads) == fresh  # every change was restored


# ---------------------------------------------------------------------------- the event loop
@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    root = tmp_path_factory.mktemp("process-safety")
    home = root / "home"
    index = index_small_library(LibraryBuilder(root / "library"), home)
    yield home, index
    index.close()


def test_a_locked_sessions_db_never_stalls_the_event_loop(
    tmp_path: Path, small: tuple[Path, Any]
) -> None:
    """The model fails while another connection holds sessions.db's write lock: recording the
    failed turn waits for the lock in a worker thread, so the loop keeps ticking, the lock's
    holder (a callback on that same loop) can let go, and the failure is recorded. Were the
    write on the loop, the callback could never run and the write would time out unrecorded."""
    _, index = small
    store = SessionStore(tmp_path / "sessions.db", timeout=5)
    blocker = sqlite3.connect(store.path, isolation_level=None, check_same_thread=False)
    ticks = 0
    marks: dict[str, int] = {}

    async def scenario() -> list[Any]:
        nonlocal ticks
        loop = asyncio.get_running_loop()

        def release() -> None:
            marks["released"] = ticks
            blocker.execute("COMMIT")

        def fail(messages: Any, info: Any) -> Any:
            blocker.execute("BEGIN IMMEDIATE")  # another process's long write, say
            marks["locked"] = ticks
            loop.call_soon_threadsafe(loop.call_later, 0.5, release)
            raise RuntimeError("socket exploded at /srv/internal/SECRET-PATH")

        async def beat() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        heartbeat = asyncio.ensure_future(beat())
        app = App.open(tmp_path, index=index, store=store,
                       role_models={"coordinator": scripted(fail, "failing")})  # fmt: skip
        try:
            return [e async for e in app.ask("How does Raft elect a leader?", hitl=False)]
        finally:
            heartbeat.cancel()

    events = asyncio.run(scenario())
    error = terminal(events)
    assert error.type == "error"
    assert error.message == (
        "The turn failed unexpectedly (an internal error; debug logging shows the details)."
    )
    assert marks["released"] - marks["locked"] >= 5  # the loop ran while the lock was held
    turn = store.get_turn(error.turn_id)
    assert turn.status == "error" and turn.error == error.message  # recorded after the lock
    assert store.get_state(turn.session_id).running is None  # and the session free again
