"""SIGTERM (`kill`, a service manager) ends `zocrates-nb ask` the way Ctrl-C does: promptly, one
plain line, status 143, the running turn saved as cancelled — not cut off by the signal with
nothing said and the turn left "running". A real process, its model a real loopback server
that hangs."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from zocrates_nb.devtools.scripted_openai import Hang, ScriptedOpenAI, model_config

ROOT = Path(__file__).resolve().parents[1]


def test_sigterm_mid_turn_is_one_line_143_and_a_cancelled_turn(own_sample_home: Path) -> None:
    with ScriptedOpenAI() as llm:
        config = model_config(llm.url, timeout=120)
        (own_sample_home / "zocrates_config.json").write_text(json.dumps(config), "utf-8")
        llm.push(Hang(60))
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True"}  # fmt: skip
        proc = subprocess.Popen(
            [sys.executable, "-m", "zocrates_nb.cli", "--home", str(own_sample_home), "ask",
             "--no-hitl", "What is a lock service?"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not llm.requests and time.monotonic() < deadline:
            time.sleep(0.1)  # until the turn waits on the model
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.5)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        assert time.monotonic() - started < 10
    assert proc.returncode == 143, err
    assert err.rstrip().endswith("zocrates-nb: terminated"), err
    assert "Traceback" not in out + err
    with sqlite3.connect(own_sample_home / "sessions.db") as db:
        (status,) = db.execute("SELECT status FROM turns ORDER BY updated DESC LIMIT 1").fetchone()
    assert status == "cancelled"
