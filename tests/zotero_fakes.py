"""Loopback fakes of Zotero's write endpoints, written from the protocol notes in
`../shared/corpus/online-fixtures/` (CONNECTOR.md, ZOTERO_WEB_API.md). They record what would be
saved so tests assert the exact items and fields."""

from __future__ import annotations

import json
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


class _Server:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # {"method", "path", "headers", "body"}
        self.injected: deque[tuple[int, dict[str, str], bytes]] = deque()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def _any(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:  # not JSON (or not text): a PDF upload, say
                    body = raw
                req = {"method": self.command, "path": self.path, "headers": dict(self.headers),
                       "body": body}  # fmt: skip
                with outer._lock:
                    outer.requests.append(req)
                    injected = outer.injected.popleft() if outer.injected else None
                status, headers, out = injected or outer.handle(req)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_PATCH = _any

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def handle(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        raise NotImplementedError

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeConnector(_Server):
    """Zotero desktop's connector server (CONNECTOR.md §1–4) with a selected collection."""

    def __init__(self, *, collection: str | None = "Distributed systems",
                 editable: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.collection = collection
        self.editable = editable
        self.saved: list[dict[str, Any]] = []  # the items of every accepted saveItems
        self.sessions: set[str] = set()
        self.files_editable = True
        # Item ids Zotero's resolvers find a PDF for (CONNECTOR.md §5b); what they attached.
        self.resolvable: set[str] = set()
        self.attached: list[str] = []

    def handle(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        zh = {"X-Zotero-Version": "7.0.32", "X-Zotero-Connector-API-Version": "3"}
        js = {**zh, "Content-Type": "application/json"}
        h = {k.lower(): v for k, v in req["headers"].items()}
        if "origin" in h or h.get("user-agent", "").startswith("Mozilla/"):
            return 403, {**zh, "Content-Type": "text/plain"}, b"Request not allowed\n"
        if req["method"] != "POST":
            return 400, zh, b"Endpoint does not support method\n"
        if req["path"] in ("/connector/hasAttachmentResolvers",
                           "/connector/saveAttachmentFromResolver"):  # fmt: skip
            body = req["body"]
            if body.get("sessionID") not in self.sessions:
                return 400, js, b'{"error":"SESSION_NOT_FOUND"}'
            found = body.get("itemID") in self.resolvable
            if req["path"].endswith("hasAttachmentResolvers"):
                return 200, js, b"true" if found else b"false"
            if not found:
                return 500, {**zh, "Content-Type": "text/plain"}, b"Failed to save an attachment"
            self.attached.append(body["itemID"])
            return 201, {**zh, "Content-Type": "text/plain"}, b"Full Text PDF"
        if req["path"] == "/connector/ping":
            return 200, js, json.dumps({"prefs": {"supportsAttachmentUpload": True}}).encode()
        if req["path"] == "/connector/getSelectedCollection":
            return 200, js, json.dumps({
                "libraryID": 1, "libraryName": "My Library", "libraryEditable": self.editable,
                "filesEditable": self.files_editable, "editable": self.editable,
                "id": 12 if self.collection else None, "name": self.collection or "My Library",
                "targets": [], "tags": {},
            }).encode()  # fmt: skip
        if req["path"] == "/connector/saveItems":
            body = req["body"]
            sid = body.get("sessionID")
            if sid in self.sessions:
                return 409, js, b'{"error":"SESSION_EXISTS"}'
            if not self.editable:
                return 500, js, b'{"libraryEditable":false}'
            for item in body["items"]:
                if item.get("itemType") not in ("journalArticle", "preprint", "book", "note"):
                    return 500, js, b""
            self.sessions.add(sid)
            self.saved.extend(body["items"])
            return 201, js, b""
        return 404, {**zh, "Content-Type": "text/plain"}, b"No endpoint found\n"


class FakeWebAPI(_Server):
    """api.zotero.org's item writes (ZOTERO_WEB_API.md §2): a v3 write report per POST; with
    `recorded` (the online-fixtures' zotero/ folder) also the recorded item X42A7DEE and
    /itemFields for reads, and PATCH guarded by If-Unmodified-Since-Version (§4)."""

    def __init__(self, library: str = "/users/475425", recorded: Path | None = None) -> None:
        super().__init__()
        self.library = library
        self.recorded = recorded
        self.created: list[dict[str, Any]] = []
        self.patched: dict[str, dict[str, Any]] = {}
        self.tokens: set[str] = set()

    def _read(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes] | None:
        js = {"Content-Type": "application/json", "Last-Modified-Version": "1"}
        path = req["path"].split("?")[0]
        if self.recorded is None:
            return None
        if req["method"] == "GET" and path == "/itemFields":
            return 200, js, (self.recorded / "zotero_webapi_GET_itemFields.json").read_bytes()
        item = json.loads((self.recorded / "zotero_webapi_GET_item_single.json").read_text())
        if path == f"{self.library}/items/{item['key']}":
            if req["method"] == "GET":
                return 200, js, json.dumps(item).encode()
            if req["method"] == "PATCH":
                h = {k.lower(): v for k, v in req["headers"].items()}
                if h.get("if-unmodified-since-version") != str(item["version"]):
                    return 412, {"Content-Type": "text/plain"}, b"Item has been modified"
                self.patched[item["key"]] = req["body"]
                return 204, {"Last-Modified-Version": "2"}, b""
        if path.startswith(f"{self.library}/items/") and req["method"] == "GET":
            return 404, {"Content-Type": "text/plain"}, b"Not found"
        return None

    def handle(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if (read := self._read(req)) is not None:
            return read
        js = {"Content-Type": "application/json", "Last-Modified-Version": "100"}
        if req["method"] == "POST" and req["path"] == f"{self.library}/items":
            h = {k.lower(): v for k, v in req["headers"].items()}
            if h.get("authorization") != "Bearer test-zotero-key":
                return 403, {"Content-Type": "text/plain"}, b"Forbidden"
            token = h.get("zotero-write-token", "")
            if token in self.tokens:
                return 412, {"Content-Type": "text/plain"}, b"Write token already used"
            report: dict[str, Any] = {"successful": {}, "success": {}, "unchanged": {},
                                      "failed": {}}  # fmt: skip
            for i, item in enumerate(req["body"]):
                if item.get("itemType") != "note" and not item.get("title"):
                    report["failed"][str(i)] = {"code": 400, "message": "Title is required"}
                    continue
                key = "".join(KEY_CHARS[(len(self.created) * 7 + j) % len(KEY_CHARS)]
                              for j in range(8))  # fmt: skip
                self.created.append({"key": key, **item})
                report["successful"][str(i)] = {"key": key, "version": 100, "data": item}
                report["success"][str(i)] = key
            self.tokens.add(token)
            return 200, js, json.dumps(report).encode()
        return 404, {"Content-Type": "text/plain"}, b"Not found"
