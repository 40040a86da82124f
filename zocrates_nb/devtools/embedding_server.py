"""A loopback OpenAI-compatible `/v1/embeddings` server serving a local model's real vectors.

A real HTTP server (`http.server` in a thread) on 127.0.0.1, standing in for a lab's embedding
box (Ollama, vLLM, text-embeddings-inference) in tests and benchmarks: it embeds with the
packaged sentence-transformers model, so vectors can be compared with local ones. Failure
injection: the next requests can answer a status (5xx, 401…) or hang past a client's timeout;
a key can be required. Every request's texts are recorded.

`vectors="hashed"` serves hashed bag-of-words vectors instead (no model, microseconds a text):
`bench scale` uses it to measure everything but the embedding compute at sizes whose real
embedding would take hours on a CPU; that compute is measured separately, per chunk.
"""

from __future__ import annotations

import json
import re
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from zocrates_nb.index.embedder import Embedder

HASHED_DIMENSION = 384  # the packaged model's, so Chroma's index does the same work per vector


class HashedVectors:
    """Signed feature hashing of a text's words: deterministic, unit length, related texts
    near each other; a stand-in for a model's compute, not for its quality."""

    name = "hashed-384"

    def embed(self, texts: list[str], *, threads: int | None = None) -> list[list[float]]:
        out = np.zeros((len(texts), HASHED_DIMENSION), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = zlib.crc32(word.encode())
                out[row, h % HASHED_DIMENSION] += 1.0 if h & 0x80000000 else -1.0
        norms = np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
        return (out / norms).tolist()


class EmbeddingServer:
    """`with EmbeddingServer() as srv:` then configure `base_url=srv.url`, `model=srv.model`."""

    def __init__(
        self,
        model: str | None = None,
        *,
        api_key: str | None = None,
        vectors: Literal["model", "hashed"] = "model",
    ) -> None:
        self.embedder: Embedder | HashedVectors = (
            HashedVectors() if vectors == "hashed" else Embedder(model, device="cpu")
        )
        self.model = self.embedder.name
        self.api_key = api_key
        self.requests: list[list[str]] = []
        self.failures: list[int | float] = []  # next answers: an HTTP status, or seconds to hang
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> EmbeddingServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _answer(self, body: dict[str, Any], auth: str) -> tuple[int, dict[str, Any]]:
        with self._lock:
            failure = self.failures.pop(0) if self.failures else None
        if isinstance(failure, float):  # the client gave up meanwhile: nothing was served
            time.sleep(failure)
            return 504, {"error": {"message": "injected hang", "code": 504}}
        if isinstance(failure, int):
            return failure, {"error": {"message": "injected failure", "code": failure}}
        if self.api_key is not None and auth != f"Bearer {self.api_key}":
            return 401, {"error": {"message": "invalid api key"}}
        if body.get("model") != self.model:
            return 404, {"error": {"message": f"model {body.get('model')!r} not found"}}
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, {"error": {"message": "input must be a string or a list of strings"}}
        with self._lock:
            self.requests.append(list(texts))
        vectors = self.embedder.embed(texts, threads=1)
        return 200, {
            "object": "list",
            "model": self.model,
            "data": [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ],
            "usage": {"prompt_tokens": 0, "total_tokens": 0},
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out as two writes: without this, Nagle + delayed ACK hold
            # every answer ~40 ms, which a real embedding server does not.
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/embeddings":
                    status, data = 404, {"error": {"message": "not found"}}
                else:
                    try:
                        body = json.loads(raw or b"{}")
                    except json.JSONDecodeError:
                        body = None
                    if not isinstance(body, dict):
                        status, data = 400, {"error": {"message": "body is not a JSON object"}}
                    else:
                        status, data = server._answer(body, self.headers.get("Authorization", ""))
                out = json.dumps(data).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:
                    pass  # the client gave up (a timeout test)

        return Handler
