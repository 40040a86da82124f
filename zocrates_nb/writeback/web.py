"""Saving through the Zotero Web API so that nothing is ever created twice (ZOTERO_WEB_API.md).

Items go in batches of 50. Each batch gets a `Zotero-Write-Token`, recorded in the ledger with
the exact items before the request is sent and reused by every retry of that batch, in this
process or a later one: Zotero answers a token it has already accepted with 412, which means
the batch was written, and its items are then found by reading the library back (the items
created since the library version noted before the batch). Each batch's outcome is recorded
before the next batch is sent; a failure stops the run and says what was saved, what was not,
and how to continue. pyzotero reads the library; the create request is sent on pyzotero's own
client with our token, since `create_items` makes a fresh token on every call."""

from __future__ import annotations

import html
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx2
import pyzotero
from pyzotero import zotero

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.online.candidate import Candidate, clean_arxiv_id, clean_doi
from zocrates_nb.online.http import Again, Pace, attempts, pace
from zocrates_nb.writeback.items import annotation_identity, zotero_item
from zocrates_nb.writeback.ledger import Batch, BatchItem, Ledger, target_of
from zocrates_nb.writeback.result import SaveResult, WriteError

BATCH = 50  # the Web API's limit per write
RETRIES = 3  # further attempts of one batch (same token) after a 429/503 or a lost answer
CITED_TAG = "zocrates:cited"


def web_client(web: ZoteroWebSettings, *, environ: dict[str, str] | None = None,
               timeout: float = 60.0) -> zotero.Zotero:  # fmt: skip
    env = os.environ if environ is None else environ
    if not web.library_id:
        raise WriteError("set zotero.web.library_id (your Zotero user or group id) to save "
                         "through the Web API")  # fmt: skip
    key = (env.get(web.api_key_env) or "").strip()
    if not key:
        raise WriteError(f"set the environment variable {web.api_key_env} to a Zotero API key "
                         "with write access to save through the Web API")  # fmt: skip
    zot = zotero.Zotero(web.library_id, web.library_type, key,
                        client=httpx2.Client(timeout=timeout))  # fmt: skip
    zot.endpoint = str(web.base_url).rstrip("/")
    return zot


class WebLibrary:
    """One Zotero library through the Web API: pyzotero for reads, the token-guarded create."""

    def __init__(self, web: ZoteroWebSettings, *, environ: dict[str, str] | None = None,
                 timeout: float = 60.0) -> None:  # fmt: skip
        self.zot = web_client(web, environ=environ, timeout=timeout)
        self.target = target_of(web.library_type, str(web.library_id))
        self.where = f"{web.library_type} library {web.library_id}"
        self.library_id = str(web.library_id)
        self._name: str | None = None
        self.items_url = f"{self.zot.endpoint}/{web.library_type}s/{web.library_id}/items"
        # One pace per Web API server in this process: a Backoff on any answer holds them all.
        self.pace: Pace = pace(f"Zotero Web API {self.zot.endpoint}")

    def describe(self) -> str:
        """The library as messages name it: "the group library 'Lab'", "your user library"."""
        if self.target.startswith("web:users/"):
            return "your user library"
        if self._name is None:
            self._name = ""
            try:  # GET /groups/<id>: the group's name (not having it is no error)
                assert self.zot.client is not None
                r = self.zot.client.get(f"{self.zot.endpoint}/groups/{self.library_id}",
                                        headers=self.zot.default_headers())  # fmt: skip
                data = (r.json() or {}).get("data") if r.status_code == 200 else None
                name = data.get("name") if isinstance(data, dict) else None
                self._name = " ".join(str(name).split())[:80] if name else ""
            except (httpx2.HTTPError, ValueError, AttributeError):
                pass
        return f"the group library '{self._name}'" if self._name else (
            f"the group library {self.library_id}")  # fmt: skip

    def has(self, key: str) -> bool:
        """Whether the library holds an item with this key."""
        try:
            self.zot.item(key)
        except pyzotero.ResourceNotFoundError:
            return False
        return True

    def version(self) -> int | None:
        """The library's version now (None when it cannot be read: reading back then searches
        by title instead)."""
        try:
            return int(self.zot.last_modified_version())
        except (pyzotero.PyZoteroError, httpx2.HTTPError, ValueError):
            return None

    def post(self, items: list[dict[str, Any]], token: str) -> httpx2.Response:
        headers = {**self.zot.default_headers(), "Zotero-Write-Token": token,
                   "Content-Type": "application/json"}  # fmt: skip
        assert self.zot.client is not None
        return self.zot.client.post(self.items_url, json=items, headers=headers)

    def search(self, text: str, *, everything: bool = False) -> list[dict[str, Any]]:
        """Regular items whose title (or, with `everything`, any field) matches `text`."""
        mode = "everything" if everything else "titleCreatorYear"
        found = self.zot.items(q=text[:200], qmode=mode, limit=25)
        return [i for i in found or [] if isinstance(i, dict)]

    def created_since(self, version: int) -> list[dict[str, Any]]:
        return [i for i in self.zot.everything(self.zot.items(since=version)) or []
                if isinstance(i, dict)]  # fmt: skip

    def find(self, identities: set[str], title: str) -> str | None:
        """The key of an item holding this paper (same DOI, arXiv id, ISBN or title), if any."""
        asks = [(i.split(":", 1)[1], True) for i in sorted(identities)
                if not i.startswith("title:")] + [(title, False)]  # fmt: skip
        for text, everything in asks:
            if text.strip() and (key := match(self.search(text, everything=everything),
                                              identities)):  # fmt: skip
                return key
        return None


