"""Saving into the running Zotero desktop app through its connector server (CONNECTOR.md), as the
browser connector does: `/connector/ping`, `/connector/getSelectedCollection` (where items would
land, and every collection a save may go to), `/connector/saveItems` (201, empty body), then
`/connector/updateSession` to put the session's items in the collection asked for and give them
the tags asked for, then the PDFs through Zotero's own resolvers (saveItems ignores files).

A save is one connector session, recorded in the ledger (its sessionID and items) before it is
sent. A session whose answer was lost is sent again with the same sessionID: Zotero answers
409 while that session lives (the items were saved) and 201 when it never saved them. After the
session may have expired (Zotero keeps them a minute or more), the outcome is asked of Zotero's
local API when it is on, or else of the researcher: never guessed."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from zocrates_nb.online.candidate import Candidate
from zocrates_nb.online.http import Again, attempts
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.ledger import CONNECTOR, Batch, BatchItem, Ledger
from zocrates_nb.writeback.result import SaveResult, WriteError

# What the browser connector sends; no Origin header and no Mozilla/ User-Agent, or Zotero
# treats the request as a web page's and drops it.
HEADERS = {
    "Content-Type": "application/json",
    "X-Zotero-Connector-API-Version": "3",
    "X-Zotero-Version": "5.0.0",
    "User-Agent": "zocrates-nb",
}
SESSION_TTL = 50.0  # seconds a connector session surely lives (Zotero: 1 min when it has many)
RETRIES = 2  # further sends of a session whose answer was lost


@dataclass
class ConnectorTarget:
    """Where Zotero will save: the selected library and collection, and the other targets."""

    library: str
    collection: str | None
    editable: bool
    files: bool = True  # the library stores files (attachments can be uploaded)
    tree_id: str = ""  # the selection's treeViewID (L1, C12)
    # Every editable library and collection: (treeViewID, path such as "Reading/To read").
    targets: list[tuple[str, str]] = field(default_factory=list)

    def describe(self) -> str:
        where = f"the collection '{self.collection}' in " if self.collection else ""
        return f"{where}{self.library}"


# The other destinations of a save of papers (a note is saved to Zotero only: `web`).
PAPER_DESTINATIONS = "web, ris or bibtex"


def post(client: httpx.Client, url: str, path: str, body: Any,
         others: str = PAPER_DESTINATIONS) -> httpx.Response:  # fmt: skip
    """One connector request; Zotero not running is a sentence naming the `others`
    destinations the save at hand offers."""
    try:
        return client.post(url + path, json=body, headers=HEADERS)
    except httpx.TimeoutException:
        raise WriteError("Zotero did not answer in time: is it busy? Try again.") from None
    except httpx.TransportError:
        raise WriteError(
            f"Zotero is not running (nothing answers at {url}): start Zotero desktop, or "
            f"choose another destination ({others})"
        ) from None


def selected_target(client: httpx.Client, url: str,
                    others: str = PAPER_DESTINATIONS) -> ConnectorTarget:  # fmt: skip
    r = post(client, url, "/connector/ping", {}, others)
    if r.status_code != 200 or "x-zotero-version" not in r.headers:
        raise WriteError(f"the server at {url} is not Zotero's connector (HTTP {r.status_code})")
    r = post(client, url, "/connector/getSelectedCollection", {})
    if r.status_code != 200:
        raise WriteError(f"Zotero could not say where it would save (HTTP {r.status_code})")
    data = r.json() if r.content else {}
    data = data if isinstance(data, dict) else {}
    selected = data.get("id")
    collection = data.get("name") if selected is not None else None
    tree = f"C{selected}" if selected is not None else f"L{data.get('libraryID', 1)}"
    return ConnectorTarget(str(data.get("libraryName") or "My Library"), collection,
                           bool(data.get("editable", True)), bool(data.get("filesEditable", True)),
                           tree, _paths(data.get("targets")))  # fmt: skip


def _paths(targets: Any) -> list[tuple[str, str]]:
    """`targets` (a flat tree: id, name, level) as (id, "Parent/Child") pairs."""
    out: list[tuple[str, str]] = []
    stack: list[str] = []
    for t in targets if isinstance(targets, list) else []:
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            continue
        level = t.get("level") if isinstance(t.get("level"), int) else 0
        stack = [*stack[: max(0, level - 1)], str(t.get("name") or "")] if level else []
        out.append((t["id"], "/".join(stack) if level else str(t.get("name") or "")))
    return out


def choose(target: ConnectorTarget, collection: str) -> tuple[str, str]:
    """The treeViewID and path of the collection asked for (by path or by name), or a
    WriteError that says why none can be chosen: nothing is saved then."""
    wanted = collection.strip().strip("/").lower()
    colls = [(i, p) for i, p in target.targets if i.startswith("C")]
    if not target.targets:
        raise WriteError(f"this Zotero does not let another app choose the collection, so "
                         f"nothing was saved: select '{collection}' in Zotero and save again "
                         "without a collection")  # fmt: skip
    found = [(i, p) for i, p in colls if p.lower() == wanted] or \
        [(i, p) for i, p in colls if p.rsplit("/", 1)[-1].lower() == wanted]
    if len(found) == 1:
        return found[0]
    if found:
        raise WriteError(f"several collections are called '{collection}' ("
                         f"{'; '.join(p for _, p in found)}), so nothing was saved: name one "
                         "by its path")  # fmt: skip
    names = ", ".join(p for _, p in colls[:12]) or "none"
    raise WriteError(f"Zotero has no collection '{collection}' (its collections: {names}), so "
                     "nothing was saved")  # fmt: skip


def save_to_connector(candidates: list[Candidate], url: str, *, ledger: Ledger,
                      items: Callable[[Candidate], dict[str, Any]] = zotero_item,
                      collection: str | None = None, tags: list[str] | None = None,
                      lost: str | None = None, timeout: float = 30.0,
                      transport: httpx.BaseTransport | None = None,
                      find_pdfs: bool = False,
                      is_saved: Callable[[BatchItem], bool | None] | None = None,
                      clock: Callable[[], float] = time.time) -> SaveResult:  # fmt: skip
    """Save the candidates as one connector session into the collection asked for (else the
    selected one); settle first what an earlier session left unknown (`lost`: "saved" or
    "unsaved" when the researcher checked Zotero; `is_saved` asks the local API)."""
    with ledger.lease(CONNECTOR), httpx.Client(timeout=timeout, transport=transport) as client:
        target = selected_target(client, url)
        dest = choose(target, collection) if collection else None
        if not target.editable:
            raise WriteError(f"{target.describe()} is read-only: select another one in Zotero")
        run = Session(client, url, ledger, SaveResult(to="connector"), clock)
        for batch in ledger.pending(CONNECTOR):
            run.settle_earlier(batch, lost, is_saved)
        todo = [c for c in candidates if c.id not in run.result.saved]
        if todo and not run.result.message:
            sid = f"zocrates-{uuid.uuid4().hex[:12]}"
            entries = [BatchItem.of(c, {**items(c), "id": c.id}) for c in todo]
            opened = ledger.open_batch(CONNECTOR, sid, entries)
            if opened is not None and run.send(opened):
                run.place(opened, target, dest, tags)
                if find_pdfs:
                    attach_pdfs(client, url, sid, [c for c in todo if c.id in run.result.saved],
                                target, run.result)  # fmt: skip
        elif todo:
            run.result.pending += [c.id for c in todo if c.id not in run.result.pending]
    if not run.result.where:
        run.result.where = f"the collection '{dest[1]}' in {target.library}" if dest else (
            target.describe())  # fmt: skip
    return run.result


class Session:
    """Sends a session's saveItems (again with its sessionID when its answer was lost)."""

    def __init__(self, client: httpx.Client, url: str, ledger: Ledger, result: SaveResult,
                 clock: Callable[[], float]) -> None:  # fmt: skip
        self.client, self.url, self.ledger, self.result, self.clock = (
            client, url, ledger, result, clock)  # fmt: skip

    def body(self, batch: Batch) -> dict[str, Any]:
        return {"sessionID": batch.token, "items": [i.item for i in batch.items]}

    def send(self, batch: Batch) -> bool:
        """True when Zotero saved the session: it answered 201, or SESSION_EXISTS to a
        session this home had sent before (an earlier send saved it). Any other answer
        leaves the papers unsaved and says why (`failed`)."""
        self.result.titles.update({i.candidate_id: i.title for i in batch.items})
        try:
            for attempt in attempts(RETRIES + 1, 0.0):  # a lost answer: the same session again
                with attempt:
                    resent = batch.sent is not None
                    self.ledger.mark_sent(batch)
                    try:
                        r = self.client.post(self.url + "/connector/saveItems",
                                             json=self.body(batch), headers=HEADERS)  # fmt: skip
                    except httpx.TransportError:
                        raise Again() from None
        except Again:
            self.stop(batch, "Zotero's answer to the save was lost (timeout or dropped "
                             "connection), so whether it saved the papers is not known yet.")
            return False
        if r.status_code == 201 or (r.status_code == 409 and resent
                                    and _error(r) == "SESSION_EXISTS"):  # fmt: skip
            self.written(batch)
            return True
        self.refused(batch, refusal(r))
        return False

    def refused(self, batch: Batch, reason: str) -> None:
        """Zotero did not save the session: its papers stay staged, each with the reason."""
        failed = {i.candidate_id: reason for i in batch.items}
        self.ledger.settle(batch, {}, failed)
        self.result.failed.update(failed)
        self.result.message = f"{reason[0].upper()}{reason[1:]}: nothing of that save was saved."

    def settle_earlier(self, batch: Batch, lost: str | None,
                       is_saved: Callable[[BatchItem], bool | None] | None) -> None:  # fmt: skip
        """A session an earlier run recorded whose outcome is unknown."""
        fresh = batch.sent is None or self.clock() - batch.sent < SESSION_TTL
        if fresh:  # the session would still exist: sending it again is safe
            self.send(batch)
            return
        if lost in ("saved", "unsaved"):
            if lost == "saved":
                self.written(batch)
            else:
                self.ledger.settle(batch, {}, {i.candidate_id: "not saved by Zotero" for i in
                                               batch.items})  # fmt: skip
            return
        answers = {i.candidate_id: is_saved(i) if is_saved else None for i in batch.items}
        if all(a is not None for a in answers.values()):
            written = {c: "" for c, a in answers.items() if a}
            self.ledger.settle(batch, written, {c: "not saved by Zotero" for c, a in
                                                answers.items() if not a})  # fmt: skip
            self.result.saved += list(written)
            return
        when = time.strftime("%H:%M", time.localtime(batch.sent))
        self.stop(batch, f"Zotero may have saved {len(batch.items)} papers at {when} before "
                         "its answer was lost, and it can no longer be asked (turn on its "
                         "local API to let zocrates-nb check). Look for them in Zotero, then "
                         "save again with --lost saved if they are there, or --lost unsaved if "
                         "they are not.")  # fmt: skip

    def written(self, batch: Batch) -> None:
        self.ledger.settle(batch, {i.candidate_id: "" for i in batch.items}, {})
        self.result.saved += [i.candidate_id for i in batch.items
                              if i.candidate_id not in self.result.saved]  # fmt: skip

    def stop(self, batch: Batch, why: str) -> None:
        self.result.pending += [i.candidate_id for i in batch.items
                                if i.candidate_id not in self.result.pending]  # fmt: skip
        self.result.message = why

    def place(self, batch: Batch, target: ConnectorTarget, dest: tuple[str, str] | None,
              tags: list[str] | None) -> None:  # fmt: skip
        """Move the session's items into `dest` and give them `tags` (updateSession), as the
        browser connector's save popup does."""
        if dest is None and not tags:
            return
        body: dict[str, Any] = {"sessionID": batch.token, "target": dest[0] if dest else
                                target.tree_id}  # fmt: skip
        if tags:
            body["tags"] = list(tags)
        try:
            r = post(self.client, self.url, "/connector/updateSession", body)
            why = "" if r.status_code == 200 else (_error(r) or f"HTTP {r.status_code}")
        except WriteError as e:
            why = str(e)
        if why:
            asked = ([f"the collection '{dest[1]}'"] if dest else []) + (
                [f"the tags {', '.join(repr(t) for t in tags)}"] if tags else [])  # fmt: skip
            self.result.incomplete += asked
            self.result.message = (f"Saved to {target.describe()}, but Zotero did not apply "
                                   f"{' or '.join(asked)} ({why}): add "
                                   f"{'them' if len(asked) > 1 else 'it'} in Zotero.")  # fmt: skip


def _error(r: httpx.Response) -> str:
    """The `error` a connector answer names (SESSION_EXISTS, SESSION_NOT_FOUND…), else ""."""
    try:
        data = r.json() if r.content else None
    except ValueError:
        return ""
    error = data.get("error") if isinstance(data, dict) else None
    return error[:60] if isinstance(error, str) else ""


def refusal(r: httpx.Response) -> str:
    """Why Zotero did not save a session, in words."""
    if b"libraryEditable" in r.content:
        return "Zotero did not save them: the selected library is read-only"
    if r.status_code == 409:
        named = _error(r)
        return ("Zotero refused the save: the library is locked or the save clashed with "
                f"another (HTTP 409{': ' + named if named else ''})")  # fmt: skip
    if r.status_code >= 500:
        return f"Zotero failed while saving them (HTTP {r.status_code}); try again"
    return f"Zotero did not save them (HTTP {r.status_code}{': ' + _error(r) if _error(r) else ''})"


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
