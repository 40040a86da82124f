"""`zocrates-nb bench ui`: how soon the chat panel shows something after Enter, offline.

Measured through the widget's real message path: a question is delivered to `ChatWidget` as the
front end's `{kind: "ask"}` comm message and the clock stops when the widget *sends* the first
`step` event (what the panel shows first) and the first `text_delta` (the first answer token).
A recording comm stands in for the browser, so the figures are the kernel side of the latency;
the browser adds one websocket hop and a render (tests/test_browser_chat.py records those).

Models are loaded by a warm-up question first (a researcher's second question is the common
case); medians over `--repeat` questions, each in a fresh session. Also measured: a checkpoint
card's decision to the next step (ask with budget 1, then "Synthesize" through the comm).

`--cold` adds the first question of a fresh process (a kernel just started), each in its own
Python process: without the panel's background warm-up, with it when the question comes at once
(the turn waits for the models behind a "Loading models…" step), and with it when the question
comes after the warm-up is done (a researcher who took a few seconds to type).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zocrates_nb.bench.questions import QUESTIONS
from zocrates_nb.widget.recording import RecordingComm, Sent

TARGET_FIRST_STEP_MS = 300.0
WARM_UP = "What is dense retrieval?"
CHECKPOINT_QUESTION = ("How does reciprocal rank fusion combine rankings, and why do lock services "
                       "use lock delays?")


def _index(home: Path, args: argparse.Namespace) -> None:
    from zocrates_nb.bench.index import library_from
    from zocrates_nb.index import Index, index_library

    library = library_from(args, home / "sample-library")
    with Index.open(home) as index:
        index_library(library, index, progress=False)


def _first(comm: RecordingComm, type_: str, after: float) -> Sent | None:
    return comm.first(lambda s: s.at >= after and s.method == "custom"
                      and s.content.get("kind") == "event"
                      and s.content["event"].get("type") == type_)


async def _turns(app: Any, questions: list[str]) -> list[dict[str, Any]]:
    from zocrates_nb.widget import ChatWidget
    from zocrates_nb.widget.recording import recording_comms, send_from_front_end

    with recording_comms():
        widget = ChatWidget(app)
    comm = widget.comm
    assert isinstance(comm, RecordingComm)
    out = []
    for question in questions:
        send_from_front_end(widget, {"kind": "new_session"})
        comm.clear()
        t0 = time.perf_counter()
        send_from_front_end(widget, {"kind": "ask", "prompt": question})
        await widget.wait()
        step, token, end = (_first(comm, t, t0) for t in ("step", "text_delta", "final"))
        out.append({
            "question": question,
            "first_step_ms": (step.at - t0) * 1000 if step else None,
            "first_token_ms": (token.at - t0) * 1000 if token else None,
            "final_ms": (end.at - t0) * 1000 if end else None,
        })
    return out


async def _checkpoint_decision(app: Any) -> dict[str, Any]:
    """A turn paused at its checkpoint (budget 1); the card's "Synthesize" to the next step."""
    from zocrates_nb.widget import ChatWidget
    from zocrates_nb.widget.recording import recording_comms, send_from_front_end

    with recording_comms():
        widget = ChatWidget(app, budget=1, warm_up=False)
    comm = widget.comm
    assert isinstance(comm, RecordingComm)
    send_from_front_end(widget, {"kind": "ask", "prompt": CHECKPOINT_QUESTION})
    await widget.wait()
    checkpoints = comm.events("checkpoint")
    if not checkpoints:
        return {"checkpoint_reached": False}
    comm.clear()
    t0 = time.perf_counter()
    send_from_front_end(widget, {"kind": "resume", "interrupt_id": checkpoints[0]["interrupt_id"],
                                 "action": "synthesize", "guidance": ""})
    await widget.wait()
    step, token, end = (_first(comm, t, t0) for t in ("step", "text_delta", "final"))
    return {
        "checkpoint_reached": True,
        "decision_to_next_step_ms": round((step.at - t0) * 1000, 1) if step else None,
        "decision_to_first_token_ms": round((token.at - t0) * 1000, 1) if token else None,
        "decision_to_final_ms": round((end.at - t0) * 1000, 1) if end else None,
    }


