"""The README's commands run as written: its terminal block, line by line, on the built-in sample
in a data home under tmp_path (never the user's home), then its notebook snippet on that home;
each prints what the README says it prints. `make lab` / `make test` are the harness itself, so
only their Makefile targets are checked, with the README's links and its length."""

from __future__ import annotations

import ast
import asyncio
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
MARK = "@@readme-command@@"

# What each of the README's terminal commands prints (regular expressions over its output).
# A command the README gains must get its expectation here: the test fails until it has one.
EXPECTED: dict[str, list[str]] = {
    "zocrates-nb index --sample": [r"indexed 4 items", r"\d+ chunks"],
    "zocrates-nb status": [r"items: 4$", r"chunks: \d+$", r"vectors: \d+$"],
    "zocrates-nb search": [r"^\[1\] .+ \[[A-Z0-9]{8}\]$", r"§ \S"],
    "zocrates-nb ask": [
        r"Searching the library",
        r"\[1\]",
        r"^Sources$",
        r"^  \[1(, 2)?\] Leases and Lock Delays in Coordination Services",
        r"^Other considered$",
        r"offline engine",
    ],
    "zocrates-nb sessions": [r"How long must a client wait"],
    "zocrates-nb doctor": [r"nothing leaves this machine", r"^index health\s+ok$"],
}


def fenced(language: str) -> list[str]:
    return [body for lang, body in FENCE.findall(README.read_text("utf-8")) if lang == language]


def terminal_block() -> str:
    (block,) = [b for b in fenced("bash") if "zocrates-nb " in b]
    return block


def expectation(command: str) -> list[str]:
    for prefix, patterns in EXPECTED.items():
        if command == prefix or command.startswith(prefix + " "):
            return patterns
    raise AssertionError(f"the README runs {command!r}, which tests/test_readme.py does not check")


def clean_env(tmp: Path) -> dict[str, str]:
    """The environment a new user's shell has, with its home in tmp: no ZOCRATES_* settings of
    the machine's, this checkout first on the import path, no model download."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZOCRATES_")}
    env.update(
        HOME=str(tmp / "user-home"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    (tmp / "user-home").mkdir(exist_ok=True)
    return env


@pytest.fixture(scope="module")
def terminal(tmp_path_factory: pytest.TempPathFactory, sample_home: Path) -> dict[str, Any]:
    """Run the README's terminal block once, in a fresh directory standing for the checkout:
    `.venv` there is this interpreter's environment, and the data home the README names starts
    as a copy of the session's indexed sample (so `index --sample` has only to check it). Each
    line's output (standard output and error, as a terminal shows them) and status is kept."""
    work = tmp_path_factory.mktemp("readme")
    (work / ".venv").symlink_to(sys.prefix, target_is_directory=True)
    shutil.copytree(sample_home, work / ".demo-home")
    lines = [ln for ln in terminal_block().splitlines() if ln.strip()]
    script = "\n".join(f"echo '{MARK} {i}'\n{line}\necho \"{MARK} status $?\""
                       for i, line in enumerate(lines))  # fmt: skip
    proc = subprocess.run(
        ["bash", "-c", script], cwd=work, env=clean_env(work), text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600,
    )  # fmt: skip
    outputs: dict[int, tuple[int, str]] = {}
    for chunk in proc.stdout.split(f"{MARK} ")[1:]:
        head, _, rest = chunk.partition("\n")
        if head.startswith("status "):
            i = max(outputs)
            outputs[i] = (int(head.split()[1]), outputs[i][1])
        else:
            outputs[int(head)] = (-1, rest)
    return {"work": work, "lines": lines, "outputs": outputs, "stdout": proc.stdout}


def test_every_terminal_command_exits_0_and_prints_what_the_readme_says(
    terminal: dict[str, Any],
) -> None:
    lines, outputs = terminal["lines"], terminal["outputs"]
    assert len(outputs) == len(lines), terminal["stdout"][-3000:]
    ran = 0
    for i, line in enumerate(lines):
        command = line.split("#")[0].strip()
        status, out = outputs[i]
        assert status == 0, f"{command!r} exited {status}:\n{out}"
        if command.startswith("zocrates-nb "):
            for pattern in expectation(command):
                assert re.search(pattern, out, re.MULTILINE), f"{command!r} printed:\n{out}"
            ran += 1
    assert ran >= 5
    # The data home the README chose is the one it wrote, inside the working directory.
    assert (terminal["work"] / ".demo-home" / "sessions.db").is_file()
    assert not (terminal["work"] / "user-home" / ".zocrates-nb").exists()


