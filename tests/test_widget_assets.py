"""The panel's front end (widgets/dist/chat.js + chat.css) is found from a source checkout and
ships inside the wheel, byte for byte."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from zocrates_nb.widget import ChatWidget, asset_path

ROOT = Path(__file__).resolve().parents[1]
DIST = ROOT / "widgets" / "dist"


def test_a_checkout_loads_the_committed_bundle() -> None:
    for name in ("chat.js", "chat.css"):
        assert asset_path(name).read_bytes() == (DIST / name).read_bytes()
    assert str(ChatWidget._esm) == (DIST / "chat.js").read_text("utf-8")
    assert str(ChatWidget._css) == (DIST / "chat.css").read_text("utf-8")


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
    out = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(src)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = out.glob("zocrates_nb-*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in ("chat.js", "chat.css"):
            assert z.read(f"zocrates_nb/static/{name}") == (DIST / name).read_bytes()
