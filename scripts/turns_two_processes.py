"""Durability: N turns from two processes into one session of one sessions.db, through `App.ask`.

    python scripts/turns_two_processes.py [--turns 200] [--home DIR]

Each process asks on the same session until it has its share answered; a question refused
because the other process's turn is running (`SessionBusy`, at once or from the stream) is
asked again. The coordinator is a scripted pydantic-ai model (the agents are not the point).
At the end: every turn answered, none lost, the history in turn order (never interleaved),
`PRAGMA integrity_check` ok. Prints one JSON line of figures; exit status 1 on any failure.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def _worker(home: str, session_id: str, who: str, share: int, start: Any, out: Any) -> None:
    from pydantic_ai import ModelResponse, TextPart
    from pydantic_ai.models.function import FunctionModel

    from zocrates_nb.agents.offline import stream_from
    from zocrates_nb.app import App
    from zocrates_nb.sessions import SessionBusy

    def reply(messages: list[Any], info: Any) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"answer {len(messages)}")])

    model = FunctionModel(reply, stream_function=stream_from(reply))
    app = App.open(home, role_models={"coordinator": model},
                   sessions={"compaction": {"enabled": False}})  # fmt: skip
    refused = 0

    async def run() -> None:
        nonlocal refused
        done = 0
        while done < share:
            try:
                events = [e async for e in app.ask(f"{who} {done}", session_id=session_id,
                                                   hitl=False)]  # fmt: skip
            except SessionBusy:
                refused += 1
                await asyncio.sleep(0.02)
                continue
            end = events[-1]
            if end.type == "error" and "already running" in end.message:
                refused += 1  # lost the race inside begin_turn
                continue
            if end.type != "final":
                raise RuntimeError(f"{who} {done}: {end.type}: {getattr(end, 'message', '')}")
            done += 1

    start.wait()
    asyncio.run(run())
    app.close()
    out.put((who, refused))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=200)
    p.add_argument("--home", type=Path, help="a data home (default: a temporary one)")
    args = p.parse_args(argv)
    home = args.home or Path(tempfile.mkdtemp(prefix="zocrates-turns-"))

    from zocrates_nb.sessions import SessionStore

    store = SessionStore.open(home)
    sid = store.create_session().id
    ctx = mp.get_context("spawn")
    start, out = ctx.Event(), ctx.Queue()
    shares = {"A": args.turns // 2, "B": args.turns - args.turns // 2}
    procs = [ctx.Process(target=_worker, args=(str(home), sid, who, n, start, out))
             for who, n in shares.items()]  # fmt: skip
    for proc in procs:
        proc.start()
    t0 = time.monotonic()
    start.set()
    for proc in procs:
        proc.join(timeout=3600)
    seconds = time.monotonic() - t0
    refusals = {}
    while not out.empty():
        who, n = out.get()
        refusals[who] = n

    turns = store.turns(sid)
    blocks = store.message_blocks(sid)
    checks = {
        "all_answered": all(t.status == "answered" for t in turns),
        "none_lost": len(turns) == args.turns
        and sorted(t.prompt for t in turns)
        == sorted(f"{w} {i}" for w, n in shares.items() for i in range(n)),
        "gapless_indexes": [t.index for t in turns] == list(range(1, args.turns + 1)),
        "history_in_turn_order": [b.turn_id for b in blocks] == [t.turn_id for t in turns],
        "lease_released": store.get_state(sid).running is None,
        "integrity_ok": store._conn().execute("PRAGMA integrity_check").fetchone()[0] == "ok",
        "workers_ok": all(proc.exitcode == 0 for proc in procs),
    }
    print(json.dumps({
        "turns": len(turns), "seconds": round(seconds, 1),
        "turns_per_second": round(len(turns) / seconds, 1) if seconds else None,
        "refused_then_retried": refusals, **checks,
    }))  # fmt: skip
    store.close()
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
