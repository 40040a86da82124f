"""No paper is ever created twice, whatever fails when (ZOTERO_WEB_API.md §2): a loopback fake
of the Web API that honours write tokens (412 for a token it accepted), loses answers after
writing, rate limits with Retry-After and fails a batch; the ledger lives in sessions.db, and a
re-run is a new process (a new store on the same data home), once after a real SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from zotero_fakes import FakeWebAPI

from zocrates_nb.config import ZoteroWebSettings
from zocrates_nb.online import Candidate
from zocrates_nb.sessions import SessionStore
from zocrates_nb.sessions.writes import WriteLedger
from zocrates_nb.writeback import SaveResult, save_to_web

ENV = {"ZOTERO_API_KEY": "test-zotero-key"}
PAPERS = [Candidate(title=f"Consensus under partial synchrony, part {n}", year=2000 + n % 20,
                    authors=[f"Ada Lovelace{n}"], doi=f"10.5555/consensus.{n}")
          for n in range(77)]  # fmt: skip


def save(home: Path, api: FakeWebAPI, papers: list[Candidate] = PAPERS,
         **kw: Any) -> SaveResult:  # fmt: skip
    """One save as one process would run it: its own store on the data home."""
    store = SessionStore.open(home)
    try:
        return save_to_web(papers, ZoteroWebSettings(library_id="475425", base_url=api.url),
                           ledger=WriteLedger(store), environ=ENV,
                           sleep=kw.pop("sleep", lambda s: None), **kw)  # fmt: skip
    finally:
        store.close()


def tokens(api: FakeWebAPI) -> list[str]:
    return [{k.lower(): v for k, v in r["headers"].items()}["zotero-write-token"]
            for r in api.requests if r["method"] == "POST"]  # fmt: skip


def assert_each_once(api: FakeWebAPI, papers: list[Candidate] = PAPERS) -> None:
    made = Counter(i["DOI"] for i in api.created)
    assert made == Counter(p.doi for p in papers), "a paper was created twice or not at all"


def test_an_error_on_the_second_batch_saves_the_first_and_a_rerun_only_the_rest(
    tmp_path: Path,
) -> None:
    with FakeWebAPI() as api:
        api.fail_after = 1  # the first batch goes through; the second meets the error
        api.injected.append((500, {"Content-Type": "text/plain"}, b"Internal error"))
        first = save(tmp_path, api)
        assert len(first.saved) == 50 and len(first.pending) == 27 and not first.failed
        assert first.message.startswith("Zotero answered a batch with an error (HTTP 500). "
                                        "Saved 50, not saved yet 27: run the same save again")
        assert len(api.created) == 50
        second = save(tmp_path, api)
    assert sorted(second.saved) == sorted(p.id for p in PAPERS[50:]) and not second.message
    assert_each_once(api)
    sent = tokens(api)
    assert len(sent) == 3 and sent[1] == sent[2]  # batch 2 went again with its own token


@pytest.mark.parametrize("lost", [0.0, 1.5], ids=["dropped-connection", "timeout"])
def test_a_write_whose_answer_is_lost_is_read_back_not_written_again(
    tmp_path: Path, lost: float
) -> None:
    with FakeWebAPI() as api:
        api.lose.append(lost)  # the first batch is written; its answer never arrives
        result = save(tmp_path, api, timeout=0.5)
    assert sorted(result.saved) == sorted(p.id for p in PAPERS) and not result.pending
    assert_each_once(api)
    sent = tokens(api)
    assert sent[0] == sent[1] != sent[2]  # the retry reused the token: Zotero said 412
    assert result.keys == {p.id: i["key"] for p in PAPERS for i in api.created
                           if i["DOI"] == p.doi}  # fmt: skip


def test_answers_lost_for_good_are_settled_by_the_next_process(tmp_path: Path) -> None:
    with FakeWebAPI() as api:
        api.lose.extend([0, 0, 0, 0])  # written once, then every retry's answer lost too
        first = save(tmp_path, api, papers=PAPERS[:10])
        assert first.saved == [] and len(first.pending) == 10
        assert first.message.startswith("Zotero's answer to a batch was lost")
        assert len(api.created) == 10  # Zotero did write it, once
        second = save(tmp_path, api, papers=PAPERS[:10])
    assert sorted(second.saved) == sorted(p.id for p in PAPERS[:10])
    assert_each_once(api, PAPERS[:10])
    assert len(set(tokens(api))) == 1


def test_a_rate_limit_on_the_second_batch_is_waited_out(tmp_path: Path) -> None:
    waits: list[float] = []
    with FakeWebAPI() as api:
        api.fail_after = 1
        api.injected.append((429, {"Retry-After": "3"}, b"Request rate limit exceeded"))
        result = save(tmp_path, api, sleep=waits.append)
    assert waits == [3.0] and len(result.saved) == 77
    assert not result.pending
    assert_each_once(api)


def test_a_backoff_on_a_successful_write_holds_the_next_batch(tmp_path: Path) -> None:
    """Zotero's `Backoff` may come with any answer, a 200 too: the next batch waits it out."""
    waits: list[float] = []
    with FakeWebAPI() as api:
        api.fail_after = 0
        api.extra_headers = {"Backoff": "5"}  # on the first batch's 200
        result = save(tmp_path, api, sleep=waits.append)
    assert len(result.saved) == 77 and result.complete
    assert waits and waits[0] == pytest.approx(5.0, abs=0.1), waits
    assert_each_once(api)


