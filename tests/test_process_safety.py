"""Process-wide state under concurrency: torch's thread count with embeddings from several
threads at once (a query during indexing, the server's handlers)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from zocrates_nb.index.embedder import Embedder


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
