"""A checkpoint survives the process: `zocrates-nb chat` pauses at a checkpoint and is killed
(SIGKILL, no clean-up), then `zocrates-nb resume` in a new process continues the same search
from the snapshot in sessions.db, with the first pass's work kept.

And a checkpoint is resumed once: while one resume holds it (in this process or another), every
other resume is refused at once; a resume that fails or is stopped, or whose process is killed,
leaves the checkpoint waiting."""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agents_helpers import (
    Recorder,
    collect,
    coordinator_search,
    index_small_library,
    passes,
    run,
    search_then,
    terminal,
)
from conftest import LibraryBuilder
from pydantic_ai import ModelResponse
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo

from zocrates_nb.app import App, CheckpointClaimed
from zocrates_nb.events import CheckpointEvent
from zocrates_nb.sessions import SessionStore

CLI = [sys.executable, "-m", "zocrates_nb.cli"]


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "PYTHONUNBUFFERED": "1",
    }


def read_until(proc: subprocess.Popen[bytes], pattern: str, timeout: float) -> str:
    """Read the process's stdout (prompts have no newline) until `pattern` appears."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            seen += chunk
            if re.search(pattern, seen.decode("utf-8", "replace")):
                return seen.decode("utf-8", "replace")
    raise AssertionError(f"{pattern!r} not seen within {timeout}s; got:\n{seen.decode()[-2000:]}")


def test_checkpoint_resumes_in_a_new_process_after_a_kill(tmp_path: Path) -> None:
    home = tmp_path / "home"
    index_small_library(LibraryBuilder(tmp_path / "library"), home).close()

    chat = subprocess.Popen(
        [*CLI, "--home", str(home), "chat", "--budget", "1"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(),
    )
    try:
        read_until(chat, r"you> ", 120)
        assert chat.stdin is not None
        chat.stdin.write(b"How do Raft leaders replicate log entries and commit them?\n")
        chat.stdin.flush()
        card = read_until(chat, r"checkpoint \(e/s\)> ", 300)
        assert "Deep research checkpoint (extension 1 of 2)" in card
        assert "used 1/1 retrieval calls" in card
        session = re.search(r"resume --session ([0-9a-f]{32})", card)  # the session it created
        assert session, card
        sid = session.group(1)
    finally:
        chat.kill()  # SIGKILL: no chance to save anything on the way out
        chat.wait(30)

    store = SessionStore.open(home)
    snapshot = store.pending_checkpoint(sid)
    assert snapshot is not None and snapshot.interrupt_id == f"{snapshot.turn_id}-ext1"
    assert snapshot.claim is None  # the killed chat never resumed it
    first_pass = {e["chunk_id"] for e in snapshot.payload["run_state"]["evidence"]}
    assert first_pass
    store.close()

    done = subprocess.run(
        [
            *CLI,
            "--home",
            str(home),
            "resume",
            "--session",
            sid,
            "--action",
            "extend_budget",
            "--guidance",
            "read the section on log replication",
            "--json",
        ],
        capture_output=True,
        env=_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    out = json.loads(done.stdout)
    assert out["session_id"] == sid and out["status"] == "answered"
    assert out["cited_sources"] and "without a language model" in out["answer"]
    gathered = {e["chunk_id"] for e in out["evidence"]}
    # The first pass's passages are still there (unless a section read now holds them whole).
    assert first_pass & gathered or any(":s" in c for c in gathered)

    store = SessionStore.open(home)
    assert store.pending_checkpoint(sid) is None
    (turn,) = store.turns(sid)
    assert turn.status == "answered" and turn.extensions == 1 and turn.tool_calls >= 2
    # The coordinator's history holds the question and the final answer.
    messages = store.load_messages(sid)
    assert any(out["answer"] == getattr(p, "content", None) for m in messages for p in m.parts)


# ---------------------------------------------------------------------------- one resume at a time
Script = Callable[[list[ModelMessage], AgentInfo], ModelResponse]


def paused_app(home: Path, index: Any, during_resume: Script | None = None) -> tuple[App, Any]:
    """An app whose search asks for an extension on every pass, and a checkpoint to resume.

    `during_resume` (when given) runs instead of the search model's script on the passes after
    the first, i.e. while a resume holds the checkpoint.
    """
    base = search_then(["raft election"], end="extension")

    def search(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if during_resume is not None and passes(messages) > 1:
            return during_resume(messages, info)
        return base(messages, info)

    rec = Recorder()
    app = App.open(
        home,
        index=index,
        role_models={
            "coordinator": rec.wrap("coordinator", coordinator_search),
            "search": rec.wrap("search", search),
        },
    )
    cp = terminal(run(app.ask("Explain Raft in depth")))
    assert cp.type == "checkpoint"
    return app, cp


def _hold_claim(db: str, sid: str, interrupt_id: str, held: Any) -> None:
    """Another process resuming the checkpoint: it claims it and works on (until killed)."""
    snapshot = SessionStore(db).claim_checkpoint(sid, interrupt_id)
    held.put(snapshot.claim.pid if snapshot.claim else None)
    time.sleep(600)


def test_a_checkpoint_another_process_resumes_is_refused_until_it_dies(
    tmp_path: Path, small_index: Any
) -> None:
    from zocrates_nb.server.service import http_error

    app, cp = paused_app(tmp_path, small_index)
    ctx = mp.get_context("spawn")
    held = ctx.Queue()
    other = ctx.Process(
        target=_hold_claim, args=(str(app.store.path), cp.session_id, cp.interrupt_id, held)
    )
    other.start()
    try:
        assert held.get(timeout=120) == other.pid
        t0 = time.monotonic()
        with pytest.raises(CheckpointClaimed, match="already being resumed") as refused:
            app.resume(cp.session_id, cp.interrupt_id, "synthesize")
        assert time.monotonic() - t0 < 5  # at once, not after a wait
        assert refused.value.holder is not None and refused.value.holder.pid == other.pid
        assert f"pid {other.pid}" in str(refused.value)
        assert http_error(refused.value).status_code == 409  # what the server answers
        assert app.history(cp.session_id)[-1].status == "running"

        other.kill()  # SIGKILL: the holder never gets to let go
        other.join(30)
        assert other.exitcode == -signal.SIGKILL
        final = terminal(run(app.resume(cp.session_id, cp.interrupt_id, "synthesize")))
        assert final.type == "final" and final.turn_id == cp.turn_id
        assert app.pending_checkpoint(cp.session_id) is None
        assert [t.status for t in app.history(cp.session_id)] == ["answered"]
    finally:
        if other.is_alive():
            other.kill()
        other.join(30)
        app.close()


def test_a_resume_that_fails_leaves_the_checkpoint_resumable(
    tmp_path: Path, small_index: Any
) -> None:
    failures = [ConnectionError("the search model's endpoint refused the connection")]
    base = search_then(["raft election"], end="extension")

    def flaky(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if failures:
            raise failures.pop()
        return base(messages, info)

    app, cp = paused_app(tmp_path, small_index, during_resume=flaky)
    try:
        error = terminal(run(app.resume(cp.session_id, cp.interrupt_id, "extend_budget")))
        assert error.type == "error" and error.retryable and error.turn_id == cp.turn_id
        pending = app.pending_checkpoint(cp.session_id)
        assert pending is not None and pending.interrupt_id == cp.interrupt_id
        assert pending.claim is None  # nobody holds it: the researcher can retry
        turn = app.history(cp.session_id)[-1]
        assert turn.status == "checkpoint"
        assert turn.checkpoint is not None and turn.checkpoint.interrupt_id == cp.interrupt_id

        # The retry gets the extension the failed attempt did not use.
        again = terminal(run(app.resume(cp.session_id, cp.interrupt_id, "extend_budget")))
        assert again.type == "checkpoint" and again.extension == 2
        assert again.interrupt_id == f"{cp.turn_id}-ext2"
    finally:
        app.close()


def test_while_a_resume_runs_others_are_refused_and_a_stop_leaves_it_waiting(
    tmp_path: Path, small_index: Any
) -> None:
    seen: dict[str, Any] = {}
    loop: asyncio.AbstractEventLoop | None = None
    cancel: asyncio.Event | None = None
    app: App | None = None

    def meanwhile(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        """The search model of the running resume: others try to resume, then the user stops."""
        assert app is not None and loop is not None and cancel is not None
        claimed = app.pending_checkpoint(cp.session_id)
        assert claimed is not None and claimed.claim is not None
        try:
            app.resume(cp.session_id, cp.interrupt_id, "synthesize")
        except CheckpointClaimed as e:
            seen["here"] = e
        seen["cli"] = subprocess.run(
            [*CLI, "--home", str(tmp_path), "resume", "--session", cp.session_id,
             "--action", "synthesize", "--json"],
            capture_output=True,
            env=_env(),
            timeout=120,
        )
        renewed = app.pending_checkpoint(cp.session_id)
        assert renewed is not None and renewed.claim is not None
        seen["heartbeat"] = renewed.claim.renewed > claimed.claim.renewed
        loop.call_soon_threadsafe(cancel.set)
        return search_then(["raft election"], end="extension")(messages, info)

    app, cp = paused_app(tmp_path, small_index, during_resume=meanwhile)
    app.claim_renew_seconds = 0.2  # the running resume renews its claim meanwhile

    async def scenario() -> list[Any]:
        nonlocal loop, cancel
        loop, cancel = asyncio.get_running_loop(), asyncio.Event()
        assert app is not None
        first = app.resume(cp.session_id, cp.interrupt_id, "extend_budget", cancel=cancel)
        racer = app.resume(cp.session_id, cp.interrupt_id, "synthesize")  # not started yet
        events = []
        async for ev in first:
            events.append(ev)
            if ev.type == "step" and "racer" not in seen:
                # The first resume holds the claim now: the racer loses at its first step.
                with pytest.raises(CheckpointClaimed):
                    await collect(racer)
                seen["racer"] = True
        return events

    try:
        events = asyncio.run(scenario())
        stopped = terminal(events)
        assert stopped.type == "error" and "The checkpoint still waits" in stopped.message
        assert seen["racer"] and "already being resumed" in str(seen["here"])
        assert seen["heartbeat"]
        cli = seen["cli"]
        assert cli.returncode == 2
        assert "already being resumed" in cli.stderr.decode()
        assert f"pid {os.getpid()}" in cli.stderr.decode()

        pending = app.pending_checkpoint(cp.session_id)
        assert pending is not None and pending.interrupt_id == cp.interrupt_id
        assert pending.claim is None
        assert app.history(cp.session_id)[-1].status == "checkpoint"
        final = terminal(run(app.resume(cp.session_id, cp.interrupt_id, "synthesize")))
        assert final.type == "final"
    finally:
        app.close()


def test_checkpoints_of_different_turns_have_different_ids(
    tmp_path: Path, small_index: Any
) -> None:
    app, cp = paused_app(tmp_path, small_index)
    try:
        terminal(run(app.resume(cp.session_id, cp.interrupt_id, "synthesize")))
        again = terminal(run(app.ask("And log compaction?", session_id=cp.session_id)))
        assert isinstance(again, CheckpointEvent) and again.extension == cp.extension
        assert again.interrupt_id == f"{again.turn_id}-ext1" != cp.interrupt_id
    finally:
        app.close()