def _cold_child(home: str, mode: str) -> dict[str, Any]:
    """In a fresh process: open the panel, ask the first question (see the module docstring)."""
    from zocrates_nb.app import App
    from zocrates_nb.widget import ChatWidget, start_warm_up
    from zocrates_nb.widget.recording import recording_comms, send_from_front_end

    async def go() -> dict[str, Any]:
        t_open = time.perf_counter()
        app = App.open(home)
        with recording_comms():
            widget = ChatWidget(app, warm_up=mode != "none")
        comm = widget.comm
        assert isinstance(comm, RecordingComm)
        warm_s = None
        if mode == "after":
            warm = start_warm_up(app)
            await asyncio.to_thread(warm.done.wait)
            warm_s = round(time.perf_counter() - t_open, 2)
        t0 = time.perf_counter()
        send_from_front_end(widget, {"kind": "ask", "prompt": QUESTIONS[0]})
        await widget.wait()
        step, end = _first(comm, "step", t0), _first(comm, "final", t0)
        phases = [e["phase"] for e in comm.events("step")]
        return {
            "first_step_ms": round((step.at - t0) * 1000, 1) if step else None,
            "first_step_phase": phases[0] if phases else None,
            "final_ms": round((end.at - t0) * 1000, 1) if end else None,
            "warm_up_s": warm_s,
        }

    return asyncio.run(go())


def _cold(home: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode in ("none", "immediate", "after"):
        code = ("import json, sys; from zocrates_nb.bench.ui import _cold_child; "
                f"print('RESULT', json.dumps(_cold_child({str(home)!r}, {mode!r})))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=900)
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")), "")
        out[mode] = json.loads(line[7:]) if line else {"error": proc.stderr[-500:]}
    return {
        "cold_no_warm_up_first_step_ms": out["none"].get("first_step_ms"),
        "cold_no_warm_up_final_ms": out["none"].get("final_ms"),
        "cold_warm_up_asked_at_once_first_step": out["immediate"].get("first_step_phase"),
        "cold_warm_up_asked_at_once_first_step_ms": out["immediate"].get("first_step_ms"),
        "cold_warm_up_asked_at_once_final_ms": out["immediate"].get("final_ms"),
        "cold_warm_up_s": out["after"].get("warm_up_s"),
        "cold_after_warm_up_first_step_ms": out["after"].get("first_step_ms"),
        "cold_after_warm_up_final_ms": out["after"].get("final_ms"),
    }


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return round(statistics.median(values), 1) if values else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.app import App

    repeat = max(int(getattr(args, "repeat", 3) or 3), 1)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(repeat)]
    with tempfile.TemporaryDirectory(prefix="zocrates-bench-ui-") as tmp:
        if getattr(args, "indexed", False):
            home, index_s = Path(args.home), 0.0
        else:
            home = Path(tmp)
            t0 = time.perf_counter()
            _index(home, args)
            index_s = time.perf_counter() - t0
        cold_runs = _cold(home) if getattr(args, "cold", False) else {}
        with App.open(home) as app:
            t0 = time.perf_counter()
            cold = asyncio.run(_turns(app, [WARM_UP]))[0]
            warm_up_s = time.perf_counter() - t0
            rows = asyncio.run(_turns(app, questions))
            decision = asyncio.run(_checkpoint_decision(app))
    first_step = _median(rows, "first_step_ms")
    return {
        "path": "widget comm (kernel side), offline engine",
        "questions": len(rows),
        "index_s": round(index_s, 2),
        "cold_first_step_ms": round(cold["first_step_ms"] or 0.0, 1),
        "cold_first_token_ms": round(cold["first_token_ms"] or 0.0, 1),
        "warm_up_s": round(warm_up_s, 2),
        "first_step_ms_median": first_step,
        "first_step_ms_max": round(max(r["first_step_ms"] or 0.0 for r in rows), 1),
        "first_token_ms_median": _median(rows, "first_token_ms"),
        "final_ms_median": _median(rows, "final_ms"),
        **decision,
        **cold_runs,
        "first_step_target_ms": TARGET_FIRST_STEP_MS,
        "first_step_within_target": first_step is not None and first_step <= TARGET_FIRST_STEP_MS,
    }