def run_snippet(home: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict[str, Any]]:
    """The README's notebook snippet, run as IPython runs a cell (top-level `async for`) with
    $ZOCRATES_HOME at `home` (set by the caller); what it printed, and its namespace."""
    (snippet,) = fenced("python")
    code = compile(snippet, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    namespace: dict[str, Any] = {}
    try:
        result = eval(code, namespace)
        if inspect.iscoroutine(result):
            asyncio.run(result)
    finally:
        if "app" in namespace:
            namespace["app"].close()
    assert Path(namespace["app"].home) == home
    return capsys.readouterr().out, namespace


def assert_snippet_output(out: str, namespace: dict[str, Any]) -> None:
    title, rest = out.split("\n", 1)
    assert title.startswith("Hybrid Retrieval for Research Libraries")
    types, _, answer = rest.partition("final\n")  # the stream's event types, then the answer
    assert "step" in types.split() and set(types.split()) <= {"step", "thinking", "text_delta"}
    assert answer.strip() == namespace["event"].answer.strip()
    assert "Leases and Lock Delays" in answer and re.search(r"\[1\]", answer)
    assert type(namespace["panel"]).__name__ == "ChatWidget"


def test_the_notebook_snippet_runs_on_that_home(
    terminal: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = terminal["work"] / ".demo-home"
    monkeypatch.setenv("ZOCRATES_HOME", str(home))
    assert_snippet_output(*run_snippet(home, capsys))


def test_the_notebook_snippet_runs_after_make_lab(
    tmp_path: Path, sample_home: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """A newcomer's path: `make lab` on a machine with no index (its recipe's command, up to
    starting JupyterLab), then the snippet in a notebook of that session, which inherits the
    session's environment as the server extension and the lab's terminals do."""
    recipe = re.search(r"^lab:.*\n\t(.+)$", (ROOT / "Makefile").read_text("utf-8"), re.MULTILINE)
    assert recipe and "zocrates_nb.examples --lab" in recipe.group(1)
    env = clean_env(tmp_path)
    sample = tmp_path / "user-home" / ".zocrates-nb" / "samples" / "sample"
    shutil.copytree(sample_home, sample)  # as an earlier `make lab` left it (saves indexing)
    proc = subprocess.run(
        [sys.executable, "-m", "zocrates_nb.examples", "--lab", "--dry-run", "--port", "9999"],
        cwd=ROOT, env=env, text=True, capture_output=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    using, command = proc.stdout.strip().splitlines()[-2:]
    assert using.startswith("Using the built-in sample library: 4 items")
    assert command.startswith(f"ZOCRATES_HOME={sample} ")
    assert command.endswith("lab --allow-root --port 9999 notebooks/01-quickstart.ipynb" if
                            os.geteuid() == 0 else "lab --port 9999 notebooks/01-quickstart.ipynb")
    assert not (tmp_path / "user-home" / ".zocrates-nb" / "index").exists()  # the user's: untouched
    monkeypatch.setenv("ZOCRATES_HOME", str(sample))
    assert_snippet_output(*run_snippet(sample, capsys))


def test_the_make_targets_and_links_the_readme_names_exist() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 200
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text("utf-8"), re.MULTILINE))
    named = set(re.findall(r"\bmake ([\w-]+)", text))
    assert {"lab", "test"} <= named and named <= targets, named - targets
    links = set(re.findall(r"\]\(([^)#]+)\)", text))
    assert all((ROOT / link).exists() for link in links), [
        link for link in links if not (ROOT / link).exists()
    ]
    docs = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert docs <= links, f"docs pages the README does not link: {docs - links}"
    assert (ROOT / "docs" / "panel.png").stat().st_size < 300_000


def test_the_docs_links_resolve() -> None:
    for page in (ROOT / "docs").glob("*.md"):
        for link in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
            assert (page.parent / link).exists(), f"{page.name} links {link}, which is missing"


def test_the_configuration_examples_are_valid_settings() -> None:
    from zocrates_nb.config import Settings

    pages = [README, *sorted((ROOT / "docs").glob("*.md"))]
    examples = [(p.name, b) for p in pages for lang, b in FENCE.findall(p.read_text("utf-8"))
                if lang == "json"]  # fmt: skip
    assert len(examples) >= 3
    for name, example in examples:
        try:
            Settings.model_validate(json.loads(example))
        except ValueError as e:
            raise AssertionError(f"a configuration example in {name} is invalid: {e}") from None
