"""`zocrates-nb bench scale --papers N[,M…]`: a synthetic library of N papers, indexed and
searched, with the growth between sizes extrapolated to 10,000 and 20,000 papers.

Papers are reportlab PDFs with a title, authors, an abstract, four sections, a figure and a
table, their text drawn from the SciFact corpus (`../shared/corpus/beir-scifact`, or `--corpus`)
so that retrieval is meaningful; without it the text is generated and the result says so.
Everything lives in `--work` (default: a temporary directory), never in the user's home; PDFs
are built once and hard-linked into each size's library folder, so a second run reuses them.

Per size: cold index (pages/s, chunks/s, and where the time went), peak RSS of the indexing
process and of a conversion worker, index size on disk, re-index with nothing changed,
adding 10 papers, warm search p50/p95 over SciFact queries, and `get_document_toc` /
`read_document` latency. `--chroma-server` also measures a real `chroma run` server on
loopback against embedded Chroma (index from cached bundles, search p50).

`--vectors hashed` embeds through a loopback embedding server serving hashed vectors (the
`index.embedding` openai-compatible path, no model): every figure but the embedding compute,
at sizes whose real embedding takes hours here. Compare sizes measured the same way only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import random
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

EXTRAPOLATE_TO = (10_000, 20_000)
ADDED = 10  # papers added to a built index
SECTIONS = ("Introduction", "Methods", "Results", "Discussion")


def default_corpus() -> Path:
    """The SciFact copy next to the repository (a worktree in /work: ../shared/corpus)."""
    return Path(__file__).resolve().parents[2] / "shared" / "corpus" / "beir-scifact"


# -- the synthetic library ---------------------------------------------------------------


class TextSource:
    """SciFact documents (title, abstract) and queries; generated text when absent."""

    def __init__(self, corpus: Path | None) -> None:
        self.docs: list[tuple[str, str]] = []
        self.queries: list[str] = []
        self.label = ""
        path = corpus / "corpus.jsonl" if corpus else None
        if path is not None and path.is_file():
            for line in path.read_text("utf-8").splitlines():
                d = json.loads(line)
                if d.get("text"):
                    self.docs.append((str(d.get("title") or ""), str(d["text"])))
            queries = corpus / "queries.jsonl" if corpus else None
            if queries is not None and queries.is_file():
                self.queries = [
                    str(json.loads(q)["text"]) for q in queries.read_text("utf-8").splitlines()
                ][:50]
            self.label = f"SciFact abstracts ({len(self.docs):,} documents, {corpus})"
        if not self.docs:
            self.label = (
                f"GENERATED text (SciFact not found at {corpus}): retrieval figures are not "
                "meaningful, speed and size figures are"
            )
            rng = random.Random(0)
            words = [f"{a}{b}" for a in ("cell", "gene", "prote", "neur", "immun", "viral")
                     for b in ("in", "ase", "osis", "al", "ic", "oma", "ogen", "ity")]  # fmt: skip
            for i in range(1000):
                text = " ".join(rng.choices(words, k=200)) + "."
                self.docs.append((f"Generated study {i} of {rng.choice(words)}", text))
        if not self.queries:
            self.queries = [t for t, _ in self.docs[:50]]


def paper_pdf(path: Path, number: int, source: TextSource) -> None:
    """Paper `number`: deterministic, about three pages, with a figure and a table."""
    from reportlab.graphics.charts.barcharts import VerticalBarChart
    from reportlab.graphics.shapes import Drawing
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import Paragraph, SimpleDocTemplate, Spacer, Table

    rng = random.Random(number)
    picks = [source.docs[rng.randrange(len(source.docs))] for _ in range(1 + 2 * len(SECTIONS))]
    title = picks[0][0] or f"Study {number}"
    authors = [f"{rng.choice('ABCDEFGHJKLMNPRSTW')}. {rng.choice(_SURNAMES)}" for _ in range(3)]
    styles = getSampleStyleSheet()
    story: list[Any] = [
        Paragraph(_esc(title), styles["Title"]),
        Paragraph(_esc(", ".join(authors)), styles["Normal"]),
        Spacer(1, 12),
        Paragraph("Abstract", styles["Heading2"]),
        Paragraph(_esc(picks[0][1]), styles["BodyText"]),
    ]
    for s, name in enumerate(SECTIONS):
        story.append(Paragraph(f"{s + 1} {name}", styles["Heading2"]))
        for t, text in picks[1 + 2 * s : 3 + 2 * s]:
            story.append(Paragraph(_esc(f"{t}. {text}" if t else text), styles["BodyText"]))
        if name == "Results":
            chart = VerticalBarChart()
            chart.x, chart.y, chart.width, chart.height = 40, 20, 300, 110
            chart.data = [[rng.randint(5, 95) for _ in range(5)]]
            drawing = Drawing(380, 150)
            drawing.add(chart)
            story += [
                drawing,
                Paragraph(f"Figure 1. Outcome by group in {_esc(title[:60])}.", styles["Italic"]),
            ]
            rows = [["Group", "n", "Mean", "SD"]] + [
                [f"G{g}", str(rng.randint(20, 400)), f"{rng.uniform(0, 9):.2f}",
                 f"{rng.uniform(0, 3):.2f}"] for g in range(1, 5)
            ]  # fmt: skip
            story += [Paragraph("Table 1. Characteristics of the groups.", styles["Italic"]),
                      Table(rows)]  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    doc = SimpleDocTemplate(
        str(tmp), pagesize=A4, title=title, author="; ".join(authors), invariant=1
    )
    doc.build(story)
    os.replace(tmp, path)


_SURNAMES = (
    "Garcia", "Okafor", "Lindqvist", "Tanaka", "Moreau", "Novak", "Silva", "Kumar",
    "Schmidt", "Haddad", "Ivanova", "Chen", "Mwangi", "Rossi", "Nguyen", "Kowalski",
)  # fmt: skip


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def build_library(work: Path, n: int, source: TextSource, extra: int = 0) -> Path:
    """A folder of papers 0..n-1 (hard links into a shared pool of built PDFs)."""
    pool = work / "pdfs"
    for i in range(n + extra):
        pdf = pool / f"paper-{i:05d}.pdf"
        if not pdf.is_file():
            paper_pdf(pdf, i, source)
    folder = work / f"library-{n}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for i in range(n):
        _link(pool / f"paper-{i:05d}.pdf", folder / f"paper-{i:05d}.pdf")
    return folder


def _link(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


# -- measurements -------------------------------------------------------------------------


def _rss_mb(who: int) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)


def _dir_mb(path: Path) -> float:
    from zocrates_nb.index.store import dir_size

    return round(dir_size(path) / 2**20, 1)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


def _ms(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def _search_ms(index: Any, queries: list[str], repeat: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds per warm search (CPU: this thread's; a loaded machine
    stretches wall time, CPU time much less)."""
    index.search("warm-up query", limit=10)
    wall, cpu = [], []
    for _ in range(repeat):
        for q in queries:
            c0 = time.thread_time()
            wall.append(_ms(lambda q=q: index.search(q, limit=10)))
            cpu.append((time.thread_time() - c0) * 1000)
    return wall, cpu


