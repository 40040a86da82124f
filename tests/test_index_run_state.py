"""An index run seen from outside it (issue 30): a question asked while the first index is
being built says so (not "run index"), and `doctor` reports a run that was killed before it
finished instead of "index health ok"."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agents_helpers import run, terminal

from zocrates_nb.app import App
from zocrates_nb.cli import main
from zocrates_nb.index import Index


def test_a_question_while_the_index_is_being_built_says_so(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Index.open(home) as index, index.writer_lock():  # an index run holds the home
        assert index.run_state() == "running"
        with App.open(home) as app:
            final = terminal(run(app.ask("How does Raft elect a leader?", hitl=False)))
    assert final.type == "final"
    assert "being indexed right now" in final.answer and "zocrates-nb index" not in final.answer


def _started(home: Path) -> bool:
    db = home / "index" / "catalog.sqlite"
    if not db.is_file():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as con:
            return bool(con.execute("SELECT 1 FROM meta WHERE key='run_started'").fetchall())
    except sqlite3.Error:
        return False


def test_doctor_reports_an_index_run_killed_before_it_finished(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "zocrates_nb.cli", "--home", str(home),
                             "index", "--sample"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _started(home) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, "the run ended before it could be stopped"
        os.kill(proc.pid, signal.SIGKILL)  # the machine goes off mid-run
    finally:
        proc.wait(30)
    with Index.open(home) as index:
        assert index.run_state() == "interrupted"
    code = main(["--home", str(home), "doctor"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "index health     PROBLEM the last index run stopped before it finished" in out
    assert "index health     ok" not in out
