"""Whether the library's papers were retracted, withdrawn or given an expression of concern.

Two sources, both asked in batches: OpenAlex's `is_retracted` (`/works?filter=doi:a|b|…`, 50 a
request) and Crossref's update notices (`/works?filter=doi:a,doi:b,…`: a work's `updated-by`, a
notice's `update-to`, with the notice's type and date). A notice found by either is kept, the
kind and year from Crossref when it has them. The result is cached in the data home with the
date of the check (`retractions.json`), so an offline run still says what the last check found
and when; nothing is sent unless online search is on (the caller decides)."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError

from zocrates_nb.config import OnlineSettings
from zocrates_nb.online.candidate import clean_doi
from zocrates_nb.online.http import SourceError, get_json
from zocrates_nb.online.notices import Notice, crossref_notices, openalex_notice
from zocrates_nb.online.sources import USER_AGENT

CACHE = "retractions.json"
MAX_AGE = timedelta(days=7)  # a check older than this is made again (when online)
OPENALEX_BATCH = 50  # OpenAlex's OR filter takes up to 100 values; 50 keeps URLs short
CROSSREF_BATCH = 20  # whole Crossref records are large (their references)
class RetractionCheck(BaseModel):
    """The last check of the library's DOIs: when, which DOIs, what was found."""

    checked: datetime | None = None
    dois: list[str] = Field(default_factory=list)  # every DOI checked (lower case)
    notices: dict[str, Notice] = Field(default_factory=dict)  # by DOI (lower case)
    errors: list[str] = Field(default_factory=list)  # a source that failed, one line each

    def notice(self, doi: str | None) -> Notice | None:
        key = clean_doi(doi or "")
        return self.notices.get(key.lower()) if key else None

    def due(self, dois: Iterable[str], now: datetime | None = None) -> bool:
        """Whether a check should be made now: never made, too old, failed, or a DOI new."""
        if self.checked is None or self.errors:
            return True
        if (now or datetime.now(UTC)) - self.checked > MAX_AGE:
            return True
        return not set(dois) <= set(self.dois)

    def said(self) -> str:
        """'checked 2026-12-01' or 'never checked', for every surface."""
        return f"checked {self.checked:%Y-%m-%d}" if self.checked else "never checked"


def normal_dois(dois: Iterable[str | None]) -> list[str]:
    """Clean, lower-case, distinct DOIs (what both APIs are asked about)."""
    out = {d.lower() for d in (clean_doi(x or "") for x in dois) if d}
    return sorted(d for d in out if not re.search(r"[|,\s]", d))  # OR filters split on these


def check(dois: Iterable[str | None], online: OnlineSettings, *,
          environ: dict[str, str] | None = None,
          transport: httpx.BaseTransport | None = None,
          sleep: Callable[[float], None] = time.sleep) -> RetractionCheck:  # fmt: skip
    """Ask OpenAlex and Crossref (those enabled) about `dois`, in batches."""
    wanted = normal_dois(dois)
    result = RetractionCheck(checked=datetime.now(UTC), dois=wanted)
    env = os.environ if environ is None else environ
    headers = {"User-Agent": USER_AGENT + (f" (mailto:{online.mailto})" if online.mailto else "")}
    with httpx.Client(timeout=online.timeout, headers=headers, transport=transport,
                      follow_redirects=True) as client:  # fmt: skip
        for name, ask, size in (("OpenAlex", _openalex, OPENALEX_BATCH),
                                ("Crossref", _crossref, CROSSREF_BATCH)):  # fmt: skip
            settings = online.openalex if name == "OpenAlex" else online.crossref
            if not settings.enabled:
                continue
            key = (env.get(settings.api_key_env) or "").strip() if settings.api_key_env else ""
            for start in range(0, len(wanted), size):
                batch = wanted[start : start + size]
                try:
                    found = ask(client, str(settings.base_url).rstrip("/"), batch, key,
                                online, sleep)  # fmt: skip
                except SourceError as e:
                    result.errors.append(str(e))
                    break
                for n in found:
                    if n.doi in batch:
                        _keep(result, n)
    return result


def _keep(result: RetractionCheck, n: Notice) -> None:
    """One notice per DOI: Crossref's kind and date win, every source is named."""
    old = result.notices.get(n.doi)
    if old is None:
        result.notices[n.doi] = n
        return
    better = n if "Crossref" in n.sources and n.year else old
    other = old if better is n else n
    result.notices[n.doi] = better.model_copy(update={
        "sources": sorted({*better.sources, *other.sources}),
        "year": better.year or other.year,
        "notice_doi": better.notice_doi or other.notice_doi})  # fmt: skip


def _params(online: OnlineSettings, key: str) -> dict[str, Any]:
    out: dict[str, Any] = {"mailto": online.mailto} if online.mailto else {}
    if key:
        out["api_key"] = key
    return out


def _openalex(client: httpx.Client, base: str, batch: list[str], key: str,
              online: OnlineSettings, sleep: Callable[[float], None]) -> list[Notice]:  # fmt: skip
    params = {"filter": "doi:" + "|".join(batch), "per-page": str(len(batch)),
              "select": "doi,is_retracted", **_params(online, key)}  # fmt: skip
    data = get_json(client, "OpenAlex", f"{base}/works", params=params,
                    max_retry_after=online.max_retry_after, sleep=sleep)  # fmt: skip
    works = (data.get("results") if isinstance(data, dict) else None) or []
    return [n for w in works if isinstance(w, dict) and (n := openalex_notice(w))]


def _crossref(client: httpx.Client, base: str, batch: list[str], key: str,
              online: OnlineSettings, sleep: Callable[[float], None]) -> list[Notice]:  # fmt: skip
    params = {"filter": ",".join(f"doi:{d}" for d in batch), "rows": str(len(batch)),
              **_params(online, "")}  # fmt: skip
    data = get_json(client, "Crossref", f"{base}/works", params=params,
                    max_retry_after=online.max_retry_after, sleep=sleep)  # fmt: skip
    message = data.get("message") if isinstance(data, dict) else None
    items = (message.get("items") if isinstance(message, dict) else None) or []
    return [n for work in items if isinstance(work, dict) for n in crossref_notices(work)]


def load(home: Path) -> RetractionCheck:
    """The last check cached in the data home (an empty one when none was made or the file
    cannot be read: it is then made again)."""
    try:
        return RetractionCheck.model_validate_json((home / CACHE).read_bytes()[:20_000_000])
    except (OSError, ValidationError, ValueError):
        return RetractionCheck()


def save(home: Path, result: RetractionCheck) -> None:
    """Write the check atomically next to the index (a crash leaves the previous one)."""
    path = home / CACHE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result.model_dump(mode="json"), ensure_ascii=False), "utf-8")
    os.replace(tmp, path)
