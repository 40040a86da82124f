"""The HTTP API end to end: a real Jupyter server with the extension, over a real data home
(the built-in sample library, indexed), driven over loopback with Jupyter's token."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import EventSource, ServerSentEvent

from zocrates_nb.events import CheckpointEvent, Event, Final, event_from_json
from zocrates_nb.server.client import RemoteClient, ServerError
from zocrates_nb.server.testing import JupyterServer

FACTUAL = "How does reciprocal rank fusion combine the lexical and dense rankings?"
BROAD = "Compare everything the library says about retrieval, locks, leases and tidy tables"


def _cli(home: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), *args],
        capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("zocrates-home")
    done = _cli(home, "index", "--sample", "--json")
    assert done.returncode == 0, done.stderr
    return home


@pytest.fixture(scope="module")
def server(home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    with JupyterServer(home, tmp_path_factory.mktemp("jupyter")) as running:
        yield running


@pytest.fixture
def client(server: JupyterServer) -> Iterator[RemoteClient]:
    with RemoteClient(server.url, server.token) as c:
        yield c


def _http(server: JupyterServer, token: str | None = "default") -> httpx.Client:
    token = server.token if token == "default" else token
    headers = {"Authorization": f"token {token}"} if token else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=httpx.Timeout(30, read=None))


def _post(server: JupyterServer, path: str, body: Any, **kw: Any) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    with _http(server, **kw) as http:
        return http.post(path, content=content, headers={"Content-Type": "application/json"})


# --- authentication ---------------------------------------------------------------------------
@pytest.mark.parametrize("token", [None, "wrong-token"])
def test_every_endpoint_requires_jupyters_token(server: JupyterServer, token: str | None) -> None:
    with _http(server, token) as http:
        for path in ("zocrates/sessions", "zocrates/sessions/abc", "zocrates/openapi.json"):
            assert http.get(path).status_code == 403, path
        for path, body in (("zocrates/chat", {"prompt": "hi"}),
                           ("zocrates/chat/resume", {"session_id": "a", "interrupt_id": "b",
                                                     "action": "synthesize"})):  # fmt: skip
            assert http.post(path, json=body).status_code == 403, path
    assert _http(server).get("zocrates/openapi.json").json()["openapi"].startswith("3.")


# --- malformed requests -----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "body", "names"),
    [
        ("zocrates/chat", b"{not json", "not valid JSON (line 1, column 2)"),
        ("zocrates/chat", b"\xff\xfe", "not valid JSON"),
        ("zocrates/chat", b"[1, 2]", "object"),
        ("zocrates/chat", {}, "prompt"),
        ("zocrates/chat", {"prompt": 42}, "prompt"),
        ("zocrates/chat", {"prompt": "   "}, "prompt"),
        ("zocrates/chat", {"prompt": "hi", "items": "ABCD1234"}, "items"),
        ("zocrates/chat", {"prompt": "hi", "items": False}, "items: Input should be a valid list"),
        ("zocrates/chat", {"prompt": "hi", "items": [1]}, "items.0"),
        ("zocrates/chat", {"prompt": "hi", "collections": 0}, "collections"),
        ("zocrates/chat", {"prompt": "hi", "collections": ""}, "collections"),
        ("zocrates/chat", {"prompt": "hi", "collections": {}}, "collections"),
        ("zocrates/chat", {"prompt": "hi", "budget": 0}, "budget"),
        ("zocrates/chat", {"prompt": "hi", "colour": "red"}, "colour"),
        ("zocrates/chat", {"prompt": "hi", "model": "gpt-nothing"}, "'gpt-nothing' is not a model"),
        ("zocrates/chat", {"prompt": "hi", "model": ""}, "model"),
        ("zocrates/chat/resume", {"session_id": "s", "interrupt_id": "i"}, "action"),
        ("zocrates/chat/resume",
         {"session_id": "s", "interrupt_id": "i", "action": "dig_deeper"}, "action"),
    ],
)  # fmt: skip
def test_malformed_bodies_are_400_with_a_message_naming_the_problem(
    server: JupyterServer, path: str, body: Any, names: str
) -> None:
    response = _post(server, path, body)
    assert response.status_code == 400, response.text
    assert names in response.json()["message"]
    assert "--" not in response.json()["message"], "the API's own words, no CLI flag"


def test_a_refused_request_never_logs_the_token_of_its_url(server: JupyterServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as http:
        response = http.get(f"zocrates/sessions/no-such-session?token={server.token}")
        assert response.status_code == 404
        bad = _post(server, "zocrates/chat", {"prompt": "hi", "model": "nothing-such"})
        assert bad.status_code == 400
    log = server.log_tail(200_000)
    assert "no-such-session" in log, "the refusal is logged"
    assert server.token not in log and "[secret]" in log


def test_unknown_sessions_are_404(server: JupyterServer) -> None:
    with _http(server) as http:
        assert http.get("zocrates/sessions/no-such-session").status_code == 404
    assert _post(server, "zocrates/chat", {"prompt": "hi", "session_id": "nope"}).status_code == 404
    resume = {"session_id": "nope", "interrupt_id": "x", "action": "synthesize"}
    assert _post(server, "zocrates/chat/resume", resume).status_code == 404


# --- odd input, plain errors, one turn per session ---------------------------------------------
def _messages(response: httpx.Response) -> Iterator[ServerSentEvent]:
    """The stream's messages as any SSE client reads them (keepalive comments left out)."""
    return (m for m in EventSource(response).iter_sse() if m.data)


