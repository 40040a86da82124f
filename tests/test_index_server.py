"""Chroma server mode against a real `chroma run` process."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import LibraryBuilder

from zocrates_nb.config import ChromaSettings, IndexSettings, Settings
from zocrates_nb.index import Index, SearchFilter, index_library

CHROMA = Path(sys.executable).parent / "chroma"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path) -> Iterator[int]:
    """`chroma run` on a free port, up until its heartbeat answers; stopped afterwards."""
    if not CHROMA.is_file():
        pytest.skip(f"chroma CLI not found at {CHROMA}")
    port = _free_port()
    log = open(tmp_path / "chroma.log", "wb")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        [str(CHROMA), "run", "--path", str(tmp_path / "server-data"), "--host", "127.0.0.1",
         "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        "chroma run did not start: " + (tmp_path / "chroma.log").read_text()[-2000:]
                    ) from None
                time.sleep(0.3)
        yield port
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
        log.close()


def test_index_and_search_through_a_chroma_server(
    chroma_server: int, library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    settings = Settings(
        index=IndexSettings(chroma=ChromaSettings(mode="server", port=chroma_server,
                                                  collection="zocrates_test"))
    )
    b = library_builder
    b.paper("RAFT", "raft")
    b.paper("OKAPI", "bm25")
    home = tmp_path / "home"
    index = Index.open(home, settings)
    report = index_library(b.library, index, progress=False)
    assert report.errors == [] and report.chunks > 0
    assert not (home / "index" / "chroma").exists()  # vectors live in the server
    assert index.dense.count() == report.chunks
    hits = index.search("candidate wins the election with a majority", limit=3, mode="dense")
    assert hits[0].chunk.item_key == "RAFT"
    scoped = index.search("election", SearchFilter(item_keys=["OKAPI"]), limit=5, mode="dense")
    assert scoped and {h.chunk.item_key for h in scoped} == {"OKAPI"}
    status = index.status()
    assert status["chroma_mode"] == "server"
    assert status["chroma"] == f"http://127.0.0.1:{chroma_server}/zocrates_test"
    index.close()

    # A second client (another notebook, the CLI) reopens the server's collection.
    again = Index.open(home, settings)
    assert again.search("inverse document frequency", limit=1)[0].chunk.item_key == "OKAPI"
    del b.library.items["OKAPI"]
    assert index_library(b.library, again, progress=False).removed == 1
    assert again.dense.ids(["AOKAPI"]) == set()
