"""Loopback fakes of Zotero's write endpoints, written from the protocol notes in
`../shared/corpus/online-fixtures/` (CONNECTOR.md, ZOTERO_WEB_API.md). They record what would be
saved so tests assert the exact items and fields."""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"


class _Server:
    inject_methods: tuple[str, ...] | None = None  # the requests `injected` answers (None: all)
    lose_paths: tuple[str, ...] | None = None  # the requests whose answer `lose` loses
    inject_paths: tuple[str, ...] | None = None  # the paths `injected` answers (None: all)

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []  # {"method", "path", "headers", "body"}
        self.injected: deque[tuple[int, dict[str, str], bytes]] = deque()
        # Requests that are carried out but whose answer is lost: the connection closes after
        # this many seconds (0: at once) without a response (a timeout, a dropped link).
        self.lose: deque[float] = deque()
        self.fail_after = 0  # requests (of inject_methods) served normally before the faults
        self.post_delay = 0.0  # seconds each POST takes before it is carried out (a slow Zotero)
        # Headers added to the next answer only (Zotero's `Backoff` may come with any answer).
        self.extra_headers: dict[str, str] = {}
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
                       "body": body, "at": time.monotonic()}  # fmt: skip
                if self.command == "POST" and outer.post_delay:
                    time.sleep(outer.post_delay)  # outside the lock: requests overlap
                with outer._lock:
                    outer.requests.append(req)
                    faults = outer.inject_methods is None or self.command in outer.inject_methods
                    if outer.inject_paths is not None:
                        faults = faults and req["path"].split("?")[0] in outer.inject_paths
                    if faults and outer.fail_after > 0:  # let this one through untouched
                        outer.fail_after -= 1
                        faults = False
                    injected = outer.injected.popleft() if faults and outer.injected else None
                    answer = injected or outer.handle(req)
                    if outer.extra_headers and faults:
                        answer = (answer[0], {**answer[1], **outer.extra_headers}, answer[2])
                        outer.extra_headers = {}
                    losable = outer.lose_paths is None or req["path"] in outer.lose_paths
                    lose = (outer.lose.popleft() if faults and losable and outer.lose
                            else None)  # fmt: skip
                if lose is not None:  # done, but the answer never arrives
                    time.sleep(lose)
                    self.close_connection = True
                    return
                status, headers, out = answer
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


ITEM_TYPES = ("journalArticle", "preprint", "book", "bookSection", "conferencePaper", "thesis",
              "report", "note")  # fmt: skip


