"""Saving into the running Zotero desktop app through its connector server (CONNECTOR.md):
`/connector/ping` to see it is there, `/connector/getSelectedCollection` to say where items will
land, `/connector/saveItems` (201, empty body) into the currently selected collection, then the
PDFs through Zotero's own resolvers (saveItems ignores attachments)."""

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
    files: bool = True  # the library stores files (attachments can be uploaded)

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
            f"Zotero is not running (nothing answers at {url}): start Zotero desktop, or "
            "choose another destination (web, ris or bibtex)"
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
                           bool(data.get("editable", True)),
                           bool(data.get("filesEditable", True)))  # fmt: skip


def save_to_connector(candidates: list[Candidate], url: str, *, timeout: float = 30.0,
                      transport: httpx.BaseTransport | None = None,
                      find_pdfs: bool = False) -> SaveResult:  # fmt: skip
    """Save the candidates as one connector session into Zotero's selected collection; with
    `find_pdfs` (discovery is on), Zotero then attaches the open-access PDFs it can find."""
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
        sid = f"zocrates-{uuid.uuid4().hex[:12]}"
        r = post(client, url, "/connector/saveItems", {"sessionID": sid, "items": items})
        if r.status_code == 201:
            result = SaveResult(to="connector", saved=[c.id for c in candidates],
                                where=target.describe())  # fmt: skip
            if find_pdfs:
                attach_pdfs(client, url, sid, candidates, target, result)
            return result
    if r.status_code == 500 and b"libraryEditable" in r.content:
        raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
    raise WriteError(f"Zotero did not save the items (HTTP {r.status_code}); nothing was saved")


def attach_pdfs(client: httpx.Client, url: str, sid: str, candidates: list[Candidate],
                target: ConnectorTarget, result: SaveResult) -> None:  # fmt: skip
    """Ask Zotero to attach each saved item's PDF with its own resolvers (CONNECTOR.md §5b:
    Unpaywall, arXiv and whatever the researcher set up, through their proxy): Zotero fetches
    it, this process downloads nothing. A PDF not found is reported; the item stays saved."""
    if not target.files:
        result.unattached.update({c.id: f"{target.library} does not store files"
                                  for c in candidates})  # fmt: skip
        return
    for n, c in enumerate(candidates):
        ask = {"sessionID": sid, "itemID": c.id}
        try:
            r = post(client, url, "/connector/hasAttachmentResolvers", ask)
            if r.status_code == 404:  # a Zotero without resolvers over the connector
                return
            if r.status_code != 200 or r.content.strip() != b"true":
                result.unattached[c.id] = "Zotero knows no open-access copy of it"
                continue
            r = post(client, url, "/connector/saveAttachmentFromResolver", ask)
        except WriteError as e:  # the items are saved; only the PDFs are missing
            result.unattached.update({x.id: str(e) for x in candidates[n:]})
            return
        if r.status_code == 201:
            result.attached.append(c.id)
        else:
            result.unattached[c.id] = "Zotero could not fetch its PDF"
