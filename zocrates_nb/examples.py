"""Which library the example notebooks (and `make lab`) use, without ever touching the user's.

A researcher who opens the examples on a data home that already holds an indexed library must
keep it whole: the notebooks then use that library as it is (they may ask questions: sessions
are additive) and never index into it. With no indexed library, the built-in sample is indexed
into a data home of its own, `<home>/samples/sample`, so that indexing it never replaces
anything either. Example side data (a folder library, an example configuration) also lives under
`<home>/samples/`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zocrates_nb.config import default_home

if TYPE_CHECKING:
    from zocrates_nb.app import App

SAMPLES_DIR = "samples"
CATALOG = Path("index") / "catalog.sqlite"


@dataclass
class ExampleLibrary:
    """The library the examples run on: the user's (read-only use) or the sample (own home)."""

    app: App
    home: Path
    is_sample: bool
    items: int
    chunks: int

    def __str__(self) -> str:
        which = "the built-in sample library" if self.is_sample else "your indexed library"
        return (f"Using {which}: {self.items} item{'s' if self.items != 1 else ''}, "
                f"{self.chunks:,} passages, in {self.home}")


def samples_home(home: str | os.PathLike[str] | None = None) -> Path:
    """`<home>/samples`: where the examples keep their own data homes and files."""
    return _home(home) / SAMPLES_DIR


def has_indexed_library(home: str | os.PathLike[str] | None = None) -> bool:
    """The data home holds an index with passages (checked without creating anything)."""
    root = _home(home)
    if not (root / CATALOG).is_file():
        return False
    from zocrates_nb.app import App

    with App.open(root) as app:
        return app.status().chunks > 0


def example_library(home: str | os.PathLike[str] | None = None) -> ExampleLibrary:
    """The user's indexed library when `home` holds one, else the sample indexed in its own home.

    Never indexes into `home` itself: the user's items and passages stay as they are.
    """
    from zocrates_nb.app import App

    root = _home(home)
    if has_indexed_library(root):
        app, is_sample = App.open(root), False
    else:
        root = samples_home(root) / "sample"
        app, is_sample = App.open(root), True
        app.index(sample=True)  # incremental: a re-run only checks the files
    status = app.status()
    return ExampleLibrary(app=app, home=root, is_sample=is_sample, items=status.items,
                          chunks=status.chunks)


def _home(home: str | os.PathLike[str] | None) -> Path:
    return Path(home).expanduser() if home is not None else default_home()


def main() -> None:
    """`python -m zocrates_nb.examples`: prepare the examples' library (used by `make lab`)."""
    print(example_library())


if __name__ == "__main__":
    main()
