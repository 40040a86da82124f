"""Saving through the Zotero Web API with pyzotero (ZOTERO_WEB_API.md): `create_items` in
batches of 50. pyzotero does not retry a 429 on `create_items`, so we do, honouring
`Retry-After`; per-item failures are reported, the rest of the batch is kept."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import httpx2
import pyzotero
from pyzotero import zotero

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.online.candidate import Candidate
from zocrates_nb.online.http import retry_after
from zocrates_nb.writeback.items import zotero_item
from zocrates_nb.writeback.result import SaveResult, WriteError

BATCH = 50  # the Web API's limit per write
RETRIES = 3


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
    zot.endpoint = web.base_url
    return zot


def create(zot: zotero.Zotero, items: list[dict[str, Any]], *, max_wait: float = 30.0,
           sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:  # fmt: skip
    """One `create_items` call, retried on 429/503 while Retry-After is short enough."""
    for _ in range(RETRIES + 1):
        try:
            report = zot.create_items(items)
        except pyzotero.PreConditionFailedError:
            raise WriteError(
                "Zotero refused the write (HTTP 412: the library changed or the "
                "write was already made); check the library before retrying"
            ) from None
        except pyzotero.UserNotAuthorisedError:
            raise WriteError("Zotero refused the API key: it needs write access to this "
                             "library") from None  # fmt: skip
        except (pyzotero.PyZoteroError, ValueError) as e:
            status = getattr(getattr(zot, "request", None), "status_code", None)
            if status not in (429, 503):
                raise WriteError(f"Zotero did not save the items ({_first_line(e)})") from None
            report = {}
        except httpx2.TransportError:
            raise WriteError("could not reach the Zotero Web API (offline?)") from None
        status = getattr(getattr(zot, "request", None), "status_code", 200)
        if status in (429, 503) or not isinstance(report, dict) or "failed" not in report:
            headers = getattr(zot.request, "headers", {})
            wait = retry_after(headers.get("retry-after") or headers.get("backoff"))
            if wait is None or wait > max_wait:
                raise WriteError("the Zotero Web API is rate limiting; nothing more was saved, "
                                 "try again later")  # fmt: skip
            sleep(wait)
            continue
        return report
    raise WriteError("the Zotero Web API kept rate limiting; try again later")


def save_to_web(candidates: list[Candidate], web: ZoteroWebSettings, *,
                collection: str | None = None, environ: dict[str, str] | None = None,
                sleep: Callable[[float], None] = time.sleep) -> SaveResult:  # fmt: skip
    """Create the candidates as items (in `collection` when given); what saved and what not."""
    if not candidates:
        raise WriteError("nothing is staged: stage candidates first")
    zot = web_client(web, environ=environ)
    result = SaveResult(to="web", where=f"{web.library_type} library {web.library_id}")
    for start in range(0, len(candidates), BATCH):
        batch = candidates[start : start + BATCH]
        items = [zotero_item(c) for c in batch]
        if collection:
            for item in items:
                item["collections"] = [collection]
        report = create(zot, items, sleep=sleep)
        for i, c in enumerate(batch):
            key = (report.get("success") or {}).get(str(i)) or (
                (report.get("successful") or {}).get(str(i)) or {}).get("key")  # fmt: skip
            if key:
                result.saved.append(c.id)
                result.keys[c.id] = key
            else:
                fail = (report.get("failed") or {}).get(str(i)) or {}
                result.failed[c.id] = str(fail.get("message") or "not saved")
    return result


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or ["error"])[0][:120]


CITED_TAG = "zocrates:cited"


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
