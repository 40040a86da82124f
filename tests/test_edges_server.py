"""The HTTP API's limits, with a real Jupyter server: bodies too large or too deep, scopes too
large or naming what the index lacks (400, one sentence); more turns than the server runs at once
(429 with Retry-After, the session list still answered); turns stopped from HTTP and at
shutdown (saved as cancelled); a second question on a busy session (always 409).

The model is the scripted OpenAI-compatible server on loopback, told to hang: a turn then runs
until it is stopped, so every case is deterministic however slow the machine."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from zocrates_nb.app import App
from zocrates_nb.devtools.scripted_openai import Hang, ScriptedOpenAI
from zocrates_nb.server.testing import JupyterServer

CANCELLED = "The turn was cancelled."


@pytest.fixture(scope="module")
def model() -> Iterator[ScriptedOpenAI]:
    with ScriptedOpenAI(lambda _request: Hang(600)) as scripted:
        yield scripted


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, model: ScriptedOpenAI) -> Path:
    home = tmp_path_factory.mktemp("limits-home")
    done = subprocess.run([sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), "index",
                           "--sample"], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    (home / "zocrates_config.json").write_text(json.dumps({
        "models": {"base": {"model": "openai:scripted", "base_url": model.url}},
        "limits": {"concurrent_turns": 3, "request_bytes": 100_000, "scope_items": 100,
                   "shutdown_grace_seconds": 1},
    }))  # fmt: skip
    return home


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    with JupyterServer(home, tmp_path_factory.mktemp("jupyter")) as running:
        yield running


def _client(server: JupyterServer) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"token {server.token}"},
                        timeout=httpx.Timeout(60, read=None))  # fmt: skip


class Turn(threading.Thread):
    """A question streamed in the background: its status, session header and data lines."""

    def __init__(self, server: JupyterServer, body: dict[str, Any]) -> None:
        super().__init__(daemon=True)
        self.server, self.body = server, body
        self.status: int | None = None
        self.session: str | None = None
        self.headers: dict[str, str] = {}
        self.text = ""
        self.events: list[dict[str, Any]] = []
        self.start()

    def run(self) -> None:
        with _client(self.server) as http, http.stream("POST", "zocrates/chat",
                                                       json=self.body) as response:  # fmt: skip
            self.headers = dict(response.headers)
            self.session = response.headers.get("X-Zocrates-Session")
            self.status = response.status_code
            for line in response.iter_lines():
                self.text += line + "\n"
                if line.startswith("data: "):
                    self.events.append(json.loads(line[6:]))

    def answered(self, seconds: float = 180) -> int:
        """Wait for the status line (a turn's 200 comes once it holds its session)."""
        deadline = time.monotonic() + seconds
        while self.status is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert self.status is not None, "no response"
        return self.status


def _cancel(server: JupyterServer, session_id: str) -> httpx.Response:
    with _client(server) as http:
        return http.post(f"zocrates/sessions/{session_id}/cancel")


def _ends_cancelled(turn: Turn) -> None:
    turn.join(60)
    assert not turn.is_alive()
    assert turn.events[-1]["type"] == "error" and turn.events[-1]["message"] == CANCELLED


@pytest.mark.parametrize(("body", "says"), [
    (b'{"prompt": "x", "items": [' + b'"ABCD2345", ' * 12_000 + b'"X"]}',
     "the request body is 144,031 bytes; at most 100,000 are accepted (limits.request_bytes"),
    (b'{"prompt": "x", "items": ' + b"[" * 900 + b"]" * 900 + b"}",
     "the request body's JSON is nested more than 32 levels deep (limits.json_depth)"),
    (b'{"prompt": "x", "items": ' + b"[" * 20_000 + b"]" * 20_000 + b"}",
     "the request body's JSON is nested more than 32 levels deep (limits.json_depth)"),
    (json.dumps({"prompt": "x", "items": [f"K{n:07d}" for n in range(101)]}).encode(),
     "101 item keys in one request; at most 100 are accepted (limits.scope_items"),
    (json.dumps({"prompt": "x", "items": ["NOSUCHKY", "ALSONONE"]}).encode(),
     "unknown item keys 'NOSUCHKY', 'ALSONONE': not in the index"),
    (json.dumps({"prompt": "x", "collections": ["Nope"]}).encode(),
     "unknown collection 'Nope'"),
], ids=["size", "depth-900", "depth-20000", "keys", "unknown-keys",
        "unknown-collection"])  # fmt: skip
def test_requests_beyond_the_limits_are_400_with_one_sentence(
    server: JupyterServer, body: bytes, says: str
) -> None:
    t0 = time.monotonic()
    with _client(server) as http:
        response = http.post("zocrates/chat", content=body,
                             headers={"Content-Type": "application/json"})  # fmt: skip
    assert response.status_code == 400, response.text
    message = response.json()["message"]
    assert says in message and "Error" not in message and "\n" not in message
    assert time.monotonic() - t0 < 60  # refused before any turn work (no model is asked)


def test_a_second_question_on_a_busy_session_is_always_409(
    server: JupyterServer, home: Path
) -> None:
    """Three questions at the same moment on one idle session: one holds it, two are refused
    with 409, never a 200 carrying an error event."""
    with App.open(home) as app:
        session_id = app.new_session("race")
    racers = [Turn(server, {"prompt": f"question {n}", "session_id": session_id})
              for n in range(3)]  # fmt: skip
    statuses = sorted(t.answered() for t in racers)
    assert statuses == [200, 409, 409], [t.text for t in racers]
    refused = [t for t in racers if t.status == 409]
    assert all("already running in this session" in t.text for t in refused)
    later = Turn(server, {"prompt": "and now?", "session_id": session_id})
    assert later.answered() == 409
    (winner,) = [t for t in racers if t.status == 200]
    assert _cancel(server, session_id).status_code == 200
    _ends_cancelled(winner)


def test_turns_beyond_the_limit_get_429_and_stop_from_http(server: JupyterServer) -> None:
    turns = [Turn(server, {"prompt": f"slow question {n}"}) for n in range(3)]
    assert [t.answered() for t in turns] == [200, 200, 200]
    with _client(server) as http:
        refused = http.post("zocrates/chat", json={"prompt": "one too many"})
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "5"
        assert "limits.concurrent_turns" in refused.json()["message"]
        listed = http.get("zocrates/sessions")  # light requests are still answered
        assert listed.status_code == 200
        assert {t.session for t in turns} <= {s["session_id"] for s in listed.json()["sessions"]}
    for turn in turns:
        assert turn.session is not None
        reply = _cancel(server, turn.session)
        assert reply.status_code == 200 and reply.json()["cancelled"] is True
        _ends_cancelled(turn)
        assert _cancel(server, turn.session).status_code == 409  # nothing runs there now
    assert _cancel(server, "no-such-session").status_code == 404
    again = Turn(server, {"prompt": "a slot is free again"})
    assert again.answered() == 200 and again.session is not None
    assert _cancel(server, again.session).status_code == 200
    _ends_cancelled(again)


def test_shutdown_cancels_the_turns_still_running(server: JupyterServer, home: Path) -> None:
    """Last in the module: it stops the server. SIGTERM lets running turns go on for
    limits.shutdown_grace_seconds, then cancels them: saved as cancelled, the server exits."""
    running = Turn(server, {"prompt": "still running at shutdown"})
    assert running.answered() == 200
    assert server.proc is not None
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(60) == 0
    _ends_cancelled(running)
    with App.open(home) as app:
        assert running.session is not None
        (turn,) = app.history(running.session)
        assert (turn.status, turn.error) == ("cancelled", CANCELLED)