class FakeConnector(_Server):
    """Zotero desktop's connector server (CONNECTOR.md §1–6) with a selected collection, the
    targets getSelectedCollection lists (`collections`: tree id → (name, level)), and
    updateSession moving a session's items and giving them manual tags. `lose` loses the
    answers of saveItems."""

    lose_paths = ("/connector/saveItems",)

    def __init__(self, *, collection: str | None = "Distributed systems",
                 editable: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.collection = collection
        self.editable = editable
        self.saved: list[dict[str, Any]] = []  # the items of every accepted saveItems
        self.sessions: set[str] = set()
        self.collections = {"C12": ("Distributed systems", 1), "C13": ("Reading", 1),
                            "C14": ("To read", 2), "C19": ("Later", 2), "C15": ("To read", 1),
                            "C16": ("Archive", 1), "C17": ("Later", 2)}  # tree order
        self.session_items: dict[str, list[str]] = {}  # sessionID → its items' ids
        self.placed: dict[str, str] = {}  # item id → the tree id it ended in
        self.tags: dict[str, list[str]] = {}  # item id → manual tags from updateSession
        self.local_api = False  # Zotero's local API (off by default, CONNECTOR.md §8)
        self.files_editable = True
        # Item ids Zotero's resolvers find a PDF for (CONNECTOR.md §5b); what they attached.
        self.resolvable: set[str] = set()
        self.attached: list[str] = []

    @property
    def connector_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["path"].startswith("/connector/")]

    def _local(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """`GET /api/users/0/items?q=…&qmode=…`: what was saved here, matched as the local API
        does (titles and creators; every field with qmode=everything)."""
        zh = {"X-Zotero-Version": "7.0.32", "Content-Type": "text/plain"}
        if not self.local_api:
            return 403, zh, b"Local API is not enabled"
        path, _, query = req["path"].partition("?")
        if req["method"] != "GET" or path != "/api/users/0/items":
            return 404, zh, b"Not found"
        q = parse_qs(query)
        text = (q.get("q") or [""])[0].lower()
        everything = (q.get("qmode") or [""])[0] == "everything"

        def haystack(i: dict[str, Any]) -> str:
            return json.dumps(i, ensure_ascii=False) if everything else str(i.get("title", ""))

        found = [i for i in self.saved
                 if i.get("itemType") != "note" and text in haystack(i).lower()]
        body = [{"key": f"LOCAL{n:03d}", "data": {k: v for k, v in i.items() if k != "id"}}
                for n, i in enumerate(found)]  # fmt: skip
        return 200, {**zh, "Content-Type": "application/json"}, json.dumps(body).encode()

    def handle(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        zh = {"X-Zotero-Version": "7.0.32", "X-Zotero-Connector-API-Version": "3"}
        js = {**zh, "Content-Type": "application/json"}
        h = {k.lower(): v for k, v in req["headers"].items()}
        if req["path"].startswith("/api/"):
            return self._local(req)
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
            targets = [{"id": "L1", "name": "My Library", "filesEditable": True, "level": 0}] + [
                {"id": i, "name": n, "filesEditable": True, "level": lv}
                for i, (n, lv) in self.collections.items()]  # fmt: skip
            return 200, js, json.dumps({
                "libraryID": 1, "libraryName": "My Library", "libraryEditable": self.editable,
                "filesEditable": self.files_editable, "editable": self.editable,
                "id": 12 if self.collection else None, "name": self.collection or "My Library",
                "targets": targets if self.editable else [], "tags": {},
            }).encode()  # fmt: skip
        if req["path"] == "/connector/saveItems":
            body = req["body"]
            sid = body.get("sessionID")
            if sid in self.sessions:
                return 409, js, b'{"error":"SESSION_EXISTS"}'
            if not self.editable:
                return 500, js, b'{"libraryEditable":false}'
            for item in body["items"]:
                if item.get("itemType") not in ITEM_TYPES:
                    return 500, js, b""
            self.sessions.add(sid)
            self.saved.extend(body["items"])
            self.session_items[sid] = [i.get("id", "") for i in body["items"]]
            for i in body["items"]:
                self.placed[i.get("id", "")] = "C12" if self.collection else "L1"
            return 201, js, b""
        if req["path"] == "/connector/updateSession":
            body = req["body"]
            if not body.get("sessionID"):
                return 400, js, b'{"error":"SESSION_ID_NOT_PROVIDED"}'
            if body["sessionID"] not in self.sessions:
                return 400, js, b'{"error":"SESSION_NOT_FOUND"}'
            target = str(body.get("target", ""))
            if target.startswith("C") and target not in self.collections:
                return 400, js, b'{"error":"COLLECTION_NOT_FOUND"}'
            tags = body.get("tags")
            tags = tags.split(",") if isinstance(tags, str) else tags
            for i in self.session_items[body["sessionID"]]:
                self.placed[i] = target
                if tags is not None:
                    self.tags[i] = [t.strip() for t in tags]
            return 200, js, b"{}"
        return 404, {**zh, "Content-Type": "text/plain"}, b"No endpoint found\n"


class FakeWebAPI(_Server):
    """api.zotero.org's item writes (ZOTERO_WEB_API.md §2): a v3 write report per POST; with
    `recorded` (the online-fixtures' zotero/ folder) also the recorded item X42A7DEE and
    /itemFields for reads, and PATCH guarded by If-Unmodified-Since-Version (§4). Items
    created here are listed by GET items (`since`, `q`/`qmode`, paging); `injected` replies
    answer POSTs only (the reads around a write go on)."""

    inject_methods = ("POST",)

    def __init__(self, library: str = "/users/475425", recorded: Path | None = None,
                 attachments: dict[str, str] | None = None) -> None:  # fmt: skip
        super().__init__()
        self.library = library
        # The library's attachments (key → content type): the parents annotations may have.
        self.attachments = dict(attachments or {})
        self.recorded = recorded
        self.created: list[dict[str, Any]] = []
        self.patched: dict[str, dict[str, Any]] = {}
        self.tokens: set[str] = set()
        self.version = 100  # the library's version: each accepted write raises it
        self.next_key = 0
        self.held: dict[str, dict[str, Any]] = {}  # items the library holds already, by key
        self.group_name = "Lab"  # what GET /groups/<id> names a group library

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
        created = {i["key"] for i in self.created}
        if (path.startswith(f"{self.library}/items/") and req["method"] == "GET"
                and path.rsplit("/", 1)[1] not in created):  # fmt: skip
            return 404, {"Content-Type": "text/plain"}, b"Not found"
        return None

    def handle(self, req: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        if (read := self._read(req)) is not None:
            return read
        js = {"Content-Type": "application/json", "Last-Modified-Version": str(self.version)}
        h = {k.lower(): v for k, v in req["headers"].items()}
        if h.get("authorization") != "Bearer test-zotero-key":
            return 403, {"Content-Type": "text/plain"}, b"Forbidden"
        path, _, query = req["path"].partition("?")
        if req["method"] == "GET" and path == f"{self.library}/items":
            return self._list(parse_qs(query), js)
        if req["method"] == "GET" and path.startswith(f"{self.library}/items/"):
            key = path.rsplit("/", 1)[1]
            made = {i["key"]: i for i in self.created}
            if key in made:
                item = made[key]
                version = item.get("version", self.version)
                return 200, js, json.dumps({"key": key, "version": version,
                                            "data": {"key": key, **item}}).encode()  # fmt: skip
            if (data := self.held.get(key)) is None:
                return 404, {"Content-Type": "text/plain"}, b"Not found"
            return 200, js, json.dumps({"key": key, "version": self.version,
                                        "data": {"key": key, **data}}).encode()  # fmt: skip
        if req["method"] == "GET" and self.library.startswith("/groups/") and (
                path == self.library):  # fmt: skip
            group = {"id": int(self.library.rsplit("/", 1)[1]), "data": {"name": self.group_name}}
            return 200, js, json.dumps(group).encode()
        if req["method"] == "POST" and path == f"{self.library}/items":
            token = h.get("zotero-write-token", "")
            if token in self.tokens:
                return 412, {"Content-Type": "text/plain"}, b"Write token already used"
            if len(req["body"]) > 50:
                too_many = b"Cannot add more than 50 items at a time"
                return 413, {"Content-Type": "text/plain"}, too_many
            report: dict[str, Any] = {"successful": {}, "success": {}, "unchanged": {},
                                      "failed": {}}  # fmt: skip
            self.version += 1
            for i, item in enumerate(req["body"]):
                if item.get("itemType") == "annotation" and (why := self._annotation(item)):
                    report["failed"][str(i)] = why
                    continue
                if item.get("itemType") not in ("note", "annotation") and not item.get("title"):
                    report["failed"][str(i)] = {"code": 400, "message": "Title is required"}
                    continue
                n = self.next_key = self.next_key + 1
                key = "".join(KEY_CHARS[(n // len(KEY_CHARS) ** j) % len(KEY_CHARS)]
                              for j in range(8))  # fmt: skip
                self.created.append({"key": key, "version": self.version, **item})
                report["successful"][str(i)] = {"key": key, "version": self.version,
                                                "data": {"key": key, **item}}  # fmt: skip
                report["success"][str(i)] = key
            self.tokens.add(token)
            js["Last-Modified-Version"] = str(self.version)
            return 200, js, json.dumps(report).encode()
        return 404, {"Content-Type": "text/plain"}, b"Not found"

    def _annotation(self, item: dict[str, Any]) -> dict[str, Any] | None:
        """Why the dataserver would refuse an annotation (None: it takes it): its parent must
        be a PDF, EPUB or snapshot attachment of the library; the sort index is
        "PPPPP|OOOOOO|TTTTT"; the position is JSON."""
        parent = item.get("parentItem")
        if parent not in self.attachments:
            return {"code": 409, "message": f"Parent item {parent} not found",
                    "data": {"parentItem": parent}}  # fmt: skip
        if self.attachments[parent] not in ("application/pdf", "application/epub+zip",
                                            "text/html"):  # fmt: skip
            return {"code": 400, "message": "Parent item of annotation must be a PDF, EPUB "
                                            "or snapshot attachment"}  # fmt: skip
        if item.get("annotationType") not in ("highlight", "underline", "note", "image", "ink",
                                               "text"):  # fmt: skip
            return {"code": 400, "message": "Invalid annotationType"}
        if not re.fullmatch(r"\d{5}\|\d{6}\|\d{5}", str(item.get("annotationSortIndex"))):
            return {"code": 400, "message": "Invalid sortIndex"}
        try:
            json.loads(item.get("annotationPosition") or "")
        except ValueError:
            return {"code": 400, "message": "annotationPosition must be a JSON string"}
        return None

    def _list(self, q: dict[str, list[str]],
              js: dict[str, str]) -> tuple[int, dict[str, str], bytes]:  # fmt: skip
        """GET items: `since` (library version), `q` with `qmode` (titleCreatorYear searches
        titles and creators, everything every field), `limit` and `start`."""
        found = [i for i in self.created if i["version"] > int((q.get("since") or ["0"])[0])]
        text = (q.get("q") or [""])[0].lower()
        if text:
            everything = (q.get("qmode") or [""])[0] == "everything"
            found = [i for i in found
                     if text in (json.dumps(i).lower() if everything else " ".join(
                         [str(i.get("title", ""))] + [str(c.get("lastName") or c.get("name"))
                                                       for c in i.get("creators", [])]).lower())]
        start = int((q.get("start") or ["0"])[0])
        limit = int((q.get("limit") or ["25"])[0])
        page = found[start : start + limit]
        body = [{"key": i["key"], "version": i["version"],
                 "library": {"type": "user", "id": int(self.library.rsplit("/", 1)[1])},
                 "data": {k: v for k, v in i.items()}} for i in page]  # fmt: skip
        headers = {**js, "Total-Results": str(len(found))}
        if start + limit < len(found):
            since = (q.get("since") or ["0"])[0]
            rest = f"since={since}&start={start + limit}&limit={limit}"
            nxt = f"{self.url}{self.library}/items?{rest}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        return 200, headers, json.dumps(body).encode()
