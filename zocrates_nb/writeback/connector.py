"""Saving into the running Zotero desktop app through its connector server (CONNECTOR.md):
`/connector/ping` to see it is there, `/connector/getSelectedCollection` to say where items will
land, `/connector/saveItems` (201, empty body) into the currently selected collection, then each
known open-access PDF through `/connector/saveAttachment` (saveItems ignores attachments)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.result import SaveResult, WriteError

MAX_PDF_BYTES = 64 * 2**20  # an open-access PDF larger than this is left for the user to fetch

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
                      fetch_pdfs: bool = False) -> SaveResult:  # fmt: skip
    """Save the candidates as one connector session into Zotero's selected collection; with
    `fetch_pdfs` (discovery is on), attach each one's open-access PDF when a source named it."""
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
            if fetch_pdfs:
                attach_pdfs(client, url, sid, candidates, target, result)
            return result
    if r.status_code == 500 and b"libraryEditable" in r.content:
        raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
    raise WriteError(f"Zotero did not save the items (HTTP {r.status_code}); nothing was saved")


def attach_pdfs(client: httpx.Client, url: str, sid: str, candidates: list[Candidate],
                target: ConnectorTarget, result: SaveResult) -> None:  # fmt: skip
    """Download each saved item's open-access PDF and upload it as its child attachment; a PDF
    that cannot be had is reported, and the item stays saved."""
    with_pdf = [(c, c.pdf_url) for c in candidates
                if c.pdf_url and c.pdf_url.startswith(("http://", "https://"))]  # fmt: skip
    if with_pdf and not target.files:
        result.unattached.update({c.id: f"{target.library} does not store files"
                                  for c, _ in with_pdf})  # fmt: skip
        return
    for c, pdf_url in with_pdf:
        try:
            pdf = download_pdf(client, pdf_url)
        except WriteError as e:
            result.unattached[c.id] = str(e)
            continue
        meta = {"sessionID": sid, "parentItemID": c.id, "title": "Full Text PDF",
                "url": pdf_url}  # fmt: skip
        headers = {**HEADERS, "Content-Type": "application/pdf", "X-Metadata": json.dumps(meta)}
        try:
            r = client.post(f"{url}/connector/saveAttachment", params={"sessionID": sid},
                            content=pdf, headers=headers)  # fmt: skip
        except httpx.HTTPError:
            result.unattached[c.id] = "Zotero stopped answering while the PDF was uploaded"
            continue
        if r.status_code == 201:
            result.attached.append(c.id)
        elif r.status_code == 200:  # "Library files are not editable.": a 200 that means no
            result.unattached[c.id] = f"{target.library} does not store files"
        else:
            result.unattached[c.id] = f"Zotero did not attach the PDF (HTTP {r.status_code})"


def download_pdf(client: httpx.Client, pdf_url: str) -> bytes:
    """The PDF's bytes, or WriteError: not a PDF, too large, or the server refused."""
    host = httpx.URL(pdf_url).host
    try:
        with client.stream("GET", pdf_url, follow_redirects=True,
                           headers={"Accept": "application/pdf"}) as r:  # fmt: skip
            if r.status_code != 200:
                raise WriteError(
                    f"the PDF at {host} could not be downloaded (HTTP {r.status_code})"
                )
            data = bytearray()
            for chunk in r.iter_bytes():
                data += chunk
                if len(data) > MAX_PDF_BYTES:
                    raise WriteError(f"the PDF at {host} is larger than "
                                     f"{MAX_PDF_BYTES // 2**20} MB; attach it by hand")  # fmt: skip
    except httpx.HTTPError:
        raise WriteError(f"the PDF at {host} could not be downloaded") from None
    if not data.startswith(b"%PDF"):
        raise WriteError(f"{host} sent a web page, not the PDF; attach it by hand")
    return bytes(data)
