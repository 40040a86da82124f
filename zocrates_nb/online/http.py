"""How this package and `writeback/` talk to servers that pace their clients: one reader of
`Retry-After` and `Backoff` (seconds or an HTTP date), one retry policy (tenacity: the wait a
server asks for, else exponential back-off, never longer than the caller allows), and a polite
pace per API (requests at least its documented interval apart, none before a `Backoff` or
`Retry-After` ends, on any answer, successes included). Plain errors name the source, never a
provider body or a traceback."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import httpx
import tenacity

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
    interval: float = 0.0,
    sleep: Callable[[float], None] = time.sleep,
) -> httpx.Response:
    """GET `url` at the source's pace; the 2xx response, or SourceError with a sentence the
    user can act on."""
    gate = pace(f"{source} {url.split('/')[2] if '//' in url else url}", interval)
    try:
        for attempt in attempts(RETRIES + 1, max_retry_after, sleep):
            with attempt:
                if not gate.wait(max_retry_after, sleep):
                    raise SourceError(source, "asked to be left alone for now; try again later")
                try:
                    r = client.get(url, params=params, headers=headers)
                except httpx.TimeoutException:
                    raise SourceError(source, "did not answer in time; try again later") from None
                except httpx.TransportError:
                    raise SourceError(source, "could not be reached (is this machine offline, or "
                                      "the address wrong?)") from None  # fmt: skip
                asked = gate.heed(r.headers)
                if r.status_code in (429, 503):
                    raise Again(r, asked, paced=True)
    except Again as e:
        assert e.response is not None
        busy = "is rate limiting requests" if e.response.status_code == 429 else "is unavailable"
        later = f" (it asks to wait {e.wait:.0f} s)" if e.wait else ""
        raise SourceError(source, f"{busy}; try again later{later}") from None
    if r.status_code >= 400:
        raise SourceError(source, _status_text(r.status_code), r.status_code)
    return r


def get_json(client: httpx.Client, source: str, url: str, **kw: Any) -> Any:
    r = get(client, source, url, **kw)
    try:
        return r.json()
    except ValueError:
        raise SourceError(source, "sent a response that could not be read") from None


def retry_after(value: str | None) -> float | None:
    """Seconds from a `Retry-After` or `Backoff` header: delta-seconds, or an HTTP date
    counted from now."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def asked_wait(headers: Mapping[str, str]) -> float | None:
    """How long an answer asks the client to wait before its next request: the longer of its
    `Retry-After` and `Backoff` (None when it asks nothing)."""
    named = {k.lower(): v for k, v in headers.items()}
    waits = [w for h in ("retry-after", "backoff") if (w := retry_after(named.get(h)))
             is not None]  # fmt: skip
    return max(waits) if waits else None


class Again(Exception):
    """An attempt to repeat: its answer (None when it was lost), the wait it asked for, and
    whether a `Pace` holds the next request that long already (then the policy adds none)."""

    def __init__(self, response: Any = None, wait: float | None = None, *,
                 paced: bool = False) -> None:  # fmt: skip
        super().__init__("again")
        self.response, self.wait, self.paced = response, wait, paced


def attempts(tries: int, max_wait: float,
             sleep: Callable[[float], None] = time.sleep) -> tenacity.Retrying:  # fmt: skip
    """The one retry policy: an attempt that raises `Again` is repeated up to `tries` in all,
    after the wait its answer asked for, else 1, 2, 4… s; a wait longer than `max_wait` is not
    made (the last `Again` is raised then). Any other exception ends it at once."""

    def asked(state: tenacity.RetryCallState) -> float | None:
        e = state.outcome.exception() if state.outcome else None
        return e.wait if isinstance(e, Again) else None

    def stop(state: tenacity.RetryCallState) -> bool:
        wait = asked(state)
        return state.attempt_number >= tries or (wait is not None and wait > max_wait)

    def wait(state: tenacity.RetryCallState) -> float:
        e = state.outcome.exception() if state.outcome else None
        if isinstance(e, Again) and e.paced and e.wait is not None:
            return 0.0  # its pace waits before the next attempt
        told = asked(state)
        return told if told is not None else min(2.0 ** (state.attempt_number - 1), max_wait)

    def pause(seconds: float) -> None:
        if seconds > 0:
            sleep(seconds)

    return tenacity.Retrying(stop=stop, wait=wait, sleep=pause, reraise=True,
                             retry=tenacity.retry_if_exception_type(Again))  # fmt: skip


class Pace:
    """One server's pace, shared by the threads of this process: requests at least `interval`
    seconds apart, and none before a wait an answer asked for has passed."""

    def __init__(self, interval: float = 0.0,
                 clock: Callable[[], float] = time.monotonic) -> None:  # fmt: skip
        self.interval, self.clock = interval, clock
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self, max_wait: float, sleep: Callable[[float], None] = time.sleep) -> bool:
        """Wait for this request's turn; False (without waiting) when that is over `max_wait`
        away because the server asked for a longer pause."""
        with self._lock:
            now = self.clock()
            start = max(now, self._next)
            if start - now > max(max_wait, self.interval):
                return False
            self._next = start + self.interval
        if start > now:
            sleep(math.ceil((start - now) * 100) / 100)  # whole hundredths: never short
        return True

    def heed(self, headers: Mapping[str, str]) -> float | None:
        """Take in what an answer asks (`Retry-After`, `Backoff`, and the rate an API such as
        Crossref announces in `x-rate-limit-limit` per `x-rate-limit-interval`)."""
        wait = asked_wait(headers)
        with self._lock:
            if wait:
                self._next = max(self._next, self.clock() + wait)
            named = {k.lower(): v for k, v in headers.items()}
            limit, window = named.get("x-rate-limit-limit"), named.get("x-rate-limit-interval")
            try:
                seconds = float((window or "").strip().rstrip("s"))
                if limit and int(limit) > 0 and seconds > 0:
                    self.interval = seconds / int(limit)
            except ValueError:
                pass
        return wait


_PACES: dict[str, Pace] = {}
_PACES_LOCK = threading.Lock()


def pace(server: str, interval: float = 0.0) -> Pace:
    """The pace of one server (by name), the same for every caller in this process."""
    with _PACES_LOCK:
        return _PACES.setdefault(server, Pace(interval))


def _status_text(status: int) -> str:
    if status in (401, 403):
        return f"refused the request (HTTP {status}): check its API key"
    if status == 404:
        return "has no such record (HTTP 404)"
    if status >= 500:
        return f"had a server error (HTTP {status}); try again later"
    return f"rejected the request (HTTP {status})"