def test_a_503_is_zotero_unavailable_not_rate_limiting(tmp_path: Path) -> None:
    with FakeWebAPI() as api:
        for _ in range(4):
            api.injected.append((503, {"Retry-After": "600"}, b"Service Unavailable"))
        result = save(tmp_path, api)
    assert result.saved == [] and len(result.pending) == 77 and not result.complete
    assert "The Zotero Web API is unavailable (HTTP 503" in result.message
    assert "rate limiting" not in result.message and "600 s" in result.message


def test_a_crash_between_recording_and_sending_sends_the_same_batch_later(
    tmp_path: Path,
) -> None:
    class Crash(BaseException):
        pass

    class CrashingLedger(WriteLedger):
        def mark_sent(self, batch: Any) -> None:
            if batch.items[0].candidate_id == PAPERS[50].id:
                raise Crash
            super().mark_sent(batch)

    store = SessionStore.open(tmp_path)
    with FakeWebAPI() as api:
        with contextlib.suppress(Crash):
            save_to_web(PAPERS, ZoteroWebSettings(library_id="475425", base_url=api.url),
                        ledger=CrashingLedger(store), environ=ENV)  # fmt: skip
        store.close()
        assert len(api.created) == 50
        result = save(tmp_path, api)
    assert sorted(result.saved) == sorted(p.id for p in PAPERS[50:])
    assert_each_once(api)


CHILD = """
import sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from test_writeback_failures import save_in_child
save_in_child(Path({home!r}), {url!r})
"""


def save_in_child(home: Path, url: str) -> None:
    class Api:  # what `save` needs of the fake: its address
        pass

    api = Api()
    api.url = url  # type: ignore[attr-defined]
    save(home, api)  # type: ignore[arg-type]


def test_a_process_killed_while_its_batch_is_in_flight_loses_nothing_and_doubles_nothing(
    tmp_path: Path,
) -> None:
    with FakeWebAPI() as api:
        api.fail_after = 1
        api.lose.append(30.0)  # the second batch is written, then its answer hangs
        code = CHILD.format(tests=str(Path(__file__).parent), home=str(tmp_path), url=api.url)
        child = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, **ENV})
        deadline = time.monotonic() + 60
        while len(api.created) < 77 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        assert len(api.created) == 77, "the child did not get as far as the second batch"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        result = save(tmp_path, api)
    assert sorted(result.saved) == sorted(p.id for p in PAPERS[50:]) and not result.pending
    assert_each_once(api)
    ledger = SessionStore.open(tmp_path)
    rows = ledger._conn().execute("SELECT state, COUNT(*) FROM zotero_writes GROUP BY state")
    assert dict(rows.fetchall()) == {"written": 77}
    ledger.close()
    assert json.loads(json.dumps(result.keys))  # every saved paper has its Zotero key
