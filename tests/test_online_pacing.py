"""One reader of `Retry-After`/`Backoff`, one retry policy and a polite pace per API
(`online.http`), against a loopback server that answers as the APIs do."""

from __future__ import annotations

import email.utils
import itertools
import time

import httpx
import pytest

from zocrates_nb.online.http import Pace, SourceError, asked_wait, get, pace, retry_after


def test_retry_after_and_backoff_read_as_seconds_or_http_dates() -> None:
    assert retry_after("5") == 5.0 and retry_after("0.5") == 0.5 and retry_after("-3") == 0.0
    in_ten = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8.0 <= (retry_after(in_ten) or 0) <= 10.0
    assert retry_after("soon") is None and retry_after(None) is None
    assert asked_wait({"backoff": "5", "retry-after": "2"}) == 5.0
    assert asked_wait({"content-type": "application/json"}) is None


def test_a_pace_spaces_requests_and_honours_a_backoff_sent_with_a_success() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(round(s, 3))
        now[0] += s

    gate = Pace(3.0, clock=lambda: now[0])
    assert gate.wait(30, sleep) and gate.wait(30, sleep) and slept == [3.0]
    gate.heed({"Backoff": "5"})  # on a 200: the next request waits 5 s
    assert gate.wait(30, sleep) and slept == [3.0, 5.0]
    gate.heed({"Retry-After": "120"})  # longer than the caller allows: no request, no wait
    assert not gate.wait(30, sleep) and slept == [3.0, 5.0]
    # A rate the API announces (Crossref: 10 per 1s in the polite pool) sets the pace.
    crossref = Pace(0.2, clock=lambda: now[0])
    crossref.heed({"x-rate-limit-limit": "10", "x-rate-limit-interval": "1s"})
    assert crossref.interval == pytest.approx(0.1)


def _server(answers: list[httpx.Response], seen: list[float]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        return answers.pop(0) if answers else httpx.Response(200, json={"ok": True})

    return httpx.MockTransport(handle)


def test_get_keeps_a_source_s_documented_pace_across_calls() -> None:
    seen: list[float] = []
    with httpx.Client(transport=_server([], seen)) as client:
        for _ in range(3):
            get(client, "arXiv", "http://pace-test.invalid/query", interval=0.3)
    assert len(seen) == 3 and seen[-1] - seen[0] >= 0.59, seen
    assert pace("arXiv pace-test.invalid").interval == 0.3


def test_a_503_is_waited_out_then_named_as_unavailable_not_as_rate_limiting() -> None:
    seen: list[float] = []
    busy = [httpx.Response(503, headers={"Retry-After": "1"}) for _ in range(3)]
    with httpx.Client(transport=_server(busy, seen)) as client, pytest.raises(SourceError) as e:
        get(client, "Crossref", "http://busy-test.invalid/works")
    gaps = [b - a for a, b in itertools.pairwise(seen)]
    assert len(seen) == 3 and min(gaps) >= 0.95, gaps  # waited as asked, once each time
    assert max(gaps) < 1.8, gaps
    assert "is unavailable; try again later (it asks to wait 1 s)" in str(e.value)
