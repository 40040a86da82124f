"""The data home at the command line's edges (issue 30): a reading command never makes a home
(`status` on a mistyped path), a home that is a file is a sentence of its own, every failure is
one line; `--debug` prints the cause; a read-only home still reads and writes nothing."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from zocrates_nb.app import App
from zocrates_nb.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("command", [["status"], ["search", "raft"], ["sessions"]])
def test_reading_a_home_that_is_not_there_never_makes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    home = tmp_path / "mistyped-home"
    code, out, err = run(capsys, "--home", str(home), *command)
    assert code == 2 and out == ""
    assert err.strip() == (f"zocrates-nb: error: no data home at {home}: check the path, or "
                           f"index a library into it first (zocrates-nb --home {home} index …)")
    assert not home.exists()


def test_a_home_that_is_a_file_is_its_own_sentence_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("ZOCRATES_HOME", str(home))
    for command in (["status"], ["index", "--sample"]):
        code, _, err = run(capsys, *command)
        assert code == 2, err
        assert err.splitlines() == [f"zocrates-nb: error: the data home {home} is a file, not "
                                    "a folder: give --home (or ZOCRATES_HOME) a folder"]
    assert home.read_text() == "not a folder"


def test_debug_prints_the_cause_of_an_unexpected_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "index").write_text("")  # a file where the index's folder belongs
    code, _, err = run(capsys, "--home", str(home), "status")
    assert code == 1 and err.splitlines() == [
        "zocrates-nb: error: The command failed unexpectedly (an internal error; run again "
        "with --debug to see its cause)."]  # one line, no duplicate from the log
    monkeypatch.setenv("ZOCRATES_DEBUG", "1")
    code, _, err = run(capsys, "--home", str(home), "status")
    assert code == 1 and "Traceback" in err and "FileExistsError" in err, err


def _tree(home: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(home)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(home.rglob("*"))}  # fmt: skip


@pytest.fixture
def read_only_home(own_sample_home: Path, tmp_path: Path) -> Iterator[Path]:
    """The indexed sample with one answered session, on a read-only bind mount (root
    ignores file modes, so a real read-only mount is what makes it read-only for tests run as
    root), or a folder without write permission for others; skipped where neither is possible."""
    with App.open(own_sample_home) as app:
        _ask_once(app)
    view = tmp_path / "read-only-home"
    view.mkdir()
    mounted = False
    if os.geteuid() == 0:
        bind = subprocess.run(["mount", "--bind", str(own_sample_home), str(view)],
                              capture_output=True)  # fmt: skip
        mounted = bind.returncode == 0
        if mounted:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True)
    else:
        view.rmdir()
        view = own_sample_home
        for p in [view, *view.rglob("*")]:
            p.chmod(p.stat().st_mode & ~0o222)
    try:
        if os.access(view, os.W_OK):
            pytest.skip("no read-only mount here (root without mount rights)")
        yield view
    finally:
        if mounted:
            subprocess.run(["umount", str(view)], capture_output=True)
        elif view == own_sample_home:
            for p in [view, *view.rglob("*")]:
                p.chmod(p.stat().st_mode | 0o200)


def _ask_once(app: App) -> None:
    import asyncio

    async def drain() -> None:
        async for _ in app.ask("How does the sample library describe its subject?"):
            pass

    asyncio.run(drain())


def test_a_read_only_home_still_answers_reading_commands_and_writes_nothing(
    read_only_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = read_only_home
    # The mount shows the shared sample home: an App an earlier test left for the collector
    # checkpoints its sessions.db when collected. Collected now, before the snapshot.
    import gc

    gc.collect()
    time.sleep(0.5)
    before = _tree(home)
    notice = (f"zocrates-nb: the data home {home} is read-only: reading works, but nothing is "
              "saved there (turns, sessions, staging, indexing)")  # fmt: skip
    for command in (["status"], ["search", "retrieval"], ["sessions"], ["doctor"]):
        code, out, err = run(capsys, "--home", str(home), *command)
        assert code == 0, (command, err)
        assert err.splitlines().count(notice) == 1 and out.strip(), (command, err)
    listed = run(capsys, "--home", str(home), "sessions")[1]
    assert "How does the sample library describe its subject?" in listed  # the stored session
    assert f"data home        {home}\n" in run(capsys, "--home", str(home), "doctor")[1]
    code, out, err = run(capsys, "--home", str(home), "ask", "--json", "What is dense retrieval?")
    assert code == 0 and err.splitlines().count(notice) == 1, err
    answered = json.loads(out)
    assert answered["status"] == "answered" and answered["citations"], answered
    status = run(capsys, "--home", str(home), "status")[1]
    assert "zocrates-read-only-" not in status and str(home) in status  # the home it was given
    out = run(capsys, "--home", str(home), "ask", "What is dense retrieval?")[1]
    assert "· not saved: the home is read-only]" in out and "· session " not in out
    # What would change the home is refused in one sentence, before anything is written.
    code, _, err = run(capsys, "--home", str(home), "index", "--sample")
    assert code == 2 and err.splitlines()[-1] == (
        f"zocrates-nb: error: cannot index a library: the data home {home} is read-only; give "
        "--home (or ZOCRATES_HOME) a folder you can write, or make this one writable")
    # The panel on it says so once, in its banner, and still lists the stored session.
    from zocrates_nb.widget import ChatWidget

    with App.open(home) as app:
        panel = ChatWidget(app, warm_up=False)
        assert panel.error == (f"The data home {home} is read-only: reading works, but nothing "
                               "is saved there (turns, sessions, staging, indexing).")
        # The stored sessions (the shared sample home may hold other tests' too), none new.
        assert len(panel.sessions) == len(app.sessions()) >= 1
    assert _tree(home) == before  # not a file made, changed or removed
