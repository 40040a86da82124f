"""`zocrates-nb bench server`: the light endpoints under a full load of turns.

A real Jupyter server with the extension over a data home (the built-in sample, indexed into a
temporary home, unless `--indexed` names one with --home). Offline turns (the embedded engine:
CPU-bound, the heaviest load this machine can make without a network) are started until the
server refuses more (`limits.concurrent_turns`, then 429): twice as many askers as slots, three
questions each, one after the other; while they run, `GET /zocrates/sessions` is asked every
50 ms. Reported: its latency percentiles during the load (the target: p95 under 100 ms), how
many turns ran and were refused, and how long the turns took. Quote the figures with the load
average beside them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from zocrates_nb.bench.questions import QUESTIONS

TARGET_LIGHT_MS = 100.0
ROUNDS = 3  # questions each load thread asks, one after the other


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(int(q * len(ordered)), len(ordered) - 1)], 1) if ordered else 0.0


def run(args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    from zocrates_nb.config import load_settings, turn_slots
    from zocrates_nb.server.testing import JupyterServer

    with tempfile.TemporaryDirectory(prefix="zocrates-bench-server-") as tmp:
        home = Path(args.home) if args.indexed else Path(tmp) / "home"
        if not args.indexed:
            from zocrates_nb.app import App

            with App.open(home) as app:
                app.index(sample=True)
        limit = turn_slots(load_settings(home).limits)
        root = Path(tmp) / "jupyter"
        root.mkdir()
        with JupyterServer(home, root) as server:
            headers = {"Authorization": f"token {server.token}"}
            timeout = httpx.Timeout(30, read=None)
            client = httpx.Client(base_url=server.url, headers=headers, timeout=timeout)
            # A first turn loads the models (the first question of a fresh server waits).
            client.post("zocrates/chat", json={"prompt": QUESTIONS[0], "hitl": False})
            statuses: list[int] = []
            seconds: list[float] = []
            lock = threading.Lock()

            def ask(first: int) -> None:
                with httpx.Client(base_url=server.url, headers=headers, timeout=timeout) as c:
                    for n in range(first, first + ROUNDS):
                        t0 = time.perf_counter()
                        status = c.post("zocrates/chat", json={
                            "prompt": QUESTIONS[n % len(QUESTIONS)], "hitl": False}).status_code
                        with lock:
                            statuses.append(status)
                            if status == 200:
                                seconds.append(time.perf_counter() - t0)

            load = [threading.Thread(target=ask, args=(n,)) for n in range(2 * limit)]
            light: list[float] = []
            for thread in load:
                thread.start()
            while any(t.is_alive() for t in load):
                t0 = time.perf_counter()
                assert client.get("zocrates/sessions").status_code == 200
                light.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.05)
            for thread in load:
                thread.join()
    return {
        "concurrent_turns": limit,
        "turns_answered": statuses.count(200),
        "turns_refused_429": statuses.count(429),
        "other_statuses": sorted({s for s in statuses if s not in (200, 429)}),
        "turn_seconds_median": round(statistics.median(seconds), 1) if seconds else None,
        "light_requests": len(light),
        "light_ms_p50": _pct(light, 0.5),
        "light_ms_p95": _pct(light, 0.95),
        "light_ms_max": _pct(light, 1.0),
        "light_target_ms": TARGET_LIGHT_MS,
        "light_within_target": _pct(light, 0.95) <= TARGET_LIGHT_MS,
    }


if __name__ == "__main__":  # pragma: no cover - `zocrates-nb bench server` is the way in
    print(json.dumps(run(argparse.Namespace(home=None, indexed=False)), indent=1))
