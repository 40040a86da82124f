"""A loopback HTTP server replaying the recorded scholarly-API responses in
`../shared/corpus/online-fixtures` (read from there, never copied into the repo).

Each API lives under its own prefix (`/arxiv`, `/crossref`, `/s2`, `/openalex`), so a test
points `online.<source>.base_url` at `<server>/<prefix>` plus the API's own path root. A request
is answered with the recording whose path and query match exactly; any other search gets that
API's recorded search body (a realistic answer to any query). Tests can queue injected replies
(429 with Retry-After, 5xx, malformed bodies, a stall past the client's timeout) per prefix.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

PREFIXES = {  # our prefix → (manifest API name, recorded URL root)
    "arxiv": ("arXiv", "https://export.arxiv.org/api"),
    "crossref": ("Crossref", "https://api.crossref.org"),
    "s2": ("Semantic Scholar", "https://api.semanticscholar.org/graph/v1"),
    "openalex": ("OpenAlex", "https://api.openalex.org"),
}
FALLBACK = {  # any other search on that API → this recorded search body
    ("arxiv", "/query"): "arxiv/arxiv_query_search_query-testing_start0_max10.xml",
    ("crossref", "/works"):
        "crossref/crossref_works_query-ecology_query.author-carl-boettiger.json",
    ("s2", "/paper/search"):
        "semanticscholar/s2_paper_search_query-turing_fields-title_offset0_limit100.json",
    ("openalex", "/works"):
        "openalex/openalex_works_search_machine-learning-AND-public-health_page1_per-page200.json",
}  # fmt: skip
_TYPES = {".json": "application/json", ".xml": "application/atom+xml; charset=utf-8",
          ".txt": "text/plain", ".html": "text/html; charset=utf-8"}  # fmt: skip
IGNORED_PARAMS = {"api_key", "mailto"}


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    stall: float = 0.0  # seconds to wait before answering (a timeout test)


@dataclass
class Recorded:
    path: str
    query: dict[str, list[str]]
    file: str
    status: int
    content_type: str


def _query(q: str) -> dict[str, list[str]]:
    return {k: v for k, v in parse_qs(q, keep_blank_values=True).items() if k not in IGNORED_PARAMS}


class FixtureServer:
    """`with FixtureServer(root) as srv:` … `srv.url("arxiv")`; `srv.requests` logs each call."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.recorded: dict[str, list[Recorded]] = defaultdict(list)
        for e in json.loads((root / "manifest.json").read_text("utf-8")):
            for prefix, (api, base) in PREFIXES.items():
                url = e["request"]["url"]
                if e["api"] == api and url.startswith(base) and e["request"]["method"] == "GET":
                    parts = urlsplit(url[len(base) :])
                    ctype = (e.get("response_headers") or {}).get("content-type")
                    ctype = ctype or _TYPES.get(Path(e["file"]).suffix, "application/octet-stream")
                    self.recorded[prefix].append(
                        Recorded(parts.path, _query(parts.query), e["file"], e["status"], ctype)
                    )
        self.injected: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[tuple[str, str, dict[str, str]]] = []  # (prefix, path?query, headers)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FixtureServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def url(self, prefix: str) -> str:
        """The base_url to configure for that API (prefix + the API's own root path)."""
        root = urlsplit(PREFIXES[prefix][1]).path
        return f"{self.base}/{prefix}{root}"

    def online_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "enabled": True,
            "timeout": 5.0,
            # No polite pause against this loopback server (tests/test_online_pacing.py
            # checks the pace itself).
            "arxiv": {"base_url": self.url("arxiv"), "min_interval": 0},
            "crossref": {"base_url": self.url("crossref"), "min_interval": 0},
            "semantic_scholar": {"base_url": self.url("s2"), "min_interval": 0},
            "openalex": {"base_url": self.url("openalex"), "min_interval": 0},
            **extra,
        }

    def inject(self, prefix: str, *replies: Reply) -> None:
        with self._lock:
            self.injected[prefix].extend(replies)

    def answer(self, prefix: str, path: str, query: str) -> Reply:
        with self._lock:
            if self.injected[prefix]:
                return self.injected[prefix].popleft()
        root = urlsplit(PREFIXES[prefix][1]).path
        path = path[len(root) :] if path.startswith(root) else path
        wanted = _query(query)
        for rec in self.recorded[prefix]:
            if rec.path == path and rec.query == wanted:
                return self._file(rec.file, rec.status, rec.content_type)
        if (fallback := FALLBACK.get((prefix, path))) is not None:
            return self._file(fallback, 200, _TYPES[Path(fallback).suffix])
        return Reply(404, b'{"error": "not recorded"}', {"content-type": "application/json"})

    def _file(self, name: str, status: int, ctype: str) -> Reply:
        return Reply(status, (self.root / name).read_bytes(), {"content-type": ctype})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                prefix, _, rest = parts.path.lstrip("/").partition("/")
                if prefix not in PREFIXES:
                    self.send_error(404)
                    return
                with server._lock:
                    server.requests.append((prefix, f"/{rest}?{parts.query}", dict(self.headers)))
                reply = server.answer(prefix, "/" + rest, parts.query)
                if reply.stall:
                    time.sleep(reply.stall)
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args: object) -> None:
                pass

        return Handler
