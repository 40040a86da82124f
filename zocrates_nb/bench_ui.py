"""`zocrates-nb bench ui`: how soon the chat panel shows something after Enter, offline.

Measured through the widget's real message path: a question is delivered to `ChatWidget` as the
front end's `{kind: "ask"}` comm message and the clock stops when the widget *sends* the first
`step` event (what the panel shows first) and the first `text_delta` (the first answer token).
A recording comm stands in for the browser, so the figures are the kernel side of the latency;
the browser adds one websocket hop and a render (tests/test_browser_chat.py records those).

Models are loaded by a warm-up question first (a researcher's second question is the common
case); medians over `--repeat` questions, each in a fresh session.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from zocrates_nb.widget_comm import RecordingComm, Sent

TARGET_FIRST_STEP_MS = 300.0
QUESTIONS = [
    "How does reciprocal rank fusion combine rankings?",
    "What is a fencing token?",
    "Why do lock services use a lock delay?",
    "What does BM25 reward?",
    "How should tables in research notebooks be organised?",
    "What should a retrieval evaluation check?",
]
WARM_UP = "What is dense retrieval?"


def _index(home: Path, args: argparse.Namespace) -> None:
    from zocrates_nb import sample
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import open_library

    if getattr(args, "zotero_dir", None):
        library = open_library(zotero_dir=args.zotero_dir)
    elif getattr(args, "folder", None):
        library = open_library(folder=args.folder)
    else:
        library = open_library(folder=sample.build(home / "sample-library"))
    with Index.open(home) as index:
        index_library(library, index, progress=False)


def _first(comm: RecordingComm, type_: str, after: float) -> Sent | None:
    return comm.first(lambda s: s.at >= after and s.method == "custom"
                      and s.content.get("kind") == "event"
                      and s.content["event"].get("type") == type_)


async def _turns(app: Any, questions: list[str]) -> list[dict[str, Any]]:
    from zocrates_nb.widget import ChatWidget
    from zocrates_nb.widget_comm import recording_comms, send_from_front_end

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


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r[key] is not None]
    return round(statistics.median(values), 1) if values else None


def run(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.app import App

    repeat = max(int(getattr(args, "repeat", 3) or 3), 1)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(repeat)]
    with tempfile.TemporaryDirectory(prefix="zocrates-bench-ui-") as tmp:
        home = Path(tmp)
        t0 = time.perf_counter()
        _index(home, args)
        index_s = time.perf_counter() - t0
        with App.open(home) as app:
            t0 = time.perf_counter()
            cold = asyncio.run(_turns(app, [WARM_UP]))[0]
            warm_up_s = time.perf_counter() - t0
            rows = asyncio.run(_turns(app, questions))
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
        "first_step_target_ms": TARGET_FIRST_STEP_MS,
        "first_step_within_target": first_step is not None and first_step <= TARGET_FIRST_STEP_MS,
    }
