"""The data home as `App` opens it: made when missing, refused when it is a file, and read
through a private copy when it is read-only, so reading still works and nothing is written there.

A read-only home (a read-only mount, a folder the user cannot write) still answers `search`,
`ask`, `status`, `sessions` and `doctor`: SQLite and Chroma both write while they read, so they
read a copy in the temporary folder, removed when the App closes. What would change the home
(indexing, staging, a note or a save whose record belongs in it) is refused with one sentence,
and the notice says once that the run's turns are not kept.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from zocrates_nb.errors import UsageError


def make_home(home: Path) -> bool:
    """The data home as a folder (made when missing); True when it exists but cannot be
    written. A home that is a file, or one that cannot be made, is a sentence of its own."""
    if home.exists() and not home.is_dir():
        raise UsageError(f"the data home {home} is a file, not a folder: give --home (or "
                         "ZOCRATES_HOME) a folder")  # fmt: skip
    try:
        home.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"the data home {home} cannot be made ({e.strerror or e}): give --home "
                         "(or ZOCRATES_HOME) a folder you can write") from None  # fmt: skip
    return not os.access(home, os.W_OK)  # a read-only mount answers EROFS, even to root


def read_only_notice(home: Path) -> str:
    """What a read-only home means for this run, said once by every surface."""
    return (f"the data home {home} is read-only: reading works, but nothing is saved there "
            "(turns, sessions, staging, indexing)")  # fmt: skip


def refuse_write(home: Path, doing: str) -> UsageError:
    """The one sentence for a change a read-only home cannot take."""
    return UsageError(f"cannot {doing}: the data home {home} is read-only; give --home (or "
                      "ZOCRATES_HOME) a folder you can write, or make this one "
                      "writable")  # fmt: skip


def working_copy(home: Path) -> Path:
    """A private copy of a read-only home to read from (the caller removes it). A copy that
    does not fit in the temporary folder is refused in words, before anything is copied."""
    size = sum(p.stat().st_size for p in home.rglob("*") if p.is_file() and not p.is_symlink())
    tmp = Path(tempfile.gettempdir())
    if shutil.disk_usage(tmp).free < size * 1.2:
        raise UsageError(f"the data home {home} is read-only and its copy ({size / 1e6:,.0f} MB) "
                         f"does not fit in {tmp}: make the home writable, or set TMPDIR to a "
                         "folder with room")  # fmt: skip
    copy = Path(tempfile.mkdtemp(prefix="zocrates-read-only-")) / "home"
    try:
        shutil.copytree(home, copy, symlinks=True)
    except OSError as e:
        shutil.rmtree(copy.parent, ignore_errors=True)
        raise UsageError(f"the data home {home} is read-only and could not be read "
                         f"({e.strerror or e})") from None  # fmt: skip
    return copy
