"""Saving into the running Zotero desktop app through its connector server (CONNECTOR.md):
`/connector/ping` to see it is there, `/connector/getSelectedCollection` to say where items will
land, `/connector/saveItems` (201, empty body) into the currently selected collection."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.result import SaveResult, WriteError

# What the browser connector sends; no Origin header and no Mozilla/ User-Agent, or Zotero
# treats the request as a web page's and drops it.
HEADERS = {
    "Content-Type": "application/json",
    "X-Zotero-Connector-API-Version": "3",
    "X-Zotero-Version": "5.0.0",
    "User-Agent": "zocrates-nb",
}


@dataclass
class ConnectorTarget:
    """Where Zotero will save: the selected library and collection."""

    library: str
    collection: str | None
    editable: bool

    def describe(self) -> str:
        where = f"the collection '{self.collection}' in " if self.collection else ""
        return f"{where}{self.library}"


def post(client: httpx.Client, url: str, path: str, body: Any) -> httpx.Response:
    try:
        return client.post(url + path, json=body, headers=HEADERS)
    except httpx.TimeoutException:
        raise WriteError("Zotero did not answer in time: is it busy? Try again.") from None
    except httpx.TransportError:
        raise WriteError(
            f"Zotero is not running (nothing answers at {url}): start Zotero desktop, or save "
            "with --to web, ris or bibtex"
        ) from None


def selected_target(client: httpx.Client, url: str) -> ConnectorTarget:
    r = post(client, url, "/connector/ping", {})
    if r.status_code != 200 or "x-zotero-version" not in r.headers:
        raise WriteError(f"the server at {url} is not Zotero's connector (HTTP {r.status_code})")
    r = post(client, url, "/connector/getSelectedCollection", {})
    if r.status_code != 200:
        raise WriteError(f"Zotero could not say where it would save (HTTP {r.status_code})")
    data = r.json()
    collection = data.get("name") if data.get("id") is not None else None
    return ConnectorTarget(str(data.get("libraryName") or "My Library"), collection,
                           bool(data.get("editable", True)))  # fmt: skip


def save_to_connector(candidates: list[Candidate], url: str, *, timeout: float = 30.0,
                      transport: httpx.BaseTransport | None = None) -> SaveResult:  # fmt: skip
    """Save the candidates as one connector session into Zotero's selected collection."""
    if not candidates:
        raise WriteError("nothing is staged: stage candidates first")
    items = []
    for c in candidates:
        item = zotero_item(c)
        item["id"] = c.id  # the session's handle for the item (saveAttachment's parentItemID)
        items.append(item)
    with httpx.Client(timeout=timeout, transport=transport) as client:
        target = selected_target(client, url)
        if not target.editable:
            raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
        body = {"sessionID": f"zocrates-{uuid.uuid4().hex[:12]}", "items": items}
        r = post(client, url, "/connector/saveItems", body)
    if r.status_code == 201:
        return SaveResult(to="connector", saved=[c.id for c in candidates],
                          where=target.describe())  # fmt: skip
    if r.status_code == 500 and b"libraryEditable" in r.content:
        raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
    raise WriteError(f"Zotero did not save the items (HTTP {r.status_code}); nothing was saved")
