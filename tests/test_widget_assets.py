"""The panel's front end (the bundle widgets/dist/chat.js + the stylesheet widgets/src/chat.css) is
found from a source checkout and ships inside the wheel, byte for byte."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from zocrates_nb.widget import ChatWidget, asset_path, assets

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "widgets" / "dist"
STYLESHEET = ROOT / "widgets" / "src" / "chat.css"  # the only copy: CSS needs no build step
ASSETS = {"chat.js": DIST / "chat.js", "chat.css": STYLESHEET}


def test_a_checkout_loads_the_committed_bundle() -> None:
    for name, source in ASSETS.items():
        assert asset_path(name).read_bytes() == source.read_bytes()
    assert str(ChatWidget._esm) == (DIST / "chat.js").read_text("utf-8")
    assert str(ChatWidget._css) == STYLESHEET.read_text("utf-8")


def test_without_package_data_the_source_tree_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # E.g. a checkout whose zocrates_nb/static symlinks did not survive (a zip download).
    monkeypatch.setattr(assets.resources, "files", lambda package: tmp_path)
    for name, source in ASSETS.items():
        assert asset_path(name) == source


def test_the_wheel_ships_the_bundle_as_package_data(tmp_path: Path) -> None:
    # Build from a copy, so the checkout gets no build/ or egg-info litter.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "jupyter-config", src / "jupyter-config")
    shutil.copytree(ROOT / "zocrates_nb", src / "zocrates_nb", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(DIST, src / "widgets" / "dist")
    (src / "widgets" / "src").mkdir()
    shutil.copy(STYLESHEET, src / "widgets" / "src" / "chat.css")
    out = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(src)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = out.glob("zocrates_nb-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name, source in ASSETS.items():
            assert z.read(f"zocrates_nb/static/{name}") == source.read_bytes()
