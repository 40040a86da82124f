"""`zocrates-nb bench offline`: how long the embedded offline engine takes to answer.

Warm answers: each question asked through `App.ask` in a fresh session (checkpoints off) with the
models already loaded; the p50 of single questions and of compound ones (a comparison of two or
three named systems), the texts each question sent to the embedding model and how many of them
it had sent before in the same turn (a repeat is a vector computed twice: there should be none).
Beside them, the time the same model takes to embed a fixed batch of 96 passage-sized texts on
this machine now, so runs on a loaded machine compare as ratios; and the load average.

`--cold`: the first answer of a fresh process (a kernel start), wall time from the interpreter's
start with the models loading inside the turn, against the seconds the answer itself shows.
Sessions go to a temporary copy of nothing: the data home's index is only read, its sessions
get the benchmark's turns (use a scratch home, or `--home` of an experiment).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Plain researcher questions about the kind of library the corpus is (not tuned to its papers'
# wording). Single: one system or idea; compound: a comparison the answer splits into parts.
SINGLE = [
    "How does Raft elect a new leader after the old one fails?",
    "How does the Google File System reclaim the space of deleted files?",
    "What does Spanner use TrueTime for?",
    "How does Dynamo reconcile conflicting versions of an object?",
    "What activation function does BERT use in its feed-forward layers?",
    "How does BM25 normalise for document length?",
    "How does Velvet correct errors in the de Bruijn graph?",
    "What is a hidden Markov model?",
]
COMPOUND = [
    "Compare how Raft and Zab elect a new leader after the old one fails.",
    "How do the masters of MapReduce, Bigtable and GFS find out that a worker died?",
    "How do Chubby and ZooKeeper let clients wait for changes?",
    "How do MoCo and SimCLR obtain negative examples for contrastive learning?",
]
WARM_UP = "How are replicas kept consistent when a server fails?"
BATCH = 96  # passage-sized texts in the fixed batch
_WORDS_TEXT = """replica leader quorum log entry commit term vote shard tablet lock lease master
client server failure timeout election index query vector passage read write graph path genome
read error alignment model layer attention gradient loss"""
_WORDS = _WORDS_TEXT.split()


def fixed_batch(n: int = BATCH, words: int = 150) -> list[str]:
    """`n` distinct passage-sized texts, the same every run (never in the vector cache)."""
    out = []
    for i in range(n):
        seq = [_WORDS[(i * 7 + j * j + j * i) % len(_WORDS)] for j in range(words)]
        out.append(f"Passage {i} of the fixed batch: " + " ".join(seq) + ".")
    return out


def batch_seconds(model: str) -> float:
    """Seconds the local model takes for the fixed batch (the vector cache bypassed)."""
    from zocrates_nb.index.embedder import Embedder

    emb = Embedder(model)
    emb._embed_new(fixed_batch(8), None)  # load the model and warm its kernels
    t0 = time.perf_counter()
    emb._embed_new(fixed_batch(), None)
    return time.perf_counter() - t0


async def _answer(app: Any, question: str) -> tuple[Any, float]:
    t0 = time.perf_counter()
    final = None
    async for ev in app.ask(question, hitl=False):
        if ev.type in ("final", "error", "checkpoint"):
            final = ev
    return final, time.perf_counter() - t0


def warm(home: Path, singles: list[str], compounds: list[str], repeat: int) -> dict[str, Any]:
    from zocrates_nb.app import App
    from zocrates_nb.index.embedder import embedding_meter

    rows: list[dict[str, Any]] = []
    with App.open(home) as app:
        asyncio.run(_answer(app, WARM_UP))  # load the models (a question of its own)
        for _ in range(max(repeat, 1)):
            for kind, questions in (("single", singles), ("compound", compounds)):
                for q in questions:
                    with embedding_meter() as meter:
                        final, seconds = asyncio.run(_answer(app, q))
                    rows.append({
                        "kind": kind, "question": q, "seconds": round(seconds, 2),
                        "shown_seconds": getattr(final, "seconds", None),
                        "status": getattr(final, "type", "none"),
                        "texts_embedded": meter.texts, "repeats": meter.repeats,
                        "chars_embedded": meter.chars,
                        "cited": len(getattr(final, "cited_sources", []) or []),
                    })  # fmt: skip
        model = app.library_index.offline_model_name
    batch = batch_seconds(model)

    def p50(kind: str, key: str) -> float | None:
        xs = [r[key] for r in rows if r["kind"] == kind]
        return round(statistics.median(xs), 2) if xs else None

    single, compound = p50("single", "seconds"), p50("compound", "seconds")
    return {
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "questions": len(rows),
        "warm_single_p50_s": single,
        "warm_compound_p50_s": compound,
        "texts_embedded_per_question_p50": p50("single", "texts_embedded"),
        "texts_embedded_per_compound_p50": p50("compound", "texts_embedded"),
        "repeats_max": max((r["repeats"] for r in rows), default=0),
        "fixed_batch": f"{BATCH} passage-sized texts",
        "fixed_batch_s": round(batch, 3),
        "single_p50_in_batches": round(single / batch, 2) if single else None,
        "compound_p50_in_batches": round(compound / batch, 2) if compound else None,
        "rows": rows,
    }


_COLD = """
import asyncio, json, sys, time
t0 = float(sys.argv[2])
from zocrates_nb.app import App
async def main():
    with App.open(sys.argv[1]) as app:
        final = None
        async for ev in app.ask(sys.argv[3], hitl=False):
            if ev.type in ("final", "error", "checkpoint"):
                final = ev
        loading = sum(s.seconds or 0 for s in app.turn(final.turn_id).steps
                      if s.phase == "loading") if final is not None else None
        print(json.dumps({"wall_s": round(time.time() - t0, 2),
                          "shown_s": getattr(final, "seconds", None),
                          "loading_step_s": round(loading, 2) if loading is not None else None,
                          "status": getattr(final, "type", "none")}))
asyncio.run(main())
"""


def cold(home: Path, question: str, runs: int) -> dict[str, Any]:
    """The first answer of fresh processes (interpreter start to answer)."""
    out = []
    for _ in range(max(runs, 1)):
        t0 = time.time()
        proc = subprocess.run(
            [sys.executable, "-c", _COLD, str(home), repr(t0), question],
            capture_output=True, text=True, check=False,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )  # fmt: skip
        line = (proc.stdout.strip().splitlines() or ["{}"])[-1]
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            out.append({"error": proc.stderr.strip()[-400:]})
    walls = [r["wall_s"] for r in out if "wall_s" in r]
    return {
        "cold_load_average": [round(x, 2) for x in os.getloadavg()],
        "cold_first_answer_wall_p50_s": round(statistics.median(walls), 2) if walls else None,
        "cold_runs": out,
    }


def _questions(path: Path | None) -> tuple[list[str], list[str]]:
    if path is None:
        return SINGLE, COMPOUND
    singles: list[str] = []
    compounds: list[str] = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            (compounds if row.get("kind") == "compound" else singles).append(row["question"])
    return singles, compounds


def run(args: argparse.Namespace) -> dict[str, Any]:
    singles, compounds = _questions(getattr(args, "dir", None))
    result: dict[str, Any] = {}
    if getattr(args, "cold", False):
        result.update(cold(args.home, singles[0], args.repeat))
    result.update(warm(args.home, singles, compounds, max(args.repeat // 3, 1)))
    if not getattr(args, "json", False):
        result.pop("rows", None)
    return result


__all__ = ["COMPOUND", "SINGLE", "batch_seconds", "cold", "fixed_batch", "run", "warm"]