def _stream(server: JupyterServer, body: bytes) -> tuple[str, list[Event]]:
    with _http(server) as http, http.stream(
        "POST", "zocrates/chat", content=body, headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status_code == 200, response.read()
        events = [event_from_json(json.loads(m.data)) for m in _messages(response)]
        return response.headers["X-Zocrates-Session"], events


def test_a_lone_surrogate_in_a_posted_prompt_is_answered_not_refused(
    server: JupyterServer,
) -> None:
    # What a browser's JSON.stringify sends for a lone surrogate: an escape Python decodes to
    # an unencodable character (and pydantic's own JSON parser rejects).
    body = b'{"prompt": "\\ud800How does reciprocal rank fusion\\u0000 combine the rankings?"}'
    session_id, events = _stream(server, body)
    assert events[-1].type == "final", events[-1]
    (turn,) = http_get(server, f"zocrates/sessions/{session_id}")["turns"]
    assert turn["prompt"] == "\ufffdHow does reciprocal rank fusion  combine the rankings?"


def test_a_question_while_another_process_runs_a_turn_in_the_session_is_409(
    server: JupyterServer, home: Path
) -> None:
    from zocrates_nb.sessions import SessionStore

    store = SessionStore.open(home)
    session_id = store.create_session().id
    running = store.begin_turn(session_id, "A long question")  # this process holds the session
    try:
        refused = _post(server, "zocrates/chat", {"prompt": "hello", "session_id": session_id})
        assert refused.status_code == 409
        message = refused.json()["message"]
        assert message.startswith(
            "A question is already running in this session (in another window or process) "
            f"(pid {os.getpid()} on host "
        ), message
        assert message.endswith("Wait for it to finish or stop it, then ask again.")
    finally:
        store.update_turn(running.turn_id, status="answered", answer="done")
    _, events = _stream(server, json.dumps({"prompt": "hello", "session_id": session_id}).encode())
    assert events[-1].type == "final"  # the turn ended: the session takes questions again
    assert [t.status for t in store.turns(session_id)] == ["answered", "answered"]
    store.close()


class _FailingProvider:
    """An OpenAI-compatible endpoint on loopback that fails every call with a revealing body."""

    BODY = b'{"error": {"message": "upstream exploded at /srv/internal/BODY-SECRET-4711"}}'

    def __enter__(self) -> str:
        import http.server
        import threading

        body = self.BODY

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()


def test_a_provider_error_with_a_body_is_plain_over_http_and_in_the_cli(
    server: JupyterServer, home: Path
) -> None:
    config = home / "zocrates_config.json"
    assert not config.exists()
    with _FailingProvider() as base_url:
        model = {"model": "openai:gpt-4o-mini", "base_url": base_url}  # a keyless endpoint
        config.write_text(json.dumps({"models": {"base": model}}), "utf-8")
        try:
            _, events = _stream(server, json.dumps({"prompt": "Why did it fail?"}).encode())
            local = _cli(home, "ask", "Why did it fail?", "--json")
        finally:
            config.unlink()
    error = events[-1]
    assert error.type == "error"
    assert f"at {base_url} failed with a server error (HTTP 500)" in error.message, error.message
    result = json.loads(local.stdout)
    assert local.returncode == 1 and result["status"] == "error"

    def sentence(message: str) -> str:  # the elapsed time differs between the two runs
        return re.sub(r" \(gave up after [\d.]+ s\)", "", message)

    assert sentence(result["error"]) == sentence(error.message)  # one message, any surface
    for shown in (error.message, local.stdout, local.stderr):
        assert "BODY-SECRET" not in shown and "upstream exploded" not in shown
        assert "Traceback" not in shown and "InternalServerError" not in shown


def test_internal_failures_are_one_plain_sentence() -> None:
    from zocrates_nb.app.describe import describe_error
    from zocrates_nb.server.service import http_error

    boom = RuntimeError("Traceback (most recent call last):\n  File x\nKeyError: 'secret'")
    assert describe_error(boom, doing="The turn") == (
        "The turn failed unexpectedly (an internal error; debug logging shows the details)."
    )
    reply = http_error(boom)
    assert reply.status_code == 500 and reply.log_message == (
        "The request failed unexpectedly (an internal error; debug logging shows the details)."
    )
    odd = ValueError("bad value\n  at line 2 of the internals")
    assert describe_error(odd) == "bad value"


# --- streaming --------------------------------------------------------------------------------
def test_chat_streams_typed_events_as_they_happen(server: JupyterServer) -> None:
    arrivals: list[tuple[float, str, Event]] = []
    with _http(server) as http, http.stream(
        "POST", "zocrates/chat", json={"prompt": FACTUAL}
    ) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        session_id = response.headers["X-Zocrates-Session"]
        for message in _messages(response):
            event = event_from_json(json.loads(message.data))
            arrivals.append((time.monotonic(), message.event, event))
            if len(arrivals) == 1:
                # The turn is still running while its first event is already here.
                turns = http.get(f"zocrates/sessions/{session_id}").json()["turns"]
                assert [t["status"] for t in turns] == ["running"]
    names = [name for _, name, _ in arrivals]
    assert names[-1] == "final" and names.count("final") == 1, names
    assert "step" in names
    assert {e.session_id for _, _, e in arrivals} == {session_id}
    final = arrivals[-1][2]
    assert isinstance(final, Final)
    assert any("Hybrid Retrieval" in s.title for s in final.cited_sources)
    assert arrivals[-1][0] - arrivals[0][0] > 0.05  # spread over time, not one burst

    detail = http_get(server, f"zocrates/sessions/{session_id}")
    (turn,) = detail["turns"]
    assert turn["status"] == "answered" and turn["answer"] == final.answer
    assert turn["prompt"] == FACTUAL and detail["pending_checkpoint"] is None
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    listed = {s["session_id"]: s for s in http_get(server, "zocrates/sessions")["sessions"]}
    assert listed[session_id]["turns"] == 1 and listed[session_id]["pending_checkpoint"] is None


def http_get(server: JupyterServer, path: str) -> Any:
    with _http(server) as http:
        response = http.get(path)
        assert response.status_code == 200, response.text
        return response.json()


def test_a_client_that_leaves_mid_stream_loses_nothing(server: JupyterServer) -> None:
    with _http(server) as http, http.stream(
        "POST", "zocrates/chat", json={"prompt": FACTUAL}
    ) as response:
        session_id = response.headers["X-Zocrates-Session"]
        first = next(_messages(response))
        assert first.event != "final"
    # Connection closed after one event: the turn goes on and is saved.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        (turn,) = http_get(server, f"zocrates/sessions/{session_id}")["turns"]
        if turn["status"] != "running":
            break
        time.sleep(0.5)
    assert turn["status"] == "answered", turn
    assert turn["answer"] and turn["cited_sources"]
    assert f"client left; session {session_id} completes" in server.log_tail(100_000)


# --- checkpoints ------------------------------------------------------------------------------
def _events(stream: AsyncIterator[Event]) -> list[Event]:
    async def collect() -> list[Event]:
        return [event async for event in stream]

    return asyncio.run(collect())


def test_checkpoint_conflict_and_resume_after_a_server_restart(
    server: JupyterServer, client: RemoteClient
) -> None:
    events = _events(client.ask(BROAD, budget=1))
    checkpoint = events[-1]
    assert isinstance(checkpoint, CheckpointEvent), events[-1]
    session_id = checkpoint.session_id
    assert client.last_session_id == session_id

    # The stored turn is the record the HTTP API serves, its card the event that was streamed.
    detail = client.detail(session_id)
    assert detail.pending_checkpoint == checkpoint
    (paused,) = detail.turns
    assert paused.status == "checkpoint" and paused.evidence and paused.tool_calls == 1
    assert client.turn(paused.turn_id, session_id=session_id) == paused
    listed = {s.session_id: s for s in client.sessions()}
    assert listed[session_id].pending_checkpoint == checkpoint.interrupt_id

    with pytest.raises(ServerError) as conflict:
        _events(client.ask("And another question?", session_id=session_id))
    assert conflict.value.status == 409
    wrong = {"session_id": session_id, "interrupt_id": "not-it", "action": "synthesize"}
    response = _post(server, "zocrates/chat/resume", wrong)
    assert response.status_code == 400 and "interrupt_id" in response.json()["message"]

    server.restart()  # a new process: the checkpoint lives in sessions.db only
    with RemoteClient(server.url, server.token) as fresh:
        assert fresh.session(session_id).pending_checkpoint == checkpoint.interrupt_id
        resumed = _events(fresh.resume(session_id, None, "synthesize"))
        final = resumed[-1]
        assert isinstance(final, Final), resumed[-1]
        assert final.cited_sources or final.other_sources
        detail = fresh.detail(session_id)
        assert detail.pending_checkpoint is None
        assert [t.status for t in detail.turns] == ["answered"]
        assert detail.turns[0].evidence == final.evidence
        with pytest.raises(ServerError) as nothing:
            _events(fresh.resume(session_id, checkpoint.interrupt_id, "synthesize"))
        assert nothing.value.status == 409


# --- remote CLI and the shared session store -----------------------------------------------
def test_remote_cli_matches_local_ask_and_both_share_one_session_store(
    server: JupyterServer, home: Path
) -> None:
    remote_run = _cli(home, "ask", FACTUAL, "--server", server.url, "--token", server.token,
                      "--json")  # fmt: skip
    assert remote_run.returncode == 0, remote_run.stderr
    local_run = _cli(home, "ask", FACTUAL, "--json")  # the same library, no server
    assert local_run.returncode == 0, local_run.stderr
    remote, local = json.loads(remote_run.stdout), json.loads(local_run.stdout)

    assert set(remote) == set(local)
    assert remote["status"] == local["status"] == "answered" and remote["checkpoint"] is None
    assert remote["cited_sources"] == local["cited_sources"]
    assert any("Hybrid Retrieval" in s["title"] for s in remote["cited_sources"])
    assert remote["evidence"] and [set(e) for e in remote["evidence"]] == [
        set(e) for e in local["evidence"]
    ]
    assert [e["chunk_id"] for e in remote["evidence"]] == [e["chunk_id"] for e in local["evidence"]]

    # One store: the local session is served over HTTP, the HTTP one is listed locally.
    detail = http_get(server, f"zocrates/sessions/{local['session_id']}")
    assert detail["turns"][0]["answer"] == local["answer"]
    listed = _cli(home, "sessions", "--json")
    assert remote["session_id"] in {r["session_id"] for r in json.loads(listed.stdout)}


def test_remote_cli_checkpoint_then_resume(server: JupyterServer, home: Path) -> None:
    remote = ["--server", server.url, "--token", server.token, "--json"]
    paused = _cli(home, "ask", BROAD, "--budget", "1", *remote)
    assert paused.returncode == 0, paused.stderr
    checkpoint = json.loads(paused.stdout)
    assert checkpoint["status"] == "checkpoint"
    assert checkpoint["checkpoint"]["interrupt_id"] and checkpoint["answer"] == ""

    refused = _cli(home, "ask", "Another question", "--session", checkpoint["session_id"],
                   *remote)  # fmt: skip
    assert refused.returncode == 2 and "pending checkpoint" in refused.stderr

    done = _cli(home, "resume", "--session", checkpoint["session_id"], "--action", "synthesize",
                *remote)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answered = json.loads(done.stdout)
    assert answered["status"] == "answered" and answered["session_id"] == checkpoint["session_id"]
    assert answered["answer"] and answered["evidence"]

    wrong_token = _cli(home, "sessions", "--server", server.url, "--token", "not-the-token")
    assert wrong_token.returncode == 2 and "Jupyter token" in wrong_token.stderr


def test_batch_questions_run_alike_locally_and_over_http(
    server: JupyterServer, home: Path, tmp_path: Path
) -> None:
    """`ask --questions FILE --json`: one line per question, each in a fresh session, ids kept;
    a bad line stops the run naming its line number."""
    batch = tmp_path / "questions.jsonl"
    batch.write_text(
        json.dumps({"id": "rrf", "question": FACTUAL}) + "\n\n"
        + json.dumps({"question": "What is a fencing token?", "scope": {"collections": []}})
        + "\n",
        "utf-8",
    )
    remote = ["--server", server.url, "--token", server.token]
    runs = {where: _cli(home, "ask", "--questions", str(batch), "--json", "--no-hitl", *extra)
            for where, extra in (("local", []), ("remote", remote))}  # fmt: skip
    for where, run in runs.items():
        assert run.returncode == 0, (where, run.stderr)
        lines = [json.loads(line) for line in run.stdout.splitlines()]
        assert [line["id"] for line in lines] == ["rrf", 3], where  # a blank line still counts
        assert all(line["status"] == "answered" for line in lines), where
        assert len({line["session_id"] for line in lines}) == 2, where
        assert "Hybrid Retrieval" in lines[0]["cited_sources"][0]["title"], where
    local, remote_lines = (runs[w].stdout.splitlines() for w in ("local", "remote"))
    assert [json.loads(x)["cited_sources"] for x in local] == [
        json.loads(x)["cited_sources"] for x in remote_lines]

    # --session S: every question a turn of S, over HTTP too.
    session = json.loads(runs["local"].stdout.splitlines()[0])["session_id"]
    into = _cli(home, "ask", "--questions", str(batch), "--json", "--no-hitl", "--session",
                session, *remote)  # fmt: skip
    assert into.returncode == 0, into.stderr
    assert {json.loads(x)["session_id"] for x in into.stdout.splitlines()} == {session}

    batch.write_text(json.dumps({"question": FACTUAL}) + "\n{not json\n", "utf-8")
    bad = _cli(home, "ask", "--questions", str(batch), "--json", "--no-hitl")
    # The bad line gets its own error line and the batch goes on; the exit status says so.
    answered, failed = (json.loads(x) for x in bad.stdout.splitlines())
    assert bad.returncode == 1 and answered["status"] == "answered"
    assert failed["error"] == f"{batch.name}:2: not valid JSON (column 2)"


def test_remote_chat_scopes_answers_and_lists_sessions(server: JupyterServer, home: Path) -> None:
    """`chat --server`: slash commands set the scope, a question is answered over HTTP, and the
    new session is listed."""
    script = "\n".join([
        "/items NOSUCHKEY", "/collection Reading list", "/library", FACTUAL, "/sessions", "/quit",
    ]) + "\n"  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(home), "chat", "--no-hitl",
         "--server", server.url, "--token", server.token],
        input=script, capture_output=True, text=True, timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "scope: items NOSUCHKEY" in out and "scope: collection Reading list" in out
    assert "scope: the whole library" in out
    assert "Hybrid Retrieval for Research Libraries" in out  # answered from the whole library
    session = re.search(r"session ([0-9a-f]{32})\]", out)
    assert session is not None and f"  {session.group(1)}  " in out  # listed by /sessions


# --- schema -----------------------------------------------------------------------------------
def test_schemathesis_finds_no_server_errors_or_schema_violations(
    server: JupyterServer, tmp_path: Path
) -> None:
    """Fuzz the cheap endpoints broadly and the turn endpoints with invalid bodies only (every
    one must be a 4xx, never a 500 or a started turn)."""
    schemathesis = Path(sys.executable).with_name("schemathesis")
    common = [
        str(schemathesis), "run", server.url + "zocrates/openapi.json",
        "-H", f"Authorization: token {server.token}", "--seed", "7", "-w", "1",
        "--phases", "examples,coverage,fuzzing", "--warnings", "off",
    ]  # fmt: skip
    checks = "not_a_server_error,status_code_conformance,content_type_conformance,"
    checks += "response_schema_conformance"
    runs = [
        [*common, "--include-method", "GET", "-n", "20", "--checks", checks],
        [*common, "--include-method", "POST", "--mode", "negative", "-n", "20",
         "--checks", checks + ",negative_data_rejection"],
    ]  # fmt: skip
    for args in runs:
        done = subprocess.run(args, capture_output=True, text=True, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
