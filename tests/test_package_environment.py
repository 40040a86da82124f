"""Importing zocrates_nb leaves the kernel's environment as the user set it, and the local
embedding model still loads with nothing downloaded: HF_HUB_OFFLINE unset, the hub unreachable."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Variables a library reads to go online or to the hub; none of them is set in the child.
HUB_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
            "LITELLM_LOCAL_MODEL_COST_MAP", "ANONYMIZED_TELEMETRY", "TOKENIZERS_PARALLELISM",
            "HF_HUB_DISABLE_PROGRESS_BARS")  # fmt: skip


def _child(code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in HUB_VARS}
    # Every hub address unroutable, and an empty cache: a download attempt fails, loudly.
    env.update(PYTHONPATH=str(ROOT), HF_ENDPOINT="http://127.0.0.1:9",
               HF_HOME=str(tmp_path / "hf"), HTTPS_PROXY="http://127.0.0.1:9",
               HTTP_PROXY="http://127.0.0.1:9")  # fmt: skip
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)  # fmt: skip


def test_importing_the_package_changes_no_environment_variable(tmp_path: Path) -> None:
    code = (
        "import json, os; before = dict(os.environ); import zocrates_nb, zocrates_nb.app; "
        "print(json.dumps({k: v for k, v in os.environ.items() if before.get(k) != v}))"
    )
    done = _child(code, tmp_path)
    assert done.returncode == 0, done.stderr
    changed = json.loads(done.stdout.strip().splitlines()[-1])
    assert changed == {}, f"importing zocrates_nb set {changed} for the whole kernel"


def test_the_local_model_loads_without_hf_hub_offline_and_without_a_network(
    tmp_path: Path,
) -> None:
    code = ("import os; from zocrates_nb.index.embedder import DEFAULT_MODEL, load_model; "
            "m = load_model(DEFAULT_MODEL); v = m.encode(['a lock service']); "
            "print(len(v[0]), 'HF_HUB_OFFLINE' in os.environ)")  # fmt: skip
    done = _child(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-2:] == ["384", "False"]
    assert "Loading weights" not in done.stderr
