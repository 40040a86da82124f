"""Catalogue format versions (`CATALOGUE_VERSION`, kept in `PRAGMA user_version`).

tests/fixtures/catalogue-v1/catalog.sqlite was written by the first release's own code (see
make_catalogue.py there) for the Markdown papers beside it: a committed file rather than one
generated at test time, because the old code may no longer import against today's package.
Until `zocrates-nb index` rebuilds it, status, search and ask say so in one plain line; the
rebuild reuses the cached bundles and keeps the settings and sessions. A catalogue newer than
the code is refused and left as it is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from agents_helpers import run, terminal

from zocrates_nb import cli
from zocrates_nb.app import App
from zocrates_nb.index import CATALOGUE_VERSION, Index, IndexVersionError
from zocrates_nb.index.lexical import Catalog

FIXTURE = Path(__file__).parent / "fixtures" / "catalogue-v1"
OLDER = "was built by an older version of zocrates-nb; run `zocrates-nb index` to rebuild it"
NEWER = "was built by a newer version of zocrates-nb"


def _cli(capsys: pytest.CaptureFixture[str], home: Path, *args: str) -> tuple[int, str, str]:
    code = cli.main(["--home", str(home), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _content(path: Path) -> list[str]:
    """Schema and rows (opening in WAL mode rewrites header bytes, not content)."""
    db = sqlite3.connect(path)
    try:
        return list(db.iterdump())
    finally:
        db.close()


def _user_version(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return int(db.execute("PRAGMA user_version").fetchone()[0])


def _swap_catalogue(home: Path, replacement: Path) -> Path:
    catalog = home / "index" / "catalog.sqlite"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{catalog}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(replacement, catalog)
    return catalog


def test_the_fixture_is_a_first_release_catalogue() -> None:
    with sqlite3.connect(FIXTURE / "catalog.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 0
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        assert meta["schema_version"] == "1"
        assert db.execute("SELECT count(*) FROM chunks").fetchone()[0] > 0
    assert CATALOGUE_VERSION > 1


def test_an_older_catalogue_is_reported_until_index_rebuilds_it_keeping_bundles_and_settings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = shutil.copytree(FIXTURE / "library", tmp_path / "library")
    home = tmp_path / "home"
    # The user's data home: bundles, documents and vectors, settings, then the first release's
    # catalogue of the same library in place of today's.
    assert _cli(capsys, home, "index", "--folder", str(library), "--json")[0] == 0
    settings = home / "zocrates_config.json"
    settings.write_text(json.dumps({"retrieval": {"budget": 7}}), "utf-8")
    bundles = sorted(p.relative_to(home) for p in (home / "bundles").rglob("*") if p.is_file())
    assert bundles
    catalog = _swap_catalogue(home, FIXTURE / "catalog.sqlite")
    before = _content(catalog)

    for command in (["status"], ["search", "leader election"]):
        code, out, err = _cli(capsys, home, *command)
        assert code == 2 and out == ""
        typed = OLDER.replace("`zocrates-nb index`", f"`zocrates-nb --home {home} index`")
        assert err == (  # the hint as this user types it: with the --home they gave
            f"zocrates-nb: error: the index in {home / 'index'} {typed}"
            " (bundles, settings and sessions are kept)\n"
        )
    with App.open(home) as app:
        error = terminal(run(app.ask("How does Raft elect a leader?", hitl=False)))
        assert error.type == "error" and OLDER in error.message
        assert "Error" not in error.message and "Traceback" not in error.message
        session_ids = [s.session_id for s in app.sessions()]
        assert session_ids and app.doctor().index_health.ok is False
    assert _content(catalog) == before and _user_version(catalog) == 0  # nothing changed

    code, out, _ = _cli(capsys, home, "index", "--folder", str(library), "--json")
    report = json.loads(out)
    assert code == 0 and report["errors"] == []
    assert (report["converted"], report["reused"]) == (0, 2)  # from the cached bundles
    assert _user_version(catalog) == CATALOGUE_VERSION
    assert settings.read_text("utf-8") == json.dumps({"retrieval": {"budget": 7}})
    assert sorted(p.relative_to(home) for p in (home / "bundles").rglob("*") if p.is_file()) \
        == bundles

    code, out, _ = _cli(capsys, home, "search", "how is a leader elected", "--json")
    assert code == 0 and json.loads(out)[0]["title"] == "Understandable Consensus with Raft"
    with Index.open(home) as index:
        assert index.dense.ids() == set(index.catalog.chunk_ids())  # no vector of the old era
        assert index.catalog.chunk_count() == report["chunks"] > 0
    with App.open(home) as app:
        assert [s.session_id for s in app.sessions()] == session_ids
        assert app.settings.retrieval.budget == 7


def test_a_newer_catalogue_is_refused_and_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    Catalog(home / "index" / "catalog.sqlite").close()
    catalog = home / "index" / "catalog.sqlite"
    with sqlite3.connect(catalog) as db:
        db.execute(f"PRAGMA user_version = {CATALOGUE_VERSION + 1}")
    sha = _sha(catalog)

    with pytest.raises(IndexVersionError, match=NEWER):
        Index.open(home)
    library = shutil.copytree(FIXTURE / "library", tmp_path / "library")
    for command in (["status"], ["index", "--folder", str(library)]):
        code, out, err = _cli(capsys, home, *command)
        assert code == 2 and out == ""
        assert err == (
            f"zocrates-nb: error: the index in {home / 'index'} {NEWER} (catalogue format "
            f"{CATALOGUE_VERSION + 1}; this version reads {CATALOGUE_VERSION}): upgrade "
            "zocrates-nb, or use another data home (--home)\n"
        )
    assert _sha(catalog) == sha and _user_version(catalog) == CATALOGUE_VERSION + 1


def test_a_rebuild_by_another_connection_is_seen_and_leaves_a_fresh_schema(
    tmp_path: Path,
) -> None:
    fresh = Catalog(tmp_path / "fresh" / "catalog.sqlite")
    assert _user_version(fresh.path) == CATALOGUE_VERSION and not fresh.outdated
    fresh_schema = fresh.query("SELECT type, name FROM sqlite_master ORDER BY name")

    path = tmp_path / "old" / "catalog.sqlite"
    path.parent.mkdir()
    shutil.copyfile(FIXTURE / "catalog.sqlite", path)
    reader, writer = Catalog(path), Catalog(path)
    assert reader.outdated and writer.outdated
    with pytest.raises(IndexVersionError, match=OLDER):
        reader.chunk_count()
    writer.rebuild()
    assert not reader.outdated and reader.chunk_count() == 0
    assert [tuple(r) for r in reader.query(
        "SELECT type, name FROM sqlite_master ORDER BY name"
    )] == [tuple(r) for r in fresh_schema]
    assert reader.get_meta("schema_version") is None  # the old meta went with the old tables
    writer.set_meta("embedding_model", "m")
    for c in (reader, writer, fresh):
        c.close()
    reopened = Catalog(path)  # opening a current catalogue rebuilds nothing
    assert reopened.get_meta("embedding_model") == "m"
    reopened.close()


def test_the_beir_benchmark_rebuilds_its_own_outdated_cache(tmp_path: Path) -> None:
    """`bench beir` keeps its index under the data home: an old one is its cache, not an error."""
    from zocrates_nb.bench.retrieval import bench_beir

    data = tmp_path / "beir"
    (data / "qrels").mkdir(parents=True)
    docs = [("d1", "Raft elects a leader with randomized election timeouts."),
            ("d2", "Water tomato plants deeply at the base."),
            ("d3", "BM25 weights a query term by its inverse document frequency.")]
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": "", "text": t}) + "\n" for i, t in docs), "utf-8")
    (data / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "how is a raft leader elected"}) + "\n", "utf-8")
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n", "utf-8")
    args = argparse.Namespace(dir=data, home=tmp_path / "home", json=True, split="test",
                              queries_limit=None)
    assert bench_beir(args)["index_cached"] is False
    (bench_home,) = (tmp_path / "home" / "bench").iterdir()
    _swap_catalogue(bench_home, FIXTURE / "catalog.sqlite")
    again = bench_beir(args)
    assert again["index_cached"] is False and again["methods"]["bm25"]["ndcg@10"] == 1.0
    assert _user_version(bench_home / "index" / "catalog.sqlite") == CATALOGUE_VERSION