def _cpu_s() -> float:
    """CPU seconds of this process and its finished children (the converter workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _tool_ms(index: Any, settings: Any, keys: list[str]) -> dict[str, float]:
    from zocrates_nb.retrieval import RunState, Toolkit

    toc: list[float] = []
    read: list[float] = []
    for key in keys:
        kit = Toolkit(index, RunState.new(settings.retrieval))  # a fresh run: cold bundle cache
        toc.append(_ms(lambda kit=kit, key=key: _ok(kit.get_document_toc(key))))
        kit = Toolkit(index, RunState.new(settings.retrieval))
        read.append(_ms(lambda kit=kit, key=key: _ok(kit.read_document(key, "s2"))))
    return {
        "get_document_toc_ms_p50": _p(toc, 0.5), "get_document_toc_ms_p95": _p(toc, 0.95),
        "read_document_ms_p50": _p(read, 0.5), "read_document_ms_p95": _p(read, 0.95),
    }  # fmt: skip


def _ok(result: object) -> None:
    from zocrates_nb.retrieval import Refusal

    if isinstance(result, Refusal):
        raise RuntimeError(f"tool failed in the benchmark: {result.message}")


def measure(
    work: Path, n: int, source: TextSource, repeat: int, base: dict[str, Any]
) -> dict[str, Any]:
    """Every figure for one library size (a fresh data home under `work`; `base`: the
    settings it runs with)."""
    from zocrates_nb.config import Settings
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import open_library

    folder = build_library(work, n, source, extra=ADDED)
    home = work / f"home-{n}"
    shutil.rmtree(home, ignore_errors=True)
    settings = Settings.model_validate(base)
    index = Index.open(home, settings)
    cpu0 = _cpu_s()
    report = index_library(open_library(folder=folder), index, progress=False)
    cpu = _cpu_s() - cpu0
    out: dict[str, Any] = {"papers": n, "errors": len(report.errors)}
    pages = sum(
        index.bundle(d.doc_key).toc.pages or 0 for d in index.documents() if d.status == "done"
    )
    chunks = index.catalog.chunk_count()
    out.update(
        pages=pages, chunks=chunks, cold_index_s=round(report.seconds, 1),
        pages_per_s=round(pages / report.seconds, 2),
        chunks_per_s=round(chunks / report.seconds, 2),
        cold_index_cpu_s=round(cpu, 1), pages_per_cpu_s=round(pages / cpu, 2),
        cold_index_steps_s=report.to_json()["timings"],
        peak_rss_mb_indexer=_rss_mb(resource.RUSAGE_SELF),
        peak_rss_mb_converter=_rss_mb(resource.RUSAGE_CHILDREN),
        index_mb={part: _dir_mb(home / part) for part in ("index", "bundles", "documents")},
    )  # fmt: skip
    again = []
    for _ in range(max(repeat, 1)):
        t0 = time.perf_counter()  # a real re-run: the folder read again, then compared
        index_library(open_library(folder=folder), index, progress=False)
        again.append(time.perf_counter() - t0)
    out["reindex_no_change_s_median"] = round(statistics.median(again), 2)
    for i in range(n, n + ADDED):
        _link(work / "pdfs" / f"paper-{i:05d}.pdf", folder / f"paper-{i:05d}.pdf")
    added = index_library(open_library(folder=folder), index, progress=False)
    out[f"add_{ADDED}_papers_s"] = round(added.seconds, 1)
    ms, cpu_ms = _search_ms(index, source.queries, repeat)
    out["search_warm_ms_p50"], out["search_warm_ms_p95"] = _p(ms, 0.5), _p(ms, 0.95)
    out["search_cpu_ms_p50"] = _p(cpu_ms, 0.5)
    keys = [it.key for it in index.items()]
    sample = random.Random(n).sample(keys, min(20, len(keys)))
    out.update(_tool_ms(index, settings, sample))
    index.close()
    return out


@contextlib.contextmanager
def chroma_server(path: Path) -> Iterator[int]:
    """A real `chroma run` server on a free loopback port (stopped on exit)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    exe = Path(sys.executable).with_name("chroma")
    cmd = [str(exe) if exe.exists() else "chroma", "run", "--path", str(path),
           "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    log = open(path.parent / "chroma-server.log", "wb")  # noqa: SIM115 - closed below
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}  # the server reports nothing home
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"chroma run did not start (see {log.name})")
            time.sleep(0.5)
        yield port
    finally:
        proc.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=20)
        if proc.poll() is None:
            proc.kill()
        log.close()


