"""Damaged derived data is found and rebuilt from the cached bundles; a damaged sessions.db is
moved aside and kept; doctor says where data can go. Real SQLite and Chroma files, damaged on
disk the way a crash, a full disk or a stray `rm` leaves them."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_kit import good_markdown, small_pdf

from zocrates_nb.app import App
from zocrates_nb.cli import main
from zocrates_nb.config import Settings
from zocrates_nb.index import Index, IndexDamaged, index_library
from zocrates_nb.library import read_folder

REBUILT = "(no paper converted again)."


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(library folder, data home): two PDFs and a note file, indexed once; tests damage
    copies of the home."""
    base = tmp_path_factory.mktemp("heal")
    folder = base / "library"
    folder.mkdir()
    small_pdf(folder / "harbour.pdf", "Sediment cores hold microplastics.", pages=3)
    small_pdf(folder / "estuary.pdf", "Estuary mud traps heavy metals.", pages=2)
    (folder / "kelp.md").write_text(good_markdown("Kelp Forests", "Kelp shelters rockfish."))
    with Index.open(base / "home", Settings()) as index:
        report = index_library(read_folder(folder), index, progress=False)
        assert report.converted == 3 and not report.errors
    return folder, base / "home"


@pytest.fixture
def home(indexed: tuple[Path, Path], tmp_path: Path) -> Path:
    copy = tmp_path / "home"
    shutil.copytree(indexed[1], copy)
    return copy


def _index(app: App, folder: Path) -> tuple[list[str], int, int]:
    report = app.index(folder=folder)
    assert not report.errors
    return report.repairs, report.converted, report.reused


