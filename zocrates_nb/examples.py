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
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from zocrates_nb.config import default_home

if TYPE_CHECKING:
    from zocrates_nb.app import App

SAMPLES_DIR = "samples"
CATALOG = Path("index") / "catalog.sqlite"
QUICKSTART = "notebooks/01-quickstart.ipynb"


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
        # a home `make lab` chose for the sample (its $ZOCRATES_HOME) is still the sample
        app = App.open(root)
        source = app.library_source()
        is_sample = source is not None and source.kind == "sample"
    else:
        root = samples_home(root) / "sample"
        app, is_sample = App.open(root), True
        app.index(sample=True)  # incremental: a re-run only checks the files
    status = app.status()
    return ExampleLibrary(app=app, home=root, is_sample=is_sample, items=status.items,
                          chunks=status.chunks)


def _home(home: str | os.PathLike[str] | None) -> Path:
    return Path(home).expanduser() if home is not None else default_home()


def lab_command(lab_args: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """What `make lab` runs once the library is ready: JupyterLab on the quickstart notebook,
    with $ZOCRATES_HOME set to the library's home, so the panel, the notebooks' `App.open()`,
    the server extension (the HTTP API) and the CLI in its terminals all use one data home; as
    root (a container, a cloud notebook) with the `--allow-root` JupyterLab asks for."""
    library = example_library()
    print(library, flush=True)
    library.app.close()
    env = {**os.environ, "ZOCRATES_HOME": str(library.home)}
    jupyter = str(Path(sys.executable).with_name("jupyter"))
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    return [jupyter, "lab", *root, *lab_args, QUICKSTART], env


def main(argv: Sequence[str] | None = None) -> None:
    """`python -m zocrates_nb.examples`: prepare the examples' library; with `--lab [FLAGS…]`,
    then start JupyterLab on it (`make lab`); `--dry-run` prints that command instead."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] != "--lab":
        print(example_library())
        return
    dry_run = "--dry-run" in args
    command, env = lab_command([a for a in args[1:] if a != "--dry-run"])
    if dry_run:
        print(f"ZOCRATES_HOME={shlex.quote(env['ZOCRATES_HOME'])} {shlex.join(command)}")
        return
    os.execve(command[0], command, env)


if __name__ == "__main__":
    main()
