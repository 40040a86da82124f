"""pyzotero reading real Zotero Web API responses (../shared/corpus/zotero-api-fixtures).

The bodies are recorded API responses; the HTTP side (paging headers, redirects to the
file store, 404s) is served through pyzotero's own httpx2 client with a MockTransport.
"""

from __future__ import annotations

import copy
import hashlib
import json
import socket
import sqlite3
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest
import pyzotero
from conftest import corpus_path

from zocrates_nb.library import Library, LibraryError, read_zotero_api
from zocrates_nb.library.zotero_api import LOCAL_NOT_RUNNING

API_KEY = "S3cr3tK3yThatMustNeverBePrinted"

pytestmark = pytest.mark.corpus


def fixture(name: str) -> Any:
    path = corpus_path("zotero-api-fixtures", name)
    return json.loads(path.read_text(encoding="utf-8"))


class ZoteroServer:
    """Serves fixture bodies the way api.zotero.org (or Zotero's local API) pages them."""

    def __init__(
        self,
        items: list[dict[str, Any]],
        collections: list[dict[str, Any]],
        *,
        prefix: str = "/users/1",
        files: dict[str, bytes] | None = None,
        fulltext: dict[str, dict[str, Any]] | None = None,
        local_files: dict[str, Path] | None = None,
        page_size: int = 7,
        status: tuple[int, str] | None = None,
    ):
        self.items, self.collections = items, collections
        self.prefix = prefix
        self.files, self.fulltext = files or {}, fulltext or {}
        self.local_files = local_files or {}
        self.page_size, self.status = page_size, status
        self.requests: list[str] = []
        self.queries: list[dict[str, str]] = []  # the parameters of each request, in order
        self.deleted: list[tuple[str, str, int]] = []  # (items|collections, key, version)

    def zotero(self, *, local: bool = False) -> Any:
        client = httpx2.Client(transport=httpx2.MockTransport(self.handle), follow_redirects=True)
        if local:
            return pyzotero.Zotero("0", "user", local=True, client=client)
        return pyzotero.Zotero(self.prefix.split("/")[-1], "user", API_KEY, client=client)

    def _page(self, request: httpx2.Request, records: list[dict[str, Any]]) -> httpx2.Response:
        params = dict(request.url.params)
        start = int(params.get("start", 0))
        limit = min(int(params.get("limit", 25)), self.page_size)
        links = []
        if start + limit < len(records):
            nxt = {**params, "start": str(start + limit)}
            links.append(f'<{request.url.copy_with(query=urlencode(nxt).encode())}>; rel="next"')
        last = {**params, "start": str(max(0, (len(records) - 1) // limit * limit))}
        links.append(f'<{request.url.copy_with(query=urlencode(last).encode())}>; rel="last"')
        if "since" in params:  # only what changed after that library version
            records = [r for r in records if r["version"] > int(params["since"])]
        headers = {
            "Total-Results": str(len(records)),
            "Last-Modified-Version": str(self.library_version),
            "Link": ", ".join(links),
        }
        return httpx2.Response(200, json=records[start : start + limit], headers=headers)

    @property
    def library_version(self) -> int:
        """The library's version: the newest change to any item, collection or deletion."""
        versions = [r["version"] for r in self.items + self.collections]
        return max([*versions, *(v for _kind, _key, v in self.deleted)], default=0)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request.url.path)
        self.queries.append(dict(request.url.params))
        if request.url.host == "files.example.org":  # where the API redirects file downloads
            key = request.url.path.strip("/")
            return httpx2.Response(
                200, content=self.files[key], headers={"Content-Type": "application/pdf"}
            )
        if self.status:
            return httpx2.Response(self.status[0], text=self.status[1])
        path = request.url.path.removeprefix("/api").removeprefix(self.prefix)
        if path == "/items":
            params = request.url.params
            # Every read includes the trash; `limit=1` alone asks the library's version.
            assert params.get("includeTrashed") == "1" or params.get("limit") == "1"
            return self._page(request, self.items)
        if path == "/deleted":
            since = int(request.url.params["since"])
            gone: dict[str, list[str]] = {"items": [], "collections": [], "searches": []}
            for kind, key, version in self.deleted:
                if version > since:
                    gone[kind].append(key)
            headers = {"Last-Modified-Version": str(self.library_version)}
            return httpx2.Response(200, json=gone, headers=headers)
        if path == "/collections":
            return self._page(request, self.collections)
        parts = path.strip("/").split("/")
        if parts[0] == "items" and parts[2:] == ["file"]:
            if parts[1] in self.files:
                return httpx2.Response(
                    302, headers={"Location": f"https://files.example.org/{parts[1]}"}
                )
            return httpx2.Response(404, text="Not found")
        if parts[0] == "items" and parts[2:] == ["file", "view", "url"]:
            if parts[1] in self.local_files:
                return httpx2.Response(200, text=self.local_files[parts[1]].as_uri())
            return httpx2.Response(404, text="Not found")
        if parts[0] == "items" and parts[2:] == ["fulltext"] and parts[1] in self.fulltext:
            return httpx2.Response(200, json=self.fulltext[parts[1]])
        return httpx2.Response(404, text="Not found")


def test_public_library_items_and_nested_collections() -> None:
    items = fixture("pyzotero__items_doc.json")
    server = ZoteroServer(items, fixture("pyzotero__collections_doc.json"), prefix="/users/475425")
    lib = read_zotero_api(zot=server.zotero())
    assert lib.source == "zotero-web:users/475425"
    # 20 items, 15 collections, 7 per page: 3 + 3 requests, following the Link headers
    assert server.requests.count("/users/475425/items") == 3
    assert server.requests.count("/users/475425/collections") == 3
    assert len(lib.items) == 20
    assert Counter(i.item_type for i in lib.items.values()) == Counter(
        d["data"]["itemType"] for d in items
    )
    assert len(lib.collections) == 15
    assert lib.collection_path("TVPC4XK4") == "Non-English items/sherlock films"
    assert lib.collection_path("M7MNCCXU") == "LoC/Digital Newspaper project"
    artwork = lib.items["6MCAN2NC"]
    assert artwork.title == "Sherlock Holmes" and artwork.creators[0].creator_type == "artist"
    assert set(artwork.collections) == {"QM6T3KHX", "TVPC4XK4", "9KH9TNSJ"}
    assert artwork.tags == ["judelaw", "robertdowneyjr", "sherlockholmes"]
    science = lib.items["33TK9NH9"]
    assert science.doi == "10.1126/science.1195912" and science.year == 2011
    assert science.authors[:2] == ["Márcio D. Lima", "Shaoli Fang"]
    book = lib.items["X42A7DEE"]  # single-field (institutional) creator
    assert book.creators[0].name == "Institute of Physics (Great Britain)"
    assert book.authors == ["Institute of Physics (Great Britain)"]
    assert lib.items["GIFZST3I"].year == 1993  # date '08/1993'
    assert lib.items["PQKBRC33"].version == "v1:" + items[1]["data"]["dateModified"]


def _test_user_library() -> list[dict[str, Any]]:
    """The web-library test user: items, a standalone note, child attachments, annotations."""
    return [
        *fixture("web-library__test-user-get-items-golden.json"),
        *fixture("web-library__test-user-get-items-in-collection-algorithms.json"),
        *fixture("web-library__test-user-get-item-by-key-66LW9WRP-PEZF7SPI.json"),
        *fixture("web-library__test-user-children.json"),
        *fixture("web-library__test-user-attachment-annotations.json"),
    ]


def test_notes_attachments_and_annotations() -> None:
    records = _test_user_library()
    lib = read_zotero_api(zot=ZoteroServer(records, []).zotero())
    assert len(lib.items) == 5 - 1 + 21 + 2  # golden minus its note, algorithms minus 2 PDFs
    assert lib.items["J3W6M2Q6"].item_type == "videoRecording"
    assert lib.items["KBFTPTI4"].doi == "10.2307/j.ctt46nwk9.16"  # from 'DOI: …' in Extra
    assert lib.items["KBFTPTI4"].venue == "Owl Question"  # bookTitle

    [note] = lib.standalone_notes
    assert note.key == "Q6ALXLJG" and note.title == "Photos"
    assert note.html.startswith('<div data-schema-version="8"><h1>Photos</h1>')
    assert note.collections == ["9WZDZ7YA"]

    annotation_keys = {r["key"] for r in records if r["data"]["itemType"] == "annotation"}
    seen = {a.key for a in lib.attachments()} | {n.key for n in lib.notes()} | set(lib.items)
    assert len(annotation_keys) == 4 and not annotation_keys & seen

    atts = {a.key: a for a in lib.attachments()}
    assert set(atts) == {"UMPPCXU4", "ZKT5WURW", "MWVZPK6B", "VG79HDDM"}
    snapshot, pdf = atts["MWVZPK6B"], atts["VG79HDDM"]
    assert (snapshot.content_type, snapshot.link_mode) == ("text/html", "imported_url")
    assert (pdf.content_type, pdf.link_mode) == ("application/pdf", "imported_url")
    assert pdf.parent_key == "VR82JUX8"  # its parent item is not in the recorded responses
    assert pdf.filename.startswith("Kealy et al. - 2002")
    assert pdf.version == "v211:2023-01-13T10:52:46Z|md5:39bf1f4635fb0a4b2b9de876ed865f89"
    assert all(a.path is None and a.skip_reason == "not downloaded" for a in atts.values())
    assert atts["UMPPCXU4"].parent_key is None and atts["UMPPCXU4"].link_mode == "imported_file"


def _fulltext_from_corpus(title: str) -> dict[str, Any]:
    """A /fulltext body built from the corpus library's .zotero-ft-cache + fulltextItems."""
    db = corpus_path("zotero-library", "zotero.sqlite")
    conn = sqlite3.connect(f"{db.as_uri()}?mode=ro&immutable=1", uri=True)
    key, pages = conn.execute(
        """SELECT a.key, f.indexedPages FROM items a JOIN itemAttachments ia USING (itemID)
           JOIN fulltextItems f USING (itemID) JOIN items p ON p.itemID = ia.parentItemID
           JOIN itemData d ON d.itemID = p.itemID JOIN itemDataValues v USING (valueID)
           WHERE v.value = ?""",
        (title,),
    ).fetchone()
    conn.close()
    text = (db.parent / "storage" / key / ".zotero-ft-cache").read_text(encoding="utf-8")
    return {"content": text, "indexedPages": pages, "totalPages": pages}


def test_downloads_once_per_md5_and_falls_back_to_full_text(tmp_path: Path) -> None:
    bitcoin = corpus_path("papers", "bitcoin.pdf").read_bytes()
    ft = _fulltext_from_corpus("Attention Is All You Need")
    server = ZoteroServer(
        _test_user_library(), [], files={"ZKT5WURW": bitcoin}, fulltext={"UMPPCXU4": ft}
    )
    zot = server.zotero()
    lib = read_zotero_api(zot=zot, download_dir=tmp_path)
    atts = {a.key: a for a in lib.attachments()}

    got = atts["ZKT5WURW"]  # the recorded md5 is that of the corpus bitcoin.pdf
    assert got.path == tmp_path / "ZKT5WURW" / "bitcoin.pdf" and got.skip_reason is None
    assert hashlib.md5(got.path.read_bytes()).hexdigest() == "d56d71ecadf2137be09d8b1d35c6c042"

    missing = atts["UMPPCXU4"]  # the server has no file, only Zotero's full-text index
    assert missing.path is None
    assert missing.skip_reason == "file not available from the Zotero Web API: Code: 404"
    assert missing.fulltext_cache == tmp_path / "UMPPCXU4" / ".zotero-ft-cache"
    assert missing.fulltext_cache.read_text(encoding="utf-8") == ft["content"]
    assert "Scaled Dot-Product Attention" in ft["content"]
    assert atts["VG79HDDM"].fulltext_cache is None and atts["VG79HDDM"].path is None

    server.requests.clear()
    again = read_zotero_api(zot=zot, download_dir=tmp_path)
    assert "/users/1/items/ZKT5WURW/file" not in server.requests  # md5 matches: not fetched
    assert {a.key: a.path for a in again.attachments()}["ZKT5WURW"] == got.path


def test_trashed_items_children_and_collections_are_dropped() -> None:
    items = copy.deepcopy(fixture("pyzotero__items_doc.json"))
    collections = copy.deepcopy(fixture("pyzotero__collections_doc.json"))
    golden = copy.deepcopy(fixture("web-library__test-user-get-items-golden.json"))
    trashed = {"PQKBRC33", "Q6ALXLJG"}  # what includeTrashed=1 returns with data.deleted = 1
    for record in items + golden:
        if record["key"] in trashed:
            record["data"]["deleted"] = 1
    next(c for c in collections if c["key"] == "QM6T3KHX")["data"]["deleted"] = True
    lib = read_zotero_api(zot=ZoteroServer(items + golden, collections).zotero())
    assert not trashed & set(lib.items) and lib.standalone_notes == []
    assert len(lib.items) == 20 - 1 + 4
    assert "QM6T3KHX" not in lib.collections and "TVPC4XK4" not in lib.collections  # subtree
    assert lib.items["6MCAN2NC"].collections == ["9KH9TNSJ"]


def test_local_api_uses_the_files_where_zotero_keeps_them(tmp_path: Path) -> None:
    pdf = corpus_path("papers", "bitcoin.pdf")
    server = ZoteroServer(
        fixture("web-library__test-user-get-items-in-collection-algorithms.json"),
        [],
        prefix="/users/0",
        local_files={"ZKT5WURW": pdf},
    )
    lib: Library = read_zotero_api(zot=server.zotero(local=True), download_dir=tmp_path)
    assert lib.source == "zotero-local:users/0"
    atts = {a.key: a for a in lib.standalone_attachments}
    assert atts["ZKT5WURW"].path == pdf and atts["ZKT5WURW"].skip_reason is None
    assert atts["UMPPCXU4"].path is None
    assert (atts["UMPPCXU4"].skip_reason or "").startswith("file not found")
    assert list(tmp_path.iterdir()) == []  # nothing copied
    assert server.requests[0] == "/api/users/0/items"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_zotero_not_running_says_what_to_do() -> None:
    zot = pyzotero.Zotero("0", "user", local=True)
    zot.endpoint = f"http://127.0.0.1:{_closed_port()}/api"  # connection refused
    started = time.monotonic()
    with pytest.raises(LibraryError) as err:
        read_zotero_api(zot=zot)
    assert str(err.value) == LOCAL_NOT_RUNNING
    assert "Allow other applications" in str(err.value)
    assert time.monotonic() - started < 5


def test_local_api_disabled_says_what_to_do() -> None:
    server = ZoteroServer([], [], prefix="/users/0", status=(403, "Local API is not enabled"))
    with pytest.raises(LibraryError, match="local API is disabled"):
        read_zotero_api(zot=server.zotero(local=True))


def test_bad_api_key_is_named_but_never_shown() -> None:
    server = ZoteroServer([], [], status=(403, "Invalid key"))
    with pytest.raises(LibraryError) as err:
        read_zotero_api(zot=server.zotero())
    message = str(err.value)
    assert "HTTP 403" in message and "API key" in message and "user library 1" in message
    assert API_KEY not in message
    assert err.value.__cause__ is None and err.value.__suppress_context__


def test_unknown_library_is_a_clear_error() -> None:
    server = ZoteroServer([], [], status=(404, "Not found"))
    with pytest.raises(LibraryError, match="no user library 1 on the Zotero Web API"):
        read_zotero_api(zot=server.zotero())


def _shape(lib: Library) -> dict[str, Any]:
    """What a read gave, comparable between an incremental and a full read."""
    return {
        "items": {k: (i.title, i.version, tuple(i.collections)) for k, i in lib.items.items()},
        "notes": sorted((n.key, n.version) for n in lib.notes()),
        "attachments": sorted((a.key, a.version) for a in lib.attachments()),
        "collections": sorted(lib.collections),
    }


def test_web_api_reads_only_what_changed_since_the_last_read(tmp_path: Path) -> None:
    """With a download_dir, the next read asks `since=` the version of the last one, merges
    changes, trash and deletions, and equals a full read of the library as it now is."""
    items = copy.deepcopy(fixture("pyzotero__items_doc.json"))
    collections = copy.deepcopy(fixture("pyzotero__collections_doc.json"))
    server = ZoteroServer(items, collections, prefix="/users/475425")
    first = read_zotero_api(zot=server.zotero(), download_dir=tmp_path)
    assert len(first.items) == 20
    version = server.library_version
    assert [q.get("since") for q in server.queries] == [None] * len(server.queries)

    server.requests.clear()
    server.queries.clear()
    unchanged = read_zotero_api(zot=server.zotero(), download_dir=tmp_path)
    assert server.requests == ["/users/475425/items"]  # the version probe only
    assert _shape(unchanged) == _shape(first)

    edited, trashed, removed = items[0]["data"], items[1]["data"], items[2]["data"]
    edited["title"], edited["version"] = "A title edited in Zotero", version + 1
    trashed["deleted"], trashed["version"] = 1, version + 2
    items[0]["version"], items[1]["version"] = version + 1, version + 2  # the record's too
    items.remove(items[2])
    server.deleted.append(("items", removed["key"], version + 3))
    gone_collection = collections.pop(0)["data"]["key"]
    server.deleted.append(("collections", gone_collection, version + 3))

    server.requests.clear()
    server.queries.clear()
    second = read_zotero_api(zot=server.zotero(), download_dir=tmp_path)
    sinces = {q.get("since") for q in server.queries if q.get("limit") != "1"}
    assert sinces == {str(version)}  # every read after the probe asked for changes only
    assert "/users/475425/deleted" in server.requests
    assert second.items[edited["key"]].title == "A title edited in Zotero"
    assert trashed["key"] not in second.items and removed["key"] not in second.items
    assert gone_collection not in second.collections
    fresh = read_zotero_api(zot=server.zotero())  # no download_dir: a full read
    assert _shape(second) == _shape(fresh)

    (tmp_path / ".sync-users-475425.json").write_text("not json")  # damaged: read everything
    server.queries.clear()
    third = read_zotero_api(zot=server.zotero(), download_dir=tmp_path)
    assert {q.get("since") for q in server.queries} == {None}
    assert _shape(third) == _shape(fresh)
