"""Process-wide state under concurrency: torch's thread count with embeddings from several
threads at once (a query during indexing, the server's handlers); the event loop while
sessions.db is locked by another writer."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import index_small_library, run, scripted, terminal, text, user_prompts
from conftest import LibraryBuilder

from zocrates_nb.app import App
from zocrates_nb.index.embedder import Embedder
from zocrates_nb.sessions import INTERRUPTED, SessionStore


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


# ---------------------------------------------------------------------------- two processes
_HOLDER = """
import asyncio, os, sys, time
from pathlib import Path
sys.path.insert(0, {tests!r})
from agents_helpers import scripted
from zocrates_nb.app import App

def hold(messages, info):
    Path({started!r}).write_text(str(os.getpid()))
    time.sleep(600)  # a long model call: killed long before it ends

async def main():
    app = App.open({home!r}, role_models={{"coordinator": scripted(hold, "holder")}})
    async for _ in app.ask("The first, long question", session_id={sid!r}, hitl=False):
        pass

asyncio.run(main())
"""


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), *args],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.getcwd()},
    )  # fmt: skip


def test_two_processes_asking_on_one_session_then_a_kill_during_the_turn(
    tmp_path: Path, small: tuple[Path, Any]
) -> None:
    """Process A runs a turn; the CLI (process B) asking on the same session is refused in one
    sentence naming A; A is killed -9 mid-turn; on restart the turn is marked failed, the
    history holds A's question only once, and the session answers again."""
    home, index = small
    data = tmp_path / "home"  # a copy of the small library's index, a sessions.db of its own
    shutil.copytree(home / "index", data / "index")
    sid = SessionStore.open(data).create_session().id
    started = tmp_path / "started"
    script = _HOLDER.format(tests=str(Path(__file__).parent), started=str(started),
                            home=str(data), sid=sid)  # fmt: skip
    holder = subprocess.Popen([sys.executable, "-c", script],
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not started.exists() and holder.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert started.exists(), "the holder's turn never reached its model"

        second = _cli(data, "ask", "A second question at the same time", "--session", sid)
        assert second.returncode == 2
        assert second.stderr.strip() == (
            "zocrates-nb: error: A question is already running in this session (in another "
            f"window or process) (pid {holder.pid} on host {socket.gethostname()} since "
            f"{second.stderr.split(' since ')[1].split(')')[0]}). Wait for it to finish or "
            "stop it, then ask again."
        )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=60)

    seen: list[str] = []
    with _echo_app(data, index, seen) as app:  # a restart: the dead turn is failed at open
        (dead,) = app.history(sid)
        assert dead.status == "error" and dead.error == INTERRUPTED
        final = terminal(run(app.ask("Are you there?", session_id=sid, hitl=False)))
        assert final.type == "final"
        assert [t.status for t in app.history(sid)] == ["error", "answered"]
        assert [t.prompt for t in app.history(sid)] == ["The first, long question",
                                                        "Are you there?"]  # fmt: skip
        assert seen == ["Are you there?"]  # the dead turn left nothing in the history
        assert app.store._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _echo_app(home: Path, index: Any, seen: list[str]) -> App:
    def answer(messages: Any, info: Any) -> Any:
        seen.append(user_prompts(messages)[-1])
        return text("Here.")

    return App.open(home, index=index, role_models={"coordinator": scripted(answer, "echo")})


# ---------------------------------------------------------------------------- the index
_INDEXER = """
import sys, time
from pathlib import Path
import zocrates_nb.index.indexer as indexer
from zocrates_nb.index import Index, index_library
from zocrates_nb.library import open_library

check = indexer._check_model

def paused(index):  # runs while this process holds the writer lock
    Path({locked!r}).write_text("1")
    while not Path({go!r}).exists():
        time.sleep(0.05)
    return check(index)

indexer._check_model = paused
with Index.open(Path({home!r})) as index:
    report = index_library(open_library(folder=Path({folder!r})), index, progress=False)
print(report.chunks)
"""


def test_one_indexer_at_a_time_and_a_long_lived_reader_sees_its_work(tmp_path: Path) -> None:
    """A writer process holds the index; a second indexer (the CLI) is refused naming it; this
    process, which searched before (its vectors loaded), keeps searching meanwhile and, once the
    writer is done, finds the new paper by its vectors alone."""
    from conftest import topic_markdown
    from test_index_incremental import assert_consistent

    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import open_library

    folder, home = tmp_path / "papers", tmp_path / "home"
    folder.mkdir()
    (folder / "raft.md").write_text(topic_markdown("raft"), "utf-8")
    (folder / "garden.md").write_text(topic_markdown("garden"), "utf-8")
    reader = Index.open(home)
    index_library(open_library(folder=folder), reader, progress=False)
    genome = "assembling short reads with de Bruijn graphs"
    before = reader.search(genome, mode="dense", limit=3)  # the vectors are now in memory
    assert before and all("Bruijn" not in h.chunk.title for h in before)

    (folder / "genome.md").write_text(topic_markdown("genome"), "utf-8")
    locked, go = tmp_path / "locked", tmp_path / "go"
    script = _INDEXER.format(locked=str(locked), go=str(go), home=str(home), folder=str(folder))
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not locked.exists() and writer.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert locked.exists(), "the writer never took the index"
        second = _cli(home, "index", "--folder", str(folder))
        assert second.returncode == 2
        assert second.stderr.strip() == (
            f"zocrates-nb: error: The index of {home} is being updated by another process "
            f"(pid {writer.pid}); try again when it finishes."
        )
        assert reader.search("leader election", limit=3)  # reading goes on meanwhile
        go.write_text("1")
        out, _ = writer.communicate(timeout=300)
        assert writer.returncode == 0 and int(out.strip()) > 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()

    after = reader.search(genome, mode="dense", limit=3)  # this process indexed none of it
    assert after and "Bruijn" in after[0].chunk.title
    assert_consistent(reader)
    reader.close()


def test_a_turn_stopped_at_once_still_ends_and_frees_its_session(
    tmp_path: Path, small: tuple[Path, Any]
) -> None:
    """A stop arriving while the turn is being opened (in a worker thread) ends that turn as
    cancelled and releases the session's lease: the next question is not refused."""
    _, index = small
    seen: list[str] = []
    with _echo_app(tmp_path, index, seen) as app:
        sid = app.new_session()

        async def stopped_at_once() -> list[Any]:
            cancel = asyncio.Event()
            cancel.set()
            return [e async for e in app.ask("Stop me", session_id=sid, cancel=cancel)]

        events = asyncio.run(stopped_at_once())
        assert terminal(events).message == "The turn was cancelled."
        assert app.store.get_state(sid).running is None
        assert [t.status for t in app.history(sid)] == ["cancelled"]
        assert terminal(run(app.ask("Are you there?", session_id=sid))).type == "final"
