"""What `zocrates-nb` prints never drives the terminal: a control sequence in a library title or
in a model's answer (ESC, OSC, the one-character C1 CSI U+009B, a bare CR) reaches stdout and
stderr as U+FFFD, in real processes, the model a real loopback server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from zocrates_nb.devtools.scripted_openai import ScriptedOpenAI
from zocrates_nb.devtools.scripted_wire import text

ROOT = Path(__file__).resolve().parents[1]
# What a terminal acts on: C0 controls but tab and newline, DEL, C1 (CR checked apart).
DRIVES_TERMINAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
PAYLOAD = ("Start \x1b]0;pwned-title\x07 \x1b[2J \u009b2J\u009b31mC1-CSI-RED \u009d0;c1\u009c "
           "\x7fdel \rOVERWRITTEN end.")  # fmt: skip


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
    return subprocess.run([sys.executable, "-m", "zocrates_nb.cli", *argv], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip


def assert_inert(done: subprocess.CompletedProcess[str]) -> None:
    for name, stream in (("stdout", done.stdout), ("stderr", done.stderr)):
        bad = DRIVES_TERMINAL.findall(stream)
        assert not bad, f"{name} carries {bad!r}: {stream[-2000:]!r}"
    assert "\r" not in done.stdout, done.stdout


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI() as server:
        yield server


def test_a_models_control_characters_never_reach_the_terminal(
    own_sample_home: Path, llm: ScriptedOpenAI
) -> None:
    config = {"models": {"base": {"model": "openai:scripted", "base_url": llm.url}}}
    (own_sample_home / "zocrates_config.json").write_text(json.dumps(config), "utf-8")
    llm.push(text(PAYLOAD))
    done = cli("--home", str(own_sample_home), "ask", "--no-hitl", "What is a lock service?")
    assert done.returncode == 0, done.stderr
    assert "C1-CSI-RED" in done.stdout and "OVERWRITTEN end." in done.stdout, done.stdout
    assert_inert(done)

    llm.push(text(PAYLOAD))
    done = cli("--home", str(own_sample_home), "ask", "--json", "--no-hitl", "And a lease?")
    assert done.returncode == 0, done.stderr
    assert "C1-CSI-RED" in json.loads(done.stdout)["answer"]  # still JSON
    assert_inert(done)


def test_a_library_titles_control_characters_never_reach_the_terminal(tmp_path: Path) -> None:
    folder = tmp_path / "papers"
    folder.mkdir()
    (folder / "locks.md").write_text(
        '---\ntitle: "Lock Leases \\e]0;pwned\\a\\e[31mRED\\x9b2J Revisited"\n'
        'authors: ["Mallory \\e[5mQuill"]\nyear: 2024\n---\n\n# Lock Leases Revisited\n\n'
        "## 1 Leases\n\nA lock service grants leases that expire, so a client that fails "
        "loses its lock after the lease timeout and another client may take it. Leases bound "
        "how long a failed holder blocks others.\n",
        "utf-8",
    )
    home = tmp_path / "home"
    done = cli("--home", str(home), "index", "--folder", str(folder))
    assert done.returncode == 0, done.stderr
    done = cli("--home", str(home), "ask", "--no-hitl", "How do lock leases bound blocking?")
    assert done.returncode == 0, done.stderr
    assert "Revisited" in done.stdout, done.stdout  # the title is shown, its controls inert
    assert_inert(done)