def measure_server(
    work: Path, n: int, source: TextSource, repeat: int, base: dict[str, Any]
) -> dict[str, Any]:
    """Embedded Chroma vs a `chroma run` server on the same papers: index from the cached
    bundles of the cold run (embedding + writes, no conversion) and warm search."""
    from zocrates_nb.config import Settings
    from zocrates_nb.index import Index, index_library
    from zocrates_nb.library import open_library

    folder = work / f"library-{n}"
    out: dict[str, Any] = {}
    for mode in ("embedded", "server"):
        home = work / f"home-{n}-{mode}"
        shutil.rmtree(home, ignore_errors=True)
        shutil.copytree(work / f"home-{n}" / "bundles", home / "bundles")
        with contextlib.ExitStack() as stack:
            chroma: dict[str, Any] = {}
            if mode == "server":
                store = home / "chroma-server"
                store.mkdir(parents=True)
                chroma = {"mode": "server", "port": stack.enter_context(chroma_server(store))}
            index_base = base.get("index", {})
            settings = Settings.model_validate({**base, "index": {**index_base, "chroma": chroma}})
            index = Index.open(home, settings)
            report = index_library(open_library(folder=folder), index, progress=False)
            ms, cpu_ms = _search_ms(index, source.queries, repeat)
            out[mode] = {
                "search_cpu_ms_p50": _p(cpu_ms, 0.5),
                "index_from_bundles_s": round(report.seconds, 1),
                "steps_s": report.to_json()["timings"],
                "search_warm_ms_p50": _p(ms, 0.5), "search_warm_ms_p95": _p(ms, 0.95),
            }  # fmt: skip
            index.close()
    return out


