"""Read a library through Zotero's local API (Zotero running) or the Web API, via pyzotero.

One paged `items?includeTrashed=1` request stream gives every item with its trash flag,
so children of trashed items can be dropped exactly as in the data-dir reader; one
more stream gives the collections. Files come from Zotero's own storage (local API)
or are downloaded once into `download_dir/<KEY>/` (skipped while the md5 matches).

Web API reads are incremental when there is a `download_dir`: the records of the last read
are kept there with the library version they were read at (`.sync-<library>.json`), and the
next read asks only for what changed since (`items?since=`, `collections?since=`,
`deleted?since=`). An unchanged library costs one request, not one per hundred items.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from urllib.request import url2pathname

import httpx2
import pyzotero

from zocrates_nb.library.model import (
    LINK_MODES,
    Attachment,
    Collection,
    Creator,
    Item,
    Library,
    LibraryError,
    Note,
    SkippedPath,
)
from zocrates_nb.library.paths import (
    UnsafePath,
    bad_key,
    plain_name,
    printable,
    within,
    zotero_key,
)
from zocrates_nb.library.zotero_dir import FT_CACHE, LINK_ONLY_REASON, checked_file
from zocrates_nb.library.zotero_fields import build_item, change_marker, note_title

LOCAL_NOT_RUNNING = (
    "Zotero is not running or its local API is disabled: start Zotero and enable "
    "'Allow other applications on this computer to communicate with Zotero' "
    "(Settings → Advanced)"
)
NOT_DOWNLOADED = "not downloaded"
# Keys of the API's item JSON that are structure, not bibliographic fields.
_STRUCTURAL = frozenset(
    {
        "key",
        "version",
        "itemType",
        "creators",
        "tags",
        "collections",
        "relations",
        "parentItem",
        "deleted",
        "dateAdded",
        "dateModified",
        "inPublications",
    }
)


def _is_trashed(data: dict[str, Any]) -> bool:
    return bool(data.get("deleted"))


def _md5(path: Path) -> str:
    h = hashlib.md5()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_marker(path: Path) -> str:
    st = path.stat()
    return f"|file:{st.st_size}:{st.st_mtime_ns}"


def _write_atomic(target: Path, content: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _link_mode(data: dict[str, Any]) -> str:
    """The API's linkMode; an unknown value is inferred from the fields that are present."""
    mode = str(data.get("linkMode", ""))
    if mode in LINK_MODES:
        return mode
    if data.get("filename"):
        return "imported_url" if data.get("url") else "imported_file"
    if data.get("path"):
        return "linked_file"
    return "linked_url"


def _creators(data: dict[str, Any]) -> list[Creator]:
    out = []
    for c in data.get("creators") or []:
        ctype = str(c.get("creatorType") or "author")
        if c.get("name"):
            out.append(Creator(last=str(c["name"]), creator_type=ctype))
        else:
            out.append(
                Creator(
                    last=str(c.get("lastName") or ""),
                    first=str(c.get("firstName") or ""),
                    creator_type=ctype,
                )
            )
    return out


def _fields(data: dict[str, Any]) -> dict[str, str]:
    return {
        k: str(v)
        for k, v in data.items()
        if k not in _STRUCTURAL and isinstance(v, str | int | float) and not isinstance(v, bool)
    }