def api_identities(item: dict[str, Any]) -> set[str]:
    """The identities of a Web API item (as `Candidate.identities` spells them)."""
    raw = item.get("data")
    data: dict[str, Any] = raw if isinstance(raw, dict) else item

    def text(name: str) -> str:
        value = data.get(name)
        return value[:2000] if isinstance(value, str) else ""

    if text("itemType") == "annotation":
        return {annotation_identity(data)}
    if text("itemType") in ("note", "attachment"):
        return set()
    arxiv = next((line.split(":", 1)[1] for line in text("extra").splitlines()
                  if line.lower().startswith("arxiv:")), None)  # fmt: skip
    if text("archiveID").lower().startswith("arxiv:"):
        arxiv = text("archiveID").split(":", 1)[1]
    return Candidate(title=text("title"), doi=clean_doi(text("DOI")),
                     arxiv_id=clean_arxiv_id(arxiv), isbn=text("ISBN") or None).identities()


def match(items: list[dict[str, Any]], identities: set[str]) -> str | None:
    """The first item sharing an identifier with the paper, else one sharing its title."""
    for strong in (True, False):
        for item in items:
            shared = api_identities(item) & identities
            if any(not s.startswith("title:") for s in shared) or (shared and not strong):
                key = item.get("key") or (item.get("data") or {}).get("key")
                if isinstance(key, str) and key:
                    return key
    return None


def save_to_web(candidates: list[Candidate], web: ZoteroWebSettings, *, ledger: Ledger,
                collection: str | None = None, tags: list[str] | None = None,
                environ: dict[str, str] | None = None, max_wait: float = 30.0,
                sleep: Callable[[float], None] = time.sleep,
                timeout: float = 60.0) -> SaveResult:  # fmt: skip
    """Create the candidates as items (in `collection` when given), first settling what an
    earlier run left unsettled; see the module's docstring for the guarantees."""
    library = WebLibrary(web, environ=environ, timeout=timeout)
    entries = [BatchItem.of(c, zotero_item(c, tags=tags, collection=collection))
               for c in candidates]  # fmt: skip
    return write_batches(library, ledger, entries, max_wait=max_wait, sleep=sleep)


