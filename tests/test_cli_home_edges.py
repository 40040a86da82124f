"""The data home at the command line's edges (issue 30): a reading command never makes a home
(`status` on a mistyped path), a home that is a file is a sentence of its own, every failure is
one line; `--debug` prints the cause."""

from __future__ import annotations

from pathlib import Path

import pytest

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
