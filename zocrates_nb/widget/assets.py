"""Where the chat panel's front end is: the bundled `chat.js` and the one stylesheet."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def asset_path(name: str) -> Path:
    """`chat.js` (the bundle, `widgets/dist/`) / `chat.css` (the one stylesheet, `widgets/src/`):
    shipped as package data (`zocrates_nb/static/`, symlinks into `widgets/` in a checkout), else
    taken from the source tree."""
    folder = "dist" if name.endswith(".js") else "src"  # the CSS needs no build step
    candidates = [
        Path(str(resources.files("zocrates_nb").joinpath("static", name))),
        Path(__file__).resolve().parents[2] / "widgets" / folder / name,
    ]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"the chat panel's {name} is missing (looked in {', '.join(map(str, candidates))}); "
        "rebuild it with `cd widgets && npm ci && npm run build`"
    )