def write_batches(library: WebLibrary, ledger: Ledger, entries: list[BatchItem], *,
                  max_wait: float = 30.0,
                  sleep: Callable[[float], None] = time.sleep) -> SaveResult:  # fmt: skip
    """Settle the library's pending batches, then write `entries` not yet written, 50 a batch;
    stop at the first batch whose outcome is unknown (see the module's docstring)."""
    run = _Run(library, ledger, SaveResult(to="web", where=library.where), max_wait, sleep)
    with ledger.lease(library.target):  # one writer per library: no batch sent twice
        for batch in ledger.pending(library.target):
            if run.stopped:  # not reached this time: still pending
                run.result.pending += [i.candidate_id for i in batch.items]
            else:
                run.send(batch)
        todo = [e for e in entries if e.candidate_id not in run.result.saved]
        for start in range(0, len(todo), BATCH):
            chunk = todo[start : start + BATCH]
            if run.stopped:
                run.result.pending += [e.candidate_id for e in chunk
                                       if e.candidate_id not in run.result.pending]  # fmt: skip
                continue
            opened = ledger.open_batch(library.target, uuid.uuid4().hex, chunk, library.version())
            if opened is not None:
                run.send(opened)
    if run.stopped:
        run.result.message = (
            f"{run.stopped} Saved {len(run.result.saved)}, not saved yet "
            f"{len(run.result.pending)}: run the same save again to send the rest (a batch "
            "whose answer was lost is sent again with its write token, so Zotero never "
            "creates a paper twice)."
        )
    return run.result


class _Run:
    """One save: sends batches, settles each in the ledger, stops at the first it cannot."""

    def __init__(self, library: WebLibrary, ledger: Ledger, result: SaveResult,
                 max_wait: float, sleep: Callable[[float], None]) -> None:  # fmt: skip
        self.library, self.ledger, self.result = library, ledger, result
        self.max_wait, self.sleep = max_wait, sleep
        self.stopped = ""  # why the run stopped ("" while it goes on)

    def send(self, batch: Batch) -> bool:
        """Send `batch` (retrying with its token) and settle it; False when its outcome stays
        unknown or Zotero would not take it now (it stays pending for the next run)."""
        items = [i.item for i in batch.items]
        self.result.titles.update({i.candidate_id: i.title for i in batch.items})
        gate = self.library.pace
        try:
            for attempt in attempts(RETRIES + 1, self.max_wait, self.sleep):
                with attempt:
                    if not gate.wait(self.max_wait, self.sleep):
                        return self.stop(batch, "The Zotero Web API asked for a pause longer "
                                                f"than {self.max_wait:.0f} s.")  # fmt: skip
                    self.ledger.mark_sent(batch)
                    try:
                        r = self.library.post(items, batch.token)
                    except httpx2.TransportError:  # a timeout or a lost answer: same token
                        raise Again() from None
                    asked = gate.heed(r.headers)  # Backoff on any answer, a success too
                    if r.status_code in (429, 503):
                        raise Again(r, asked, paced=True)
        except Again as e:
            if e.response is None:
                return self.stop(batch, "Zotero's answer to a batch was lost (timeout or "
                                        "dropped connection), so whether it was saved is not "
                                        "known yet.")  # fmt: skip
            later = f" (it asks to wait {e.wait:.0f} s)" if e.wait else ""
            if e.response.status_code == 429:
                return self.stop(batch, f"The Zotero Web API is rate limiting{later}.")
            return self.stop(batch, "The Zotero Web API is unavailable (HTTP 503: down for "
                                    f"maintenance or overloaded){later}.")  # fmt: skip
        if r.status_code == 200:
            return self.settle(batch, _report(r))
        if r.status_code == 412 and b"token" in r.content.lower():
            return self.read_back(batch)
        if r.status_code in (401, 403):  # nothing was written: the batch is closed
            self.settle(batch, {})
            self.stopped = "Zotero refused the API key: it needs write access to this library."
            return False
        if r.status_code in (400, 409, 413):  # 409: the library is locked
            why = f"Zotero rejected the batch (HTTP {r.status_code}: {_text(r)})"
            return self.settle(batch, {"failed": {str(n): {"message": why}
                                                  for n in range(len(items))}})  # fmt: skip
        return self.stop(batch, f"Zotero answered a batch with an error (HTTP "
                                f"{r.status_code}).")  # fmt: skip

    def settle(self, batch: Batch, report: dict[str, Any]) -> bool:
        written: dict[str, str] = {}
        failed: dict[str, str] = {}
        for n, item in enumerate(batch.items):
            key = _key(report, n)
            if key:
                written[item.candidate_id] = key
            else:
                fail = (report.get("failed") or {}).get(str(n)) or {}
                why = fail.get("message") if isinstance(fail, dict) else None
                failed[item.candidate_id] = html.unescape(str(why or "not saved"))[:300]
        self.ledger.settle(batch, written, failed)
        self.result.saved += [c for c in written if c not in self.result.saved]
        self.result.keys.update(written)
        self.result.failed.update(failed)
        return True

    def read_back(self, batch: Batch) -> bool:
        """A 412 for our token: an earlier attempt of this batch was written. Find its items."""
        try:
            since = (self.library.created_since(batch.version)
                     if batch.version is not None else [])  # fmt: skip
            written = {}
            for item in batch.items:
                ids = set(item.identities)
                key = match(since, ids) if since else self.library.find(ids, item.title)
                if key:
                    written[item.candidate_id] = key
        except (pyzotero.PyZoteroError, httpx2.HTTPError):
            return self.stop(batch, "An earlier attempt of a batch was saved, but its items "
                                    "could not be read back yet.")  # fmt: skip
        report = {"success": {str(n): written[i.candidate_id] for n, i in enumerate(batch.items)
                              if i.candidate_id in written},
                  "failed": {str(n): {"message": "Zotero did not create it in the earlier "
                                      "attempt of its batch; save it again"}
                             for n, i in enumerate(batch.items)
                             if i.candidate_id not in written}}  # fmt: skip
        return self.settle(batch, report)

    def stop(self, batch: Batch, why: str) -> bool:
        self.stopped = why
        self.result.pending += [i.candidate_id for i in batch.items
                                if i.candidate_id not in self.result.pending]  # fmt: skip
        return False