class _ApiReader:
    def __init__(self, zot: Any, download_dir: Path | None):
        self.zot = zot
        self.local = bool(getattr(zot, "local", False))
        self.download_dir = download_dir
        self.where = "local API" if self.local else "Web API"

    def _fetch(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(item records, collection records): everything, or what changed since the last
        read merged into its kept records (Web API with a download_dir)."""
        zot = self.zot
        # The Web API pages at most 100; the local API can send everything at once.
        limit = None if self.local else 100
        state = self._state_file()
        if state is None:
            items = zot.everything(zot.items(includeTrashed=1, limit=limit))
            collections = zot.everything(zot.collections(limit=limit))
            return [r.get("data", r) for r in items], [r.get("data", r) for r in collections]
        kept = _load_sync(state)
        version = int(zot.last_modified_version())
        if kept is not None and kept["version"] == version:
            return list(kept["items"].values()), list(kept["collections"].values())
        if kept is None:
            items_by_key: dict[str, dict[str, Any]] = {}
            cols_by_key: dict[str, dict[str, Any]] = {}
            since: dict[str, Any] = {}
        else:
            items_by_key, cols_by_key = kept["items"], kept["collections"]
            since = {"since": kept["version"]}
        for r in zot.everything(zot.items(includeTrashed=1, limit=limit, **since)):
            d = r.get("data", r)
            items_by_key[d["key"]] = d
        for r in zot.everything(zot.collections(limit=limit, **since)):
            d = r.get("data", r)
            cols_by_key[d["key"]] = d
        if since:  # emptied from the trash or deleted outright since the last read
            gone = zot.deleted(**since) or {}
            for key in gone.get("items") or []:
                items_by_key.pop(key, None)
            for key in gone.get("collections") or []:
                cols_by_key.pop(key, None)
        _save_sync(state, version, items_by_key, cols_by_key)
        return list(items_by_key.values()), list(cols_by_key.values())

    def _state_file(self) -> Path | None:
        if self.local or self.download_dir is None:
            return None
        zot = self.zot
        try:
            return within(self.download_dir, f".sync-{zot.library_type}-{zot.library_id}.json")
        except UnsafePath:
            return None  # an odd library id: read everything, keep nothing

    def read(self) -> Library:
        zot = self.zot
        records, raw_collections = self._fetch()
        prefix = f"{zot.library_type}/{zot.library_id}"
        library = Library(source=("zotero-local:" if self.local else "zotero-web:") + prefix)
        trashed_collections = self._collections(library, raw_collections)

        # A key names the download folder (and the index's documents/<KEY>/): one that is not
        # a Zotero key is reported, and the object read as if trashed, children and all.
        bad = [d for d in records if not zotero_key(d.get("key"))]
        for d in bad:
            what = {"note": "note", "attachment": "attachment"}.get(str(d.get("itemType")), "item")
            key = str(d.get("key", ""))
            library.skipped.append(SkippedPath(printable(key), bad_key(key, what)))
            d["deleted"] = 1
        by_key = {str(d.get("key")): d for d in records}

        def trashed(d: dict[str, Any]) -> bool:
            parent = by_key.get(d.get("parentItem") or "")
            return _is_trashed(d) or (parent is not None and _is_trashed(parent))

        def collections_of(d: dict[str, Any]) -> list[str]:
            return [c for c in d.get("collections") or [] if c not in trashed_collections]

        for d in records:
            if d.get("itemType") in ("note", "attachment", "annotation") or trashed(d):
                continue
            library.items[d["key"]] = build_item(
                d["key"],
                str(d["itemType"]),
                _fields(d),
                creators=_creators(d),
                tags=sorted((str(t["tag"]) for t in d.get("tags") or []), key=str.casefold),
                collections=collections_of(d),
                version=change_marker(d.get("version"), d.get("dateModified")),
                date_added=str(d.get("dateAdded") or ""),
                date_modified=str(d.get("dateModified") or ""),
            )

        def parent_of(d: dict[str, Any]) -> Item | None:
            return library.items.get(d.get("parentItem") or "")

        for d in records:
            if trashed(d):
                continue
            if d.get("itemType") == "note":
                html = str(d.get("note") or "")
                parent = parent_of(d)
                note = Note(
                    key=d["key"],
                    parent_key=d.get("parentItem") or None,
                    title=note_title(html),
                    html=html,
                    version=change_marker(d.get("version"), d.get("dateModified")),
                    collections=collections_of(d),
                )
                (parent.notes if parent else library.standalone_notes).append(note)
            elif d.get("itemType") == "attachment":
                if _link_mode(d) == "embedded_image":  # images inside notes
                    continue
                att = self._attachment(d)
                parent = parent_of(d)
                # A child whose parent was not returned stays visible as standalone,
                # keeping its parent_key.
                (parent.attachments if parent else library.standalone_attachments).append(att)
        return library

    def _collections(self, library: Library, raw: list[dict[str, Any]]) -> set[str]:
        """Fill library.collections; return the keys of trashed collections (and their subtree)."""
        data = [r.get("data", r) for r in raw]
        parent = {d["key"]: d.get("parentCollection") or None for d in data}
        trashed = {d["key"] for d in data if _is_trashed(d)}
        changed = True
        while changed:
            new = {k for k, p in parent.items() if p in trashed and k not in trashed}
            trashed |= new
            changed = bool(new)
        for d in data:
            if d["key"] not in trashed:
                library.collections[d["key"]] = Collection(
                    key=d["key"], name=str(d.get("name") or ""), parent_key=parent[d["key"]]
                )
        return trashed

    def _attachment(self, d: dict[str, Any]) -> Attachment:
        mode = _link_mode(d)
        filename = Path(str(d.get("filename") or "")).name  # never a path from the server
        md5 = str(d.get("md5") or "")
        att = Attachment(
            key=d["key"],
            parent_key=d.get("parentItem") or None,
            title=str(d.get("title") or "") or filename,
            content_type=str(d.get("contentType") or ""),
            link_mode=mode,
            url=str(d.get("url") or ""),
            filename=filename,
            version=change_marker(d.get("version"), d.get("dateModified"))
            + (f"|md5:{md5}" if md5 else ""),
        )
        if mode == "linked_url":
            att.skip_reason = LINK_ONLY_REASON
            return att
        if self.local:  # the file is on this machine: use it where Zotero keeps it
            local = self._local_file(att.key)
            if local is not None:
                att.path, att.filename = local, att.filename or local.name
                att.version += "" if md5 else _file_marker(local)
            else:
                att.skip_reason = "file not found: Zotero has no file for this attachment"
                if self.download_dir is not None:
                    with contextlib.suppress(UnsafePath):
                        self._fulltext(att, within(self.download_dir, att.key))
            return att
        if mode == "linked_file":
            recorded = str(d.get("path") or "")
            linked = Path(recorded)
            if not recorded or not linked.is_absolute():
                shown = printable(recorded) or "(no path)"
                att.skip_reason = f"file not found: linked file {shown}"
                return att
            reason, found = checked_file(linked, None)  # on this machine only if Zotero is
            if found is None:
                att.skip_reason = reason
            else:
                att.path, att.filename = found, att.filename or found.name
                att.version += "" if md5 else _file_marker(found)
            return att
        self._download(att, md5)
        return att

    def _local_file(self, key: str) -> Path | None:
        """Where Zotero keeps the file: the local API answers /file/view/url with a file:// URL."""
        zot = self.zot
        url = f"{zot.endpoint}/{zot.library_type}/{zot.library_id}/items/{key}/file/view/url"
        resp = zot.client.get(url, headers=zot.default_headers())
        if resp.status_code != 200:
            return None
        parsed = urlparse(resp.text.strip())
        if parsed.scheme != "file":
            return None
        _reason, found = checked_file(Path(url2pathname(unquote(parsed.path))), None)
        return found

    def _download(self, att: Attachment, md5: str) -> None:
        if self.download_dir is None:
            att.skip_reason = NOT_DOWNLOADED
            return
        name = att.filename if plain_name(att.filename) else att.key
        try:  # the key and the server's file name, inside the download folder
            folder = within(self.download_dir, att.key, where="the download folder")
            target = within(folder, name, where="the download folder")
        except UnsafePath as e:
            att.skip_reason = str(e)
            return
        if md5 and target.is_file() and _md5(target) == md5:
            att.path = target
            return
        try:
            content = self.zot.file(att.key)
            if not isinstance(content, bytes):
                raise LibraryError(f"unexpected {type(content).__name__} for a file")
        except (pyzotero.PyZoteroError, LibraryError) as e:
            att.skip_reason = f"file not available from the Zotero {self.where}: {_reason(e)}"
            self._fulltext(att, folder)
            return
        _write_atomic(target, content)
        att.path = target

    def _fulltext(self, att: Attachment, folder: Path) -> None:
        """Best effort: Zotero's full-text index of the attachment, as a .zotero-ft-cache."""
        try:
            found = self.zot.fulltext_item(att.key)
        except pyzotero.PyZoteroError:
            return
        content = found.get("content") if isinstance(found, dict) else None
        if isinstance(content, str) and content.strip():
            cache = folder / FT_CACHE
            _write_atomic(cache, content.encode("utf-8"))
            att.fulltext_cache = cache


def _load_sync(path: Path) -> dict[str, Any] | None:
    """The records of the last read, or None (absent or unreadable: read everything)."""
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("version"), int)
        and isinstance(data.get("items"), dict)
        and isinstance(data.get("collections"), dict)
    )
    return data if ok else None


