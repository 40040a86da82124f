"""A real Jupyter server with this extension, in a subprocess: for tests and demos.

Everything Jupyter reads or writes (config, data, runtime dirs) lives under `root`, so the run
touches nothing of the user's; the data home is passed as `ZOCRATES_HOME`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO, Any


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class JupyterServer:
    """`with JupyterServer(home, root) as server:` starts `jupyter server` on loopback with a
    token and waits for `/api/status`; `restart()` stops it and starts a fresh process."""

    def __init__(
        self,
        home: Path,
        root: Path,
        *,
        token: str = "zocrates-test-token",
        enable_explicitly: bool = True,
        env: dict[str, str] | None = None,
        startup_timeout: float = 120.0,
    ) -> None:
        self.home, self.root, self.token = home, root, token
        self.enable_explicitly = enable_explicitly
        self.extra_env = env or {}
        self.startup_timeout = startup_timeout
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = root / "jupyter-server.log"
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
            path = self.root / name.lower()
            path.mkdir(parents=True, exist_ok=True)
            env[name] = str(path)
        env.update(ZOCRATES_HOME=str(self.home), HF_HUB_OFFLINE="1", **self.extra_env)
        env.pop("JUPYTER_TOKEN", None)
        return env

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "jupyter_server",
            f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.root}", "--allow-root", "--no-browser",
        ]  # fmt: skip
        if self.enable_explicitly:
            cmd.append("--ServerApp.jpserver_extensions=zocrates_nb.server=True")
        return cmd

    def start(self) -> JupyterServer:
        self.port = free_port()
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            self.command(), env=self.env(), stdout=self._log, stderr=subprocess.STDOUT,
            cwd=self.root,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter server exited: {self.log_tail()}")
            try:
                self.get_json("api/status")
                return self
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"jupyter server did not start: {self.log_tail()}")

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM (Jupyter's clean shutdown: running turns finish), then SIGKILL."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def kill(self) -> None:
        """An abrupt end (SIGKILL): nothing gets a chance to clean up."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        self.stop()

    def restart(self) -> JupyterServer:
        self.stop()
        return self.start()

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")[-chars:]
        except OSError:
            return ""

    def get_json(self, path: str) -> Any:
        req = urllib.request.Request(
            self.url + path, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.load(resp)

    def __enter__(self) -> JupyterServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