def _report(r: httpx2.Response) -> dict[str, Any]:
    try:
        data = r.json()
    except ValueError:
        data = None
    return data if isinstance(data, dict) else {}


def _key(report: dict[str, Any], n: int) -> str | None:
    key = (report.get("success") or {}).get(str(n)) or (
        (report.get("successful") or {}).get(str(n)) or {}).get("key")  # fmt: skip
    return key if isinstance(key, str) and key else None


def _text(r: httpx2.Response) -> str:
    return " ".join(r.text.split())[:120] or "no reason given"


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or ["error"])[0][:120]


def tag_items(keys: list[str], web: ZoteroWebSettings, *, tag: str = CITED_TAG,
              environ: dict[str, str] | None = None) -> SaveResult:  # fmt: skip
    """Add `tag` to existing items (pyzotero `add_tags`: a PATCH guarded by the item's version,
    retried on 429 by pyzotero). Items already tagged are left alone; failures are per item."""
    zot = web_client(web, environ=environ)
    result = SaveResult(to="web", where=f"{web.library_type} library {web.library_id}")
    for key in dict.fromkeys(keys):
        try:
            item: Any = zot.item(key)
            if not any(t.get("tag") == tag for t in item["data"].get("tags") or []):
                zot.add_tags(item, tag)
            result.saved.append(key)
        except pyzotero.ResourceNotFoundError:
            result.failed[key] = "not in this Zotero library"
        except pyzotero.PreConditionFailedError:
            result.failed[key] = "changed in Zotero meanwhile; try again"
        except (pyzotero.PyZoteroError, httpx2.TransportError, KeyError, TypeError) as e:
            result.failed[key] = _first_line(e) if isinstance(e, pyzotero.PyZoteroError) else (
                "could not be tagged")  # fmt: skip
    return result
