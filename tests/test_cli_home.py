"""A data home as a newcomer meets it: an empty one says how to index it, an indexed one
remembers its library so that every printed `zocrates-nb index` hint works as printed (after
damage too), and an interactive terminal shows the product's own output, no framework banner."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zocrates_nb.cli import main

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def no_zotero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user whose machine has no Zotero data directory (an empty $HOME)."""
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_empty_home_says_how_to_index(
    tmp_path: Path, no_zotero: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()  # made, never indexed (a missing home is refused: a typo)
    home = str(tmp_path / "empty")
    code, out, _ = run(capsys, "--home", home, "status")
    assert code == 0 and re.search(r"items: 0$", out, re.MULTILINE)
    assert f"to index: run `zocrates-nb --home {home} index --zotero-dir DIR`" in out
    assert "--sample for the built-in sample" in out
    code, out, err = run(capsys, "--home", home, "search", "lock delays")
    assert code == 2 and out == ""
    assert err.startswith(f"zocrates-nb: error: nothing is indexed in {home} yet: run `zocrates-nb")
    assert "no results" not in out + err
    code, out, err = run(capsys, "--home", home, "ask", "--no-hitl", "Why lock delays?")
    assert code == 2 and out == "" and f"nothing is indexed in {home} yet" in err
    code, out, _ = run(capsys, "--home", home, "doctor")
    assert f"the index is empty: run `zocrates-nb --home {home} index --zotero-dir DIR`" in out


def test_a_home_remembers_its_library_so_the_printed_hint_works(
    tmp_path: Path, no_zotero: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "leases.md").write_text(
        "# Leases\n\nA lease bounds how long a lock holder may be silent before another client "
        "takes the lock over. Clocks drift, so the lease adds a margin.\n", "utf-8")  # fmt: skip
    home = tmp_path / "home"
    code, out, _ = run(capsys, "--home", str(home), "index", "--folder", str(papers))
    assert code == 0 and "indexed 1 items" in out
    assert "--api-key" not in (home / "library.json").read_text("utf-8")

    shutil.rmtree(home / "index")  # the derived index lost (damage, or deleted to save space)
    code, out, _ = run(capsys, "--home", str(home), "status")
    (hint,) = re.findall(r"to index: run `([^`]+)`", out)
    assert hint == f"zocrates-nb --home {home} index"
    # as printed, in a new process as a user's shell runs it (with no ~/Zotero)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "zocrates_nb.cli", *shlex.split(hint)[1:]],
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "indexed 1 items" in proc.stdout

    # another source given replaces the remembered one; none given goes on re-reading it
    (papers / "more").mkdir()
    for argv in (["index", "--folder", str(papers / "more")], ["index"]):
        proc = subprocess.run([sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), *argv],
                              env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert proc.returncode == 0 and "indexed 0 items" in proc.stdout, proc.stderr


def test_an_interactive_terminal_shows_no_framework_banner(
    sample_home: Path, tmp_path: Path
) -> None:
    """Run `ask` on a pseudo-terminal, as a user's shell runs it; pydantic-ai would otherwise
    print its logo, the agent's internals and a hosted service's sign-up link."""
    import pty

    home = tmp_path / "home"
    shutil.copytree(sample_home, home)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_VERSION", "CI") and not k.startswith("PYDANTIC_AI")}  # fmt: skip
    env.update(HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), TERM="xterm", COLUMNS="120")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), "ask", "--no-hitl",
         "Why do lock services use lock delays?"],
        stdin=follower, stdout=follower, stderr=follower, env=env, close_fds=True,
    )  # fmt: skip
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=300) == 0
    out = b"".join(chunks).decode("utf-8", "replace")
    assert "Sources" in out and "Leases and Lock Delays" in out
    for advert in ("pydantic", "logfire", "observability", "https://", "/___.___\\"):
        assert advert not in out.lower(), out[:2000]
