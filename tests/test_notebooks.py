"""The example notebooks run top to bottom, offline, under nbval (`--nbval-lax`: every cell must
run without error; outputs vary from run to run and are not compared), and never touch the
user's library.

Each notebook runs in its own pytest process and kernel. With an empty data home they index the
sample into a data home of their own (`<home>/samples/sample`); with a data home that holds an
indexed library they use it as it is, and it must come out whole.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebooks-home")


def run_notebooks(notebooks: list[Path], home: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ZOCRATES_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "MPLBACKEND": "agg",
        # Keep the kernel away from the user's Jupyter and IPython settings.
        "JUPYTER_CONFIG_DIR": str(tmp_path / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "jupyter-runtime"),
        "IPYTHONDIR": str(tmp_path / "ipython"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval-lax",
         "--nbval-cell-timeout=600", "-o", "addopts=", *map(str, notebooks)],
        cwd=ROOT / "notebooks", env=env, capture_output=True, text=True, timeout=2400,
    )
    names = ", ".join(n.name for n in notebooks)
    assert proc.returncode == 0, f"{names} failed under nbval:\n{proc.stdout[-6000:]}"
    assert " passed" in proc.stdout and "failed" not in proc.stdout


def test_there_are_four_notebooks() -> None:
    assert [p.stem for p in NOTEBOOKS] == [
        "01-quickstart", "02-scoped-questions", "03-evidence-and-audit", "04-configure-a-model",
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline(notebook: Path, data_home: Path, tmp_path: Path) -> None:
    run_notebooks([notebook], data_home, tmp_path)
    # No library in the data home: the sample went to a data home of its own, not into this one
    # (`doctor` in notebook 04 may open an empty index there; it holds no passage).
    if (data_home / "index" / "catalog.sqlite").exists():
        assert catalog_snapshot(data_home)["chunks"] == []
    if notebook.stem != "04-configure-a-model":
        assert (data_home / "samples" / "sample" / "index" / "catalog.sqlite").is_file()


def catalog_snapshot(home: Path) -> dict[str, Any]:
    """Items, documents and passages of a data home's index, read without writing."""
    db = sqlite3.connect(f"file:{home / 'index' / 'catalog.sqlite'}?mode=ro", uri=True)
    try:
        return {
            "items": sorted(r[0] for r in db.execute("SELECT key FROM items")),
            "documents": db.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
            "chunks": sorted(r[0] for r in db.execute("SELECT chunk_id FROM chunks")),
        }
    finally:
        db.close()


def test_notebooks_leave_an_indexed_library_whole(tmp_path: Path) -> None:
    """A researcher's indexed library in the data home: every notebook, run top to bottom, uses
    it read-only; its items, documents and passages (catalogue and vectors) are unchanged."""
    from agents_helpers import index_small_library
    from conftest import LibraryBuilder

    from zocrates_nb.app import App

    home = tmp_path / "home"
    index_small_library(LibraryBuilder(tmp_path / "library"), home).close()
    before = catalog_snapshot(home)
    with App.open(home) as app:
        status_before = app.status()
        vectors_before = app.library_index.dense.ids()
    assert before["items"] and before["chunks"]

    run_notebooks(NOTEBOOKS, home, tmp_path)

    assert catalog_snapshot(home) == before
    with App.open(home) as app:
        status = app.status()
        assert (status.items, status.chunks) == (status_before.items, status_before.chunks)
        assert app.library_index.dense.ids() == vectors_before
        assert app.sessions(), "the notebooks asked their questions in the user's library"
    assert not (home / "samples" / "sample").exists(), "the sample was indexed although a " \
        "library was there"
