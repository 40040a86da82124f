"""The process edges of indexing and the CLI, with real processes, signals and file systems:
a killed indexer leaves nothing running, a PDF that inflates in memory fails alone, a full disk
and a closed pipe are one plain sentence (or none)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_kit import good_markdown, inflating_pdf, long_pdf, small_pdf

from zocrates_nb.config import Settings
from zocrates_nb.index import Index, index_library
from zocrates_nb.library import read_folder

CLI = [sys.executable, "-m", "zocrates_nb.cli"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}


def _session(sid: int) -> list[tuple[int, str]]:
    """Live processes of session `sid` (a child keeps its session when its parent dies)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            found.append((int(entry.name), cmd[:120]))
    return found


def _wait(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


@pytest.fixture(scope="module")
def paper_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six 80-page reports: enough conversion for two workers to be busy when the kill lands."""
    folder = tmp_path_factory.mktemp("papers")
    for n in range(6):
        long_pdf(folder / f"report-{n}.pdf", pages=80 + n)  # each its own content
    return folder


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill-9", "term"])
def test_a_killed_indexer_leaves_no_process_behind(
    paper_folder: Path, tmp_path: Path, sig: signal.Signals
) -> None:
    """Two converter workers block on each other's copy of the task queue once their parent
    is gone: before the parent-death guard they (and the resource tracker) ran on forever."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "zocrates_config.json").write_text(json.dumps({"index": {"convert_workers": 2}}))
    indexer = subprocess.Popen(
        [*CLI, "--home", str(home), "index", "--folder", str(paper_folder)],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV,
    )  # fmt: skip
    try:
        workers = lambda: sum("spawn_main" in cmd for _pid, cmd in _session(indexer.pid)) >= 2  # noqa: E731
        assert _wait(workers, 240), _session(indexer.pid)
        time.sleep(1.0)  # the workers are past their start and converting
        assert any("resource_tracker" in cmd for _pid, cmd in _session(indexer.pid))
        indexer.send_signal(sig)
        indexer.wait(30)
        assert _wait(lambda: not _session(indexer.pid), 30), _session(indexer.pid)
    finally:
        for pid, _cmd in _session(indexer.pid):  # never leave one behind, even on failure
            os.kill(pid, signal.SIGKILL)


def test_a_pdf_that_inflates_past_the_memory_cap_fails_alone(tmp_path: Path) -> None:
    """~200 KB on disk, 64 MB of content: about 1 GB in PDFium. Capped at 300 MB, that file
    fails with a sentence naming the setting; the rest of the library is indexed."""
    folder = tmp_path / "library"
    folder.mkdir()
    inflating_pdf(folder / "inflated.pdf", 64)
    small_pdf(folder / "harbour.pdf", "Sediment cores hold microplastics.")
    (folder / "kelp.md").write_text(good_markdown("Kelp Forests", "Kelp shelters rockfish."))
    settings = Settings.model_validate({"index": {"convert_memory_mb": 300}})
    with Index.open(tmp_path / "home", settings) as index:
        report = index_library(read_folder(folder), index, progress=False)
        (error,) = report.errors
        assert error["file"].endswith("inflated.pdf")
        assert error["error"] == (
            "converting it needed more than the 300 MB of memory a conversion may use (its "
            "content expands far beyond the file's size; raise index.convert_memory_mb to try "
            "again)")  # fmt: skip
        assert report.converted == 2
        found = {h.chunk.title for h in index.search("microplastics rockfish", mode="bm25")}
        assert found == {"Kelp Forests", "harbour"}


def _unshare_ok() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(not _unshare_ok(), reason="needs `unshare -rm` for a private small tmpfs")
@pytest.mark.parametrize("size", ["24k", "400k"], ids=["sqlite", "bundles"])
def test_a_full_disk_is_one_sentence(tmp_path: Path, size: str) -> None:
    """A real full file system: a tmpfs of `size` mounted as the data home in a private mount
    namespace (nobody else sees it). Too small for sessions.db, or for the converted bundles."""
    folder, home = tmp_path / "library", tmp_path / "home"
    folder.mkdir()
    home.mkdir()
    for n in range(3):
        words = " ".join(f"word{n}x{k}" for k in range(20_000))
        (folder / f"paper{n}.md").write_text(f"# Paper {n}\n\n{words}\n")
    cli = " ".join(CLI)
    script = (f"mount -t tmpfs -o size={size} tmpfs {home} && "
              f"{cli} --home {home} index --folder {folder}")  # fmt: skip
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True,
                          text=True, timeout=600, env=ENV)  # fmt: skip
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("zocrates-nb: error: The disk is full"), done.stderr[-2000:]
    assert "free some space" in last and "internal error" not in done.stderr
    assert list(home.iterdir()) == []  # the tmpfs went with its namespace: nothing leaked here


def test_a_closed_pipe_ends_the_command_quietly(sample_home: Path, tmp_path: Path) -> None:
    """`zocrates-nb search … | head -c 100`: the reader stops early (the output, ~100 KB, is
    larger than a pipe's buffer, so a write meets the closed pipe); nothing on stderr."""
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"id": f"q{n}", "query": f"rank fusion {n}"}) + "\n"
                               for n in range(8)))  # fmt: skip
    cli = " ".join(CLI)
    script = (f"{cli} --home {sample_home} search --queries {queries} --limit 50 --json "
              "2>err.txt | head -c 100 >/dev/null; cat err.txt")  # fmt: skip
    done = subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=300,
                          env=ENV, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0
    assert done.stdout == ""  # what zocrates-nb wrote on stderr
