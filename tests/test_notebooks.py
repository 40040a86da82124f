"""The example notebooks run top to bottom, offline, under nbval (`--nbval-lax`: every cell must
run without error; outputs vary from run to run and are not compared).

Each notebook runs in its own pytest process and kernel, with ZOCRATES_HOME pointing at a
temporary data home shared by the four (so the sample library is converted once).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("notebooks-home")


def test_there_are_four_notebooks() -> None:
    assert [p.stem for p in NOTEBOOKS] == [
        "01-quickstart", "02-scoped-questions", "03-evidence-and-audit", "04-configure-a-model",
    ]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_offline(notebook: Path, data_home: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "ZOCRATES_HOME": str(data_home),
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
         "--nbval-cell-timeout=600", "-o", "addopts=", str(notebook)],
        cwd=notebook.parent, env=env, capture_output=True, text=True, timeout=1200,
    )
    assert proc.returncode == 0, f"{notebook.name} failed under nbval:\n{proc.stdout[-6000:]}"
    assert " passed" in proc.stdout and "failed" not in proc.stdout