def _truncate(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.truncate(path.stat().st_size // 2)


def _scribble(path: Path) -> None:
    with open(path, "r+b") as fh:
        fh.write(b"not a database at all " * 8)


@pytest.mark.parametrize(("damage", "found"), [
    (_truncate, "database disk image is malformed"),
    (_scribble, "file is not a database"),
], ids=["truncated", "scribbled"])  # fmt: skip
def test_a_damaged_catalogue_is_named_then_rebuilt_without_converting(
    indexed: tuple[Path, Path], home: Path, damage: Callable[[Path], None], found: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    folder = indexed[0]
    catalog = home / "index" / "catalog.sqlite"
    damage(catalog)
    expected = (f"The index catalogue {catalog} is damaged ({found}): run `zocrates-nb --home "
                f"{home} index` to rebuild it from the cached conversions (no paper is converted "
                "again).")  # the hint as typed: with the --home given
    for command in (["status"], ["search", "kelp rockfish"]):
        assert main(["--home", str(home), *command]) == 2
        assert capsys.readouterr().err == f"zocrates-nb: error: {expected}\n"
    bundles = sorted(p.name for p in (home / "bundles").rglob("*"))

    assert main(["--home", str(home), "index", "--folder", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "0 converted, 3 from cache" in out
    assert (f"  repaired The index catalogue was damaged ({found}): it was rebuilt from the "
            f"cached conversions {REBUILT}") in out
    assert sorted(p.name for p in (home / "bundles").rglob("*")) == bundles
    with App.open(home) as app:
        status = app.status()
        assert status.vectors and status.vectors >= status.chunks and status.problems == []
        assert {h.title for h in app.search("rockfish kelp")} >= {"Kelp Forests"}


@pytest.mark.parametrize("damage", ["deleted", "scribbled"])
def test_a_lost_or_damaged_vector_store_is_found_and_rebuilt(
    indexed: tuple[Path, Path], home: Path, damage: str
) -> None:
    folder = indexed[0]
    chroma = home / "index" / "chroma"
    if damage == "deleted":
        shutil.rmtree(chroma)
    else:
        _scribble(chroma / "chroma.sqlite3")
    with App.open(home) as app:
        status = app.status()
        assert status.chunks > 0
        (problem,) = status.problems
        if damage == "deleted":
            assert status.vectors == 0
            assert problem == (f"The vector store holds 0 vectors for {status.chunks} chunks, "
                               "so dense search misses papers: run `zocrates-nb index` to "
                               "rebuild them from the cached conversions.")  # fmt: skip
        else:
            assert status.vectors is None
            assert problem == (f"The vector store {chroma} cannot be read (file is not a "
                               "database): run `zocrates-nb index` to rebuild it from the "
                               "cached conversions.")  # fmt: skip
        health = app.doctor().index_health
        assert health.ok is False and health.vectors
        with pytest.raises(IndexDamaged, match="run `zocrates-nb index`"):
            app.search("rockfish")  # never dense search silently off
        repairs, converted, reused = _index(app, folder)
        assert (converted, reused) == (0, 3)
        (line,) = repairs
        assert line.endswith("no paper converted again).") and "vector store" in line
        status = app.status()
        assert status.vectors and status.vectors >= status.chunks and status.problems == []
        assert app.doctor().index_health.ok is True
        assert app.search("rockfish kelp")[0].title == "Kelp Forests"


def test_vectors_lost_for_one_document_are_embedded_again(
    indexed: tuple[Path, Path], home: Path
) -> None:
    with App.open(home) as app:
        index = app.library_index
        kelp = next(d for d in index.documents() if d.kind == "markdown")
        with index.writer_lock():
            index.dense.delete_documents([kelp.doc_key])
        assert app.status().problems
        repairs, converted, reused = _index(app, indexed[0])
        assert (converted, reused) == (0, 1)
        assert repairs == [f"The vector store was missing the vectors of {kelp.n_chunks} of "
                           f"{app.status().chunks} chunks: 1 documents were embedded again "
                           f"from the cached conversions {REBUILT}"]  # fmt: skip
        assert app.status().problems == []


def test_a_damaged_sessions_db_is_moved_aside_and_kept(
    indexed: tuple[Path, Path], home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = home / "sessions.db"
    with App.open(home) as app:
        app.new_session("kept conversation")
    _truncate(sessions)
    damaged = hashlib.sha256(sessions.read_bytes()).hexdigest()

    assert main(["--home", str(home), "index", "--folder", str(indexed[0])]) == 0
    err = capsys.readouterr().err
    (aside,) = home.glob("sessions.db.damaged-*")
    assert hashlib.sha256(aside.read_bytes()).hexdigest() == damaged  # kept as it was
    assert (f"{sessions} could not be read (database disk image is malformed): it was moved "
            f"to {aside} (kept as it was) and a fresh sessions.db was started") in err
    with App.open(home) as app:
        assert app.notices == [] and app.sessions() == []
        assert app.doctor().sessions == 0
    sqlite3.connect(sessions).execute("PRAGMA quick_check").fetchone()


def test_doctor_says_nothing_leaves_only_when_nothing_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    home = tmp_path / "home"
    with App.open(home) as app:
        privacy = app.doctor().privacy
        assert privacy.leaves is False
        assert privacy.summary.startswith("nothing leaves this machine")
        assert app.doctor().models.summary.endswith("nothing leaves this machine")
    config = {
        "index": {"embedding": {"provider": "openai-compatible", "model": "nomic-embed-text",
                                "base_url": "http://gpu-box.lab:11434/v1"},
                  "chroma": {"mode": "embedded"}},
        "online": {"enabled": True},
        "models": {"verifier": "ollama:qwen3"},
    }  # fmt: skip
    (home / "zocrates_config.json").write_text(json.dumps(config))
    with App.open(home) as app:
        info = app.doctor()
    privacy, models = info.privacy, info.models
    assert privacy.leaves is True and "nothing leaves" not in models.summary
    where = {d.what: (d.where, d.leaves) for d in privacy.destinations}
    assert where["embedding server"] == ("http://gpu-box.lab:11434/v1", True)
    assert where["online source openalex"] == ("https://api.openalex.org", True)
    assert where["model ollama:qwen3 (verifier)"] == ("http://localhost:11434/v1", False)
    assert privacy.summary.startswith("data leaves this machine: to ")
    assert "embedding server at http://gpu-box.lab:11434/v1" in privacy.summary


def test_doctor_names_a_chroma_server_on_another_machine() -> None:
    from zocrates_nb.app.doctor import ModelsInfo, privacy

    settings = Settings.model_validate(
        {"index": {"chroma": {"mode": "server", "host": "vectors.lab", "port": 8000}}})
    found = privacy(settings, ModelsInfo(roles={}))
    assert found.leaves is True
    assert found.summary == "data leaves this machine: to Chroma server at http://vectors.lab:8000"
    local = Settings.model_validate({"index": {"chroma": {"mode": "server", "port": 8000}}})
    assert privacy(local, ModelsInfo(roles={})).leaves is False


def test_a_catalogue_damaged_under_an_open_app_or_emptied_is_rebuilt(
    indexed: tuple[Path, Path], home: Path
) -> None:
    folder, catalog = indexed[0], home / "index" / "catalog.sqlite"
    with App.open(home) as app:
        chunks = app.status().chunks
        _scribble(catalog)  # while this process holds it open (and may still read it cached)
        repairs, converted, reused = _index(app, folder)
        assert (repairs, converted, reused) == ([
            "The index catalogue was damaged (file is not a database): it was rebuilt from the "
            f"cached conversions {REBUILT}"], 0, 3)  # fmt: skip
        assert app.status().chunks == chunks
    catalog.write_bytes(b"")  # emptied: SQLite reads it as a new, empty database
    with App.open(home) as app:
        repairs, converted, reused = _index(app, folder)
        assert (converted, reused) == (0, 3) and len(repairs) == 1
        assert repairs[0].startswith("The index catalogue was empty while the vector store held")
        status = app.status()
        assert status.chunks == chunks and status.problems == []