def _save_sync(
    path: Path, version: int, items: dict[str, Any], collections: dict[str, Any]
) -> None:
    body = {"version": version, "items": items, "collections": collections}
    _write_atomic(path, json.dumps(body, ensure_ascii=False).encode("utf-8"))


def _unreachable(e: httpx2.TransportError, zot: Any) -> str:
    """The network failure in words: offline, no answer in time, or the connection broke."""
    if isinstance(e, httpx2.TimeoutException):
        what = "did not answer in time"
    elif isinstance(e, httpx2.ConnectError):
        what = "could not be reached (no network connection, or the server is down)"
    else:
        what = "broke off the connection"
    host = urlparse(str(getattr(zot, "endpoint", "") or "")).hostname or "api.zotero.org"
    return f"the Zotero Web API ({host}) {what}: check the network connection and try again"


def _reason(e: Exception) -> str:
    """First meaningful line of a pyzotero error ('Code: 404')."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return next((ln for ln in lines if ln.startswith("Code:")), lines[0] if lines else repr(e))


@contextmanager
def _api_errors(zot: Any, library_id: str, library_type: str) -> Iterator[None]:
    """pyzotero/httpx errors → LibraryError messages that say what to do (never the key)."""
    local = bool(getattr(zot, "local", False))
    what = f"{library_type} library {library_id}"
    api = "local API" if local else "Web API"
    try:
        yield
    except httpx2.TransportError as e:
        if local:
            raise LibraryError(LOCAL_NOT_RUNNING) from None
        raise LibraryError(_unreachable(e, zot)) from None
    except pyzotero.UserNotAuthorisedError:
        resp = getattr(zot, "request", None)
        code = getattr(resp, "status_code", "401/403")
        if local:
            raise LibraryError(LOCAL_NOT_RUNNING) from None
        raise LibraryError(
            f"the Zotero Web API refused access to {what} (HTTP {code}): the API key is "
            "missing, invalid or has no read access to this library; create one at "
            "https://www.zotero.org/settings/keys and pass it with --api-key or ZOTERO_API_KEY"
        ) from None
    except pyzotero.ResourceNotFoundError:
        raise LibraryError(
            f"no {what} on the Zotero {api} (HTTP 404): "
            "check the library id (a user's id is shown at https://www.zotero.org/settings/keys)"
        ) from None
    except pyzotero.PyZoteroError as e:
        raise LibraryError(f"Zotero {api} error: {_reason(e)}") from None


def read_zotero_api(
    library_id: str = "0",
    library_type: str = "user",
    api_key: str | None = None,
    *,
    local: bool = False,
    download_dir: Path | None = None,
    zot: Any = None,
    base_url: str | None = None,
) -> Library:
    """Read a library through pyzotero (`local=True`: Zotero's local API on 127.0.0.1:23119).

    `base_url` is the Web API's address (`zotero.web.base_url`: a self-hosted dataserver, a
    test server). `zot` is an already-built `pyzotero.Zotero` (e.g. with a custom httpx
    client); the other connection arguments are then ignored.
    """
    if zot is None:
        if not str(library_id).isdigit():  # it also names the sync file in download_dir
            raise LibraryError(
                f"{printable(str(library_id))!r} is not a Zotero library id: it is a number "
                "(a user's id is shown at https://www.zotero.org/settings/keys)"
            )
        zot = pyzotero.Zotero(library_id, library_type, api_key, local=local)
        if base_url and not local:
            zot.endpoint = base_url.rstrip("/")
    lib_id, lib_type = str(zot.library_id), str(zot.library_type).removesuffix("s")
    with _api_errors(zot, lib_id, lib_type):
        return _ApiReader(zot, download_dir).read()
