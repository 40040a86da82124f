"""The built-in sample library renders deterministically into real files."""

import hashlib
from pathlib import Path

import pytest

from zocrates_nb import sample


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_sample_builds_pdf_html_and_markdown(tmp_path: Path) -> None:
    folder = sample.build(tmp_path / "a")
    names = sorted(p.suffix for p in folder.iterdir())
    assert names.count(".pdf") >= 2 and ".html" in names and ".md" in names
    assert all(p.stat().st_size > 500 for p in folder.iterdir())


def test_sample_is_byte_stable_and_rebuild_keeps_mtimes(tmp_path: Path) -> None:
    a = sample.build(tmp_path / "a")
    assert digest(a) == digest(sample.build(tmp_path / "b"))
    mtimes = {p.name: p.stat().st_mtime_ns for p in a.iterdir()}
    sample.build(a)
    assert mtimes == {p.name: p.stat().st_mtime_ns for p in a.iterdir()}


def test_the_shipped_pdfs_are_what_the_sources_render(tmp_path: Path) -> None:
    """The wheel ships the rendered PDFs (no reportlab at run time): a source edited without
    `python -m zocrates_nb.sample` fails here."""
    pytest.importorskip("reportlab", reason="the `samples` extra renders the sample's PDFs")
    from zocrates_nb import sample

    for fresh in sample.render(tmp_path):
        assert fresh.read_bytes() == (sample.RENDERED / fresh.name).read_bytes(), fresh.name