def extrapolate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure at 10k/20k papers from the growth between the two largest sizes
    (a power law through them; linear when only one size was measured)."""
    keys = ["cold_index_s", "reindex_no_change_s_median", f"add_{ADDED}_papers_s",
            "search_warm_ms_p50", "search_warm_ms_p95", "search_cpu_ms_p50",
            "get_document_toc_ms_p50",
            "read_document_ms_p50", "peak_rss_mb_indexer"]  # fmt: skip
    a, b = (rows[-2], rows[-1]) if len(rows) > 1 else (None, rows[-1])
    steps = dict(b["cold_index_steps_s"])
    out: dict[str, Any] = {}
    for target in EXTRAPOLATE_TO:
        est: dict[str, Any] = {}
        for key in [*keys, "index_mb_total"]:
            y1 = sum(b["index_mb"].values()) if key == "index_mb_total" else b[key]
            exponent = 1.0
            if a is not None:
                y0 = sum(a["index_mb"].values()) if key == "index_mb_total" else a[key]
                if y0 > 0 and y1 > 0 and b["papers"] != a["papers"]:
                    exponent = math.log(y1 / y0) / math.log(b["papers"] / a["papers"])
            est[key] = round(y1 * (target / b["papers"]) ** exponent, 1)
            est[key + "_growth_exponent"] = round(exponent, 2)
        scale = target / b["papers"]
        est["cold_index_steps_s"] = {k: round(v * scale, 1) for k, v in steps.items()}
        est["cold_index_dominant_step"] = max(steps, key=lambda k: steps[k]) if steps else ""
        out[f"{target:,}_papers"] = est
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    sizes = sorted({int(p) for p in str(args.papers).split(",") if p.strip()})
    if not sizes or sizes[0] < 1:
        raise ValueError("--papers takes one or more positive sizes, e.g. 500 or 100,500")
    work = Path(args.work).expanduser() if args.work else Path(tempfile.mkdtemp(prefix="zoc-"))
    work.mkdir(parents=True, exist_ok=True)
    source = TextSource(Path(args.corpus) if args.corpus else default_corpus())
    result: dict[str, Any] = {"text": source.label, "work": str(work), "sizes": []}
    with contextlib.ExitStack() as stack:
        base: dict[str, Any] = {}
        result["vectors"] = "the packaged model, on this machine"
        if getattr(args, "vectors", "model") == "hashed":
            from zocrates_nb.devtools.embedding_server import EmbeddingServer

            srv = stack.enter_context(EmbeddingServer(vectors="hashed"))
            base = {"index": {"embedding": {
                "provider": "openai-compatible", "base_url": srv.url, "model": srv.model,
                "batch_size": 256,
            }}}  # fmt: skip
            result["vectors"] = (
                "HASHED stand-in vectors from a loopback embedding server: embedding compute "
                "excluded (figures compare only with other hashed runs)"
            )
        for n in sizes:
            row = measure(work, n, source, args.repeat, base)
            result["sizes"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)  # progress of a long run
        result["extrapolated"] = extrapolate(result["sizes"])
        if args.chroma_server:
            result["chroma_embedded_vs_server"] = measure_server(
                work, sizes[-1], source, args.repeat, base
            )
    return result
