"""The one way `online/` talks to the network: timeouts, 429/503 back-off that honours
`Retry-After`, and plain errors that name the source (never a provider body or a traceback)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from zocrates_nb.errors import ZocratesError

RETRIES = 2  # extra attempts after a 429/503 whose Retry-After is short enough


class SourceError(ZocratesError):
    """One source failed; the others still answer. `str()` is the message to show."""

    def __init__(self, source: str, message: str, status: int | None = None) -> None:
        self.source = source
        self.status = status  # the HTTP status that failed, when one did
        super().__init__(f"{source}: {message}")


def get(
    client: httpx.Client,
    source: str,
    url: str,
    *,
    params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    max_retry_after: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """GET `url`; the 2xx response, or SourceError with a sentence the user can act on."""
    for attempt in range(RETRIES + 1):
        try:
            r = client.get(url, params=params, headers=headers)
        except httpx.TimeoutException:
            raise SourceError(source, "did not answer in time; try again later") from None
        except httpx.TransportError:
            raise SourceError(
                source, "could not be reached (is this machine offline, or the address wrong?)"
            ) from None
        if r.status_code in (429, 503):
            wait = retry_after(r.headers.get("retry-after"))
            if attempt < RETRIES and wait is not None and wait <= max_retry_after:
                sleep(wait)
                continue
            busy = "is rate limiting requests" if r.status_code == 429 else "is unavailable"
            later = f" (it asks to wait {wait:.0f} s)" if wait else ""
            raise SourceError(source, f"{busy}; try again later{later}")
        if r.status_code >= 400:
            raise SourceError(source, _status_text(r.status_code), r.status_code)
        return r
    raise AssertionError("unreachable")  # pragma: no cover


def get_json(client: httpx.Client, source: str, url: str, **kw: Any) -> Any:
    r = get(client, source, url, **kw)
    try:
        return r.json()
    except ValueError:
        raise SourceError(source, "sent a response that could not be read") from None


def retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` header (delta-seconds; an HTTP date counts from now)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _status_text(status: int) -> str:
    if status in (401, 403):
        return f"refused the request (HTTP {status}): check its API key"
    if status == 404:
        return "has no such record (HTTP 404)"
    if status >= 500:
        return f"had a server error (HTTP {status}); try again later"
    return f"rejected the request (HTTP {status})"
