"""One writer per Zotero library: two real `zocrates-nb stage save` processes on one data home
against a slow loopback Zotero never send the same batch (no duplicate under any interleaving),
and a writer that cannot wait says which process holds the library."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from zotero_fakes import FakeConnector, FakeWebAPI

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.staging import Staging
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import WriteError, save_to_connector, save_to_web
from zocrates_nb.writeback.ledger import CONNECTOR, target_of

ENV = {"ZOTERO_API_KEY": "test-zotero-key"}
ROOT = Path(__file__).resolve().parents[1]
PAPERS = [Candidate(title="Viewstamped Replication Revisited", year=2012,
                    authors=["Barbara Liskov", "James Cowling"], doi="10.5555/vr.2012"),
          Candidate(title="Chain Replication for Supporting High Throughput", year=2004,
                    authors=["Robbert van Renesse"], doi="10.5555/chain.2004")]  # fmt: skip


def staged_home(home: Path, zotero: dict[str, object]) -> Path:
    store = SessionStore.open(home)
    Staging(store).remember(PAPERS)
    Staging(store).stage([c.id for c in PAPERS])
    store.close()
    (home / "zocrates_config.json").write_text(json.dumps({"zotero": zotero}), "utf-8")
    return home


def start_save(home: Path, to: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), "stage", "save", "--to",
         to, "--yes"], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **ENV, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip


@pytest.mark.parametrize("to", ["web", "connector"])
def test_two_processes_saving_at_once_with_a_slow_zotero_create_each_paper_once(
    tmp_path: Path, to: str
) -> None:
    fake = FakeWebAPI() if to == "web" else FakeConnector()
    with fake as zotero:
        # A Zotero busy saving: long enough for the second process to start (slowly, on a
        # loaded machine) and be at work while the batch is in flight.
        zotero.post_delay = 6.0 if to == "web" else 0.7
        config = ({"web": {"library_id": "475425", "base_url": zotero.url}} if to == "web"
                  else {"connector_url": zotero.url})  # fmt: skip
        home = staged_home(tmp_path, config)
        first, second = start_save(home, to), start_save(home, to)
        ended: dict[int, float] = {}
        outs_of: dict[int, tuple[str, str]] = {}

        def finish(i: int, p: subprocess.Popen[str]) -> None:
            outs_of[i] = p.communicate(timeout=120)
            ended[i] = time.monotonic()

        procs = (first, second)
        waits = [threading.Thread(target=finish, args=(i, p)) for i, p in enumerate(procs)]
        for w in waits:
            w.start()
        for w in waits:
            w.join(130)
        outs = [outs_of[0], outs_of[1]]
        codes = [first.returncode, second.returncode]
    made = Counter(i.get("DOI") for i in (zotero.created if to == "web" else zotero.saved))
    assert made == Counter(c.doi for c in PAPERS), (made, outs)
    assert codes == [0, 0], outs
    said = sorted(out.splitlines()[0].split(" to ")[0] for out, _ in outs)
    assert said == ["saved 0", "saved 2"], outs  # one saved them, the other found them saved
    other = next(out for out, _ in outs if out.startswith("saved 0"))
    assert "already in Zotero 2:" in other and f"'{PAPERS[0].title}' ({PAPERS[0].id})" in other
    (post,) = [r for r in zotero.requests if (r["method"] == "POST" and r["path"].endswith(
        "/items")) or r["path"] == "/connector/saveItems"]  # fmt: skip
    # Both processes were running while the one batch was in flight: the two overlapped (the
    # second waits for the lease before it sends anything, so its requests may all come before
    # or after the batch; its lifetime cannot).
    assert min(ended.values()) > post["at"], "the two saves did not overlap"


@contextlib.contextmanager
def held_elsewhere(store: SessionStore, target: str) -> Iterator[None]:
    """`target` leased by another writer (a thread of this process) until the block ends."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with WriteLedger(store).lease(target):
            taken.set()
            done.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    taken.wait(10)
    try:
        yield
    finally:
        done.set()
        thread.join(10)


def test_a_writer_that_cannot_wait_names_the_process_holding_the_library(
    tmp_path: Path,
) -> None:
    store = SessionStore.open(tmp_path)
    impatient = WriteLedger(store, lease_wait=0.3)
    with FakeWebAPI() as api:
        web = ZoteroWebSettings(library_id="475425", base_url=api.url)
        with held_elsewhere(store, target_of("user", "475425")):
            with pytest.raises(WriteError, match=rf"another zocrates-nb process \(pid "
                                                 rf"{os.getpid()}, writing since"):  # fmt: skip
                save_to_web(PAPERS, web, ledger=impatient, environ=ENV)
            # Another library is not held.
            assert save_to_web(PAPERS[:1], web.model_copy(update={"library_id": "9"}),
                               ledger=impatient, environ=ENV).saved == []  # 404: not written
        assert api.created == []
        started = time.monotonic()
        result = save_to_web(PAPERS, web, ledger=impatient, environ=ENV)  # released: it writes
    assert time.monotonic() - started < 5 and len(result.saved) == 2 and len(api.created) == 2
    with FakeConnector() as zotero, held_elsewhere(store, CONNECTOR), pytest.raises(WriteError):
        save_to_connector(PAPERS, zotero.url, ledger=impatient)
    assert zotero.saved == []
    # The same writer may take its own lease again (a note saved inside a larger write).
    with impatient.lease(CONNECTOR), WriteLedger(store, lease_wait=0).lease(CONNECTOR):
        pass
    store.close()


def test_the_lease_of_a_process_that_ended_is_taken_over(tmp_path: Path) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                           capture_output=True, text=True, check=True)  # fmt: skip
    store = SessionStore.open(tmp_path)
    with store._tx() as c:
        c.execute("INSERT INTO zotero_leases VALUES (?, 'gone', ?, ?, ?, ?)",
                  (target_of("user", "475425"), int(ended.stdout), __import__("socket")
                   .gethostname(), time.time(), time.time() + 600))  # fmt: skip
    with FakeWebAPI() as api:
        web = ZoteroWebSettings(library_id="475425", base_url=api.url)
        result = save_to_web(PAPERS, web, ledger=WriteLedger(store, lease_wait=0.3),
                             environ=ENV)  # fmt: skip
    assert len(result.saved) == 2
    store.close()
