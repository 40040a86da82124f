"""Where a library's files really are, and how their names are shown.

A symbolic link inside a library folder may point anywhere (`notes.md → /etc/passwd`):
every path is resolved with `os.path.realpath` and compared with the root's real path, so
nothing outside the library is ever read; the reader keeps the *resolved* path, so a link
swapped after the check cannot redirect a later read. File names are bytes on Linux and may
hold newlines, invalid UTF-8 or bidirectional controls: `printable` is what reports show.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str | os.PathLike[str]) -> str:
    """One printable line: invalid bytes as �, control and bidi characters escaped."""
    s = os.fspath(text).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return _UNPRINTABLE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), s)


def real(path: Path | str) -> Path:
    """The path with every link resolved (a link loop resolves as far as it goes)."""
    return Path(os.path.realpath(path))


def inside(path: Path, root: Path) -> bool:
    """Whether the real `path` is `root` or lies under it (both already resolved)."""
    return path == root or root in path.parents


def outside_reason(target: Path, where: str) -> str:
    return f"a symbolic link to {printable(target)}, outside {where}: not followed"
