"""Which library a data home indexes, remembered in the home (`library.json`) at index time, so
that `zocrates-nb index` with no source re-reads that library and every hint that says "run
`zocrates-nb index`" works as printed. No key or token is ever stored: only where the library is.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ValidationError

SOURCE_FILE = "library.json"


class LibrarySource(BaseModel):
    """One library source, as `index` was given it (paths absolute)."""

    kind: Literal["zotero_dir", "zotero_local", "zotero_web", "folder", "sample"]
    path: str | None = None  # zotero_dir, folder
    library_id: str | None = None  # zotero_web
    group: bool = False  # zotero_web: a group library

    @classmethod
    def given(
        cls,
        *,
        zotero_dir: Path | None = None,
        zotero_local: bool = False,
        zotero_web: str | None = None,
        group: bool = False,
        folder: Path | None = None,
        sample: bool = False,
    ) -> LibrarySource | None:
        """The source the caller named (None: none named); more than one is the caller's check."""
        if sample:
            return cls(kind="sample")
        if zotero_dir is not None:
            return cls(kind="zotero_dir", path=str(Path(zotero_dir).expanduser().resolve()))
        if folder is not None:
            return cls(kind="folder", path=str(Path(folder).expanduser().resolve()))
        if zotero_local:
            return cls(kind="zotero_local")
        if zotero_web is not None:
            return cls(kind="zotero_web", library_id=str(zotero_web), group=group)
        return None

    def describe(self) -> str:
        """The source as the `index` flags that name it."""
        if self.kind == "sample":
            return "--sample"
        if self.kind == "zotero_local":
            return "--zotero-local"
        if self.kind == "zotero_web":
            return f"--zotero-web {self.library_id}{' --group' if self.group else ''}"
        return f"--{self.kind.replace('_', '-')} {self.path}"


def remembered(home: Path) -> LibrarySource | None:
    """The source this home was last indexed from (None: never, or the file is unreadable)."""
    try:
        return LibrarySource.model_validate_json((home / SOURCE_FILE).read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def remember(home: Path, source: LibrarySource) -> None:
    """Keep `source` as this home's library (atomically: a reader sees the old or the new)."""
    if remembered(home) == source:
        return
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".library-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(source.model_dump(exclude_defaults=True), f)
        os.replace(tmp, home / SOURCE_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def index_hint(home: Path) -> str:
    """What to run to (re)build this home's index, as a user types it."""
    if remembered(home) is not None:
        return "run `zocrates-nb index`"
    from zocrates_nb.library.zotero_dir import find_zotero_dir

    if find_zotero_dir() is not None:
        return "run `zocrates-nb index` (it reads your Zotero data directory)"
    return ("run `zocrates-nb index --zotero-dir DIR` with your Zotero data directory (or "
            "--zotero-local, --zotero-web ID, --folder DIR; --sample for the built-in sample)")
