"""One turn on the real corpus library (issue 30): each quoted sentence stands on the page its
citation names, read from the PDF itself with pdfium; and the HTTP API, the CLI and the panel
receive the same view of one stored turn (names, links, each `[n]`'s page)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pypdfium2 as pdfium
import pytest
from agents_helpers import run, terminal
from conftest import corpus_path

from zocrates_nb.app import App
from zocrates_nb.citelinks import doc_key
from zocrates_nb.server.testing import JupyterServer
from zocrates_nb.text import split_sentences
from zocrates_nb.widget import history_turn

pytestmark = pytest.mark.corpus

QUESTIONS = 10  # dev questions asked (single and compound)
MARKER = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


@pytest.fixture(scope="module")
def corpus_app(corpus_index: Any) -> Iterator[App]:
    app = App.open(corpus_index.home, index=corpus_index.index)
    yield app
    app.close()


def _flat(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "", text.lower())


def _pdf_pages(path: str, cache: dict[str, list[str]]) -> list[str]:
    if path not in cache:
        pdf = pdfium.PdfDocument(path)
        cache[path] = [_flat(pdf[i].get_textpage().get_text_range()) for i in range(len(pdf))]
        pdf.close()
    return cache[path]


def _quoted_runs(answer: str) -> Iterator[tuple[str, list[int]]]:
    """Each marker of the answer, in order, with what it stands after on its line (from the
    marker before it): (text, its numbers)."""
    for line in answer.splitlines():
        last = 0
        for m in MARKER.finditer(line):
            yield line[last : m.start()], [int(n) for n in m.group(1).split(",")]
            last = m.end()


def test_each_quoted_sentence_stands_on_the_page_its_citation_names(corpus_app: App) -> None:
    lines = corpus_path("questions-dev.jsonl").read_text().splitlines()
    lines += corpus_path("questions-compound-dev.jsonl").read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines[:: max(len(lines) // QUESTIONS, 1)]]
    pdfs: dict[str, list[str]] = {}
    checked, right, wrong = 0, 0, []
    for question in questions[:QUESTIONS]:
        final = terminal(run(corpus_app.ask(question, hitl=False)))
        assert final.type == "final", question
        by_n = {c.n: c for c in final.citations}
        seen: dict[int, int] = {}
        for quoted, numbers in _quoted_runs(final.answer):
            for n in numbers:
                c = by_n.get(n)
                if c is None:
                    continue
                k = seen[n] = seen.get(n, -1) + 1
                doc = corpus_app.document(doc_key(c.chunk_id))
                if doc is None or doc.kind != "pdf" or k >= len(c.occurrences):
                    continue
                place = c.occurrences[k]
                pages = _pdf_pages(doc.file, pdfs)
                for sentence in split_sentences(re.sub(r"_\(§.*?\)_", "", quoted)):
                    flat = _flat(sentence)
                    if len(flat) < 30 or not any(flat[:30] in p for p in pages):
                        continue  # too short to place, or not quoted word for word
                    checked += 1
                    assert place.page is not None
                    named = range(place.page, (place.page_end or place.page) + 1)
                    if any(flat[:30] in pages[p - 1] or flat[-30:] in pages[p - 1]
                           for p in named if 0 < p <= len(pages)):  # fmt: skip
                        right += 1
                    else:
                        wrong.append((question[:40], n, place.page, sentence[:60]))
    assert checked >= 40, checked
    assert right / checked >= 0.95, wrong[:10]


@pytest.fixture(scope="module")
def server(corpus_index: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    with JupyterServer(corpus_index.home, tmp_path_factory.mktemp("jupyter")) as running:
        yield running


def test_the_http_api_the_cli_and_the_panel_show_one_turn_alike(
    corpus_app: App, corpus_index: Any, server: JupyterServer
) -> None:
    question = "Why do lock services like Chubby use lock delays?"
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "zocrates_nb.cli", "--home", str(corpus_index.home), "ask",
         question, "--no-hitl", "--json"],
        capture_output=True, text=True, env=env, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    cli = json.loads(done.stdout)
    sid, tid = cli["session_id"], cli["turn_id"]
    headers = {"Authorization": f"token {server.token}"}
    with httpx.Client(base_url=server.url, headers=headers, timeout=60) as http:
        response = http.get(f"zocrates/sessions/{sid}/turns/{tid}")
        assert response.status_code == 200, response.text
        api = response.json()
    panel = history_turn(corpus_app.turn(tid), corpus_app)

    assert cli["citations"], "the answer cites its papers"
    # Every citation: the same page, the same page for each [n], the same links.
    shown = ("n", "chunk_id", "page", "page_end", "occurrences", "links", "occurrence_links")
    for surface in (api, panel):
        assert [{k: c[k] for k in shown} for c in surface["citations"]] == [
            {k: c[k] for k in shown} for c in cli["citations"]]  # fmt: skip
        assert surface["answer"] == cli["answer"]
        assert [s["item_key"] for s in surface["cited_sources"]] == [
            s["item_key"] for s in cli["cited_sources"]]  # fmt: skip
    # The library is Zotero's: each citation opens its PDF at the page its sentence is on.
    for c in cli["citations"]:
        assert c["links"]["select"].startswith("zotero://select/library/items/")
        assert c["links"]["pdf"].endswith(f"?page={c['page']}")
        assert [link.rsplit("=", 1)[1] for link in c["occurrence_links"]] == [
            str(o["page"]) for o in c["occurrences"]]  # fmt: skip
    # The HTTP API and the panel name the scope's chips and link the sources alike.
    assert api["chips"] == panel["chips"]
    assert [s["links"] for s in api["cited_sources"]] == [
        s["links"] for s in panel["cited_sources"]]  # fmt: skip
    assert all(s["links"].get("select") for s in api["cited_sources"])
