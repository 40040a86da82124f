"""How BM25 (SQLite FTS5) and dense (embedded Chroma) query cost grow with the chunk count.

    python scripts/bench_search_growth.py WORKDIR 5000,20000,80000

Chunks are SciFact abstracts (the test corpus's beir-scifact, located as scripts/corpus_dir.py
says) written through the real `Catalog`; vectors are random unit vectors upserted through
the real `DenseStore`. Reported
per size: BM25 CPU ms p50 over 50 SciFact queries (this thread's CPU time: a loaded machine
stretches wall time far more), the same with the query's terms found in more than 10% of the
chunks left out (with the top-10 overlap that costs), and the dense query's wall ms p50.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from corpus_dir import DEFAULT as CORPUS

from zocrates_nb.config import ChromaSettings
from zocrates_nb.index.dense import DenseStore
from zocrates_nb.index.lexical import BM25_WEIGHTS, Catalog
from zocrates_nb.index.model import Chunk, DocumentRecord, SearchFilter
from zocrates_nb.text import stem

SCIFACT = CORPUS / "beir-scifact"
PER_DOC = 40  # chunks per document (the corpus library has 41.6 per paper)


def _chunk(doc: int, j: int, text: str = "", title: str = "") -> Chunk:
    return Chunk(chunk_id=f"D{doc}:{j}", item_key=f"I{doc}", attachment_key=f"D{doc}",
                 line_start=j, line_end=j, section="Results", section_id="s3",
                 chunk_type="body", title=title, authors=[], year=2020, page=1, page_end=1,
                 text=text)  # fmt: skip


def _timed_ids(db: sqlite3.Connection, sql: str, match: str) -> tuple[float, list[str]]:
    """(this thread's CPU ms, chunk ids) of one BM25 query."""
    c0 = time.thread_time()
    ids = [r[0] for r in db.execute(sql, (match,))]
    return (time.thread_time() - c0) * 1000, ids


def main() -> None:
    work, sizes = Path(sys.argv[1]), [int(x) for x in sys.argv[2].split(",")]
    work.mkdir(parents=True, exist_ok=True)
    lines = (SCIFACT / "corpus.jsonl").read_text("utf-8").splitlines()
    docs = [json.loads(line) for line in lines]
    queries = [json.loads(q)["text"] for q in (SCIFACT / "queries.jsonl").read_text().splitlines()]
    queries = queries[:50]
    rng, vecs = random.Random(0), np.random.default_rng(0)
    w = BM25_WEIGHTS
    sql = (
        "SELECT c.chunk_id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid"
        f" WHERE chunks_fts MATCH ? ORDER BY bm25(chunks_fts, {w[0]}, {w[1]}, {w[2]}), c.id"
        " LIMIT 50"
    )
    for n in sizes:
        path = work / f"catalog-{n}.sqlite"
        path.unlink(missing_ok=True)
        catalog = Catalog(path)
        dense = DenseStore(ChromaSettings(collection=f"growth{n}"), work / f"chroma-{n}", "x")
        for d in range(0, n, PER_DOC):
            rec = DocumentRecord(doc_key=f"D{d}", item_key=f"I{d}", kind="pdf", title="t")
            chunks = []
            for j in range(d, min(n, d + PER_DOC)):
                a, b = docs[rng.randrange(len(docs))], docs[rng.randrange(len(docs))]
                chunks.append(_chunk(d, j, a["text"] + " " + b["text"][:600], a["title"]))
            catalog.begin_documents([rec])
            catalog.finish_documents([(rec, "f", chunks)])
            v = vecs.standard_normal((len(chunks), 384)).astype(np.float32)
            dense.upsert(chunks, (v / np.linalg.norm(v, axis=1, keepdims=True)).tolist())
        db = catalog._db
        db.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, chunks_fts, 'row')")
        df = {r[0]: r[1] for r in db.execute("SELECT term, doc FROM temp.vocab")}
        full: list[float] = []
        pruned: list[float] = []
        overlap: list[float] = []
        dense_ms: list[float] = []
        for q in queries:
            words = list(dict.fromkeys(x.casefold() for x in re.findall(r"\w+", q)))
            rare = [x for x in words if df.get(stem(x), 0) <= 0.1 * n] or words
            ms_full, ids_full = _timed_ids(db, sql, " OR ".join(f'"{x}"' for x in words))
            ms_rare, ids_rare = _timed_ids(db, sql, " OR ".join(f'"{x}"' for x in rare))
            full.append(ms_full)
            pruned.append(ms_rare)
            overlap.append(len(set(ids_full[:10]) & set(ids_rare[:10])) / 10)
            qv = vecs.standard_normal(384).astype(np.float32)
            t0 = time.perf_counter()
            dense.query((qv / np.linalg.norm(qv)).tolist(), SearchFilter(), 50)
            dense_ms.append((time.perf_counter() - t0) * 1000)
        print(json.dumps({
            "chunks": n, "catalog_mb": round(path.stat().st_size / 2**20, 1),
            "bm25_cpu_ms_p50": round(statistics.median(full), 1),
            "bm25_common_terms_dropped_cpu_ms_p50": round(statistics.median(pruned), 1),
            "top10_overlap_when_dropped": round(statistics.mean(overlap), 3),
            "dense_ms_p50": round(statistics.median(dense_ms), 1),
        }), flush=True)  # fmt: skip
        catalog.close()


if __name__ == "__main__":
    main()
