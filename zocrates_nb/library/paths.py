"""Where a library's files really are, and where names taken from library data may lead.

Everything a library hands us is data, not a path we trust: a Zotero item key (`../../victim`
in a damaged or hostile `zotero.sqlite`), an attachment's recorded path (`storage:../../x`,
`/proc/self/environ`), a file name from the Web API, a symbolic link inside a folder
(`notes.md → /etc/passwd`). This module is the one place that decides whether such a name may be
used, for reading and for writing:

- `zotero_key` / `bad_key` check a key against Zotero's own rule (8 characters of
  `23456789ABCDEFGHIJKLMNPQRSTUVWXYZ`, what `Zotero.Utilities.isValidObjectKey` accepts);
- `within(root, *names)` is the path every writer and remover builds from data: each name one
  plain path component, and the result — links resolved — still under `root`; else `UnsafePath`;
- `escape_reason(path, root, where)` says why a path read from data is not inside the folder it
  must stay in: `..` or an absolute path (named as such), or a link leading out.

Paths are resolved with `os.path.realpath`, and readers keep the *resolved* path, so a link
swapped after the check cannot redirect a later read. File names are bytes on Linux and may
hold newlines, invalid UTF-8 or bidirectional controls: `printable` is what reports show.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from zocrates_nb.errors import ZocratesError

KEY_CHARS = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"  # Zotero's key alphabet (no 0, 1, O)
KEY_PATTERN = f"[{KEY_CHARS}]{{8}}"  # the one spelling of a Zotero key
_ZOTERO_KEY = re.compile(KEY_PATTERN)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_MAX_NAME_BYTES = 255  # one path component on every common file system
# Pseudo file systems: their "regular files" are the machine's state (a process's environment,
# kernel settings), never a document, whatever a library records. (Devices under /dev are not
# regular files, and are refused as such.)
_SYSTEM_ROOTS = (Path("/proc"), Path("/sys"))


class UnsafePath(ZocratesError, ValueError):
    """A name from library data that would lead outside the folder it belongs in."""


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


def zotero_key(value: object) -> bool:
    """Whether `value` is a Zotero object key (what Zotero itself accepts)."""
    return isinstance(value, str) and _ZOTERO_KEY.fullmatch(value) is not None


def select_url(item_key: str, library: str = "library") -> str:
    """`zotero://select/…`: the paper in Zotero ("" for a key Zotero would not know);
    `library` is "library" (the user's own) or "groups/<id>", as Zotero's URLs name them."""
    if not zotero_key(item_key) or not _LIBRARY.match(library):
        return ""
    return f"zotero://select/{library}/items/{item_key}"


def pdf_url(attachment_key: str, page: int | None = None, library: str = "library") -> str:
    """`zotero://open-pdf/…[?page=N]`: the PDF in Zotero's reader, at a page when known."""
    if not zotero_key(attachment_key) or not _LIBRARY.match(library):
        return ""
    url = f"zotero://open-pdf/{library}/items/{attachment_key}"
    return f"{url}?page={page}" if page else url


_LIBRARY = re.compile(r"^(library|groups/\d{1,12})$")


def bad_key(value: object, what: str = "item") -> str:
    """The report line for an object whose key is not a Zotero key."""
    article = "an" if what[:1] in "aeiou" else "a"
    return (f"{article} {what} whose key {printable(str(value))!r} is not a Zotero key "
            f"(8 characters of {KEY_CHARS}): not read")  # fmt: skip


def plain_name(name: object) -> bool:
    """Whether `name` is one ordinary path component: not empty, `.` or `..`, no separator or
    NUL, not too long. What a key or a file name from data must be before it names a file."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        return False
    if "/" in name or "\\" in name or "\x00" in name:
        return False
    return len(name.encode("utf-8", "surrogateescape")) <= _MAX_NAME_BYTES


def within(root: Path, *names: str, where: str = "") -> Path:
    """`root/names…` for writing or removing, checked: every name one plain component (see
    `plain_name`) and the result, links resolved, still under `root` (itself resolved, so a
    home that is a link elsewhere is fine). Raises `UnsafePath` with one plain sentence."""
    place = where or printable(root)
    for name in names:
        if not plain_name(name):
            raise UnsafePath(f"{printable(str(name))!r} cannot name a file in {place}: "
                             "not a plain file name (a path, '..' or empty)")  # fmt: skip
    path = root.joinpath(*names)
    target = real(path)
    if not inside(target, real(root)):
        raise UnsafePath(f"{printable(path)} leads outside {place} (a symbolic link to "
                         f"{printable(target)}): nothing written or removed there")  # fmt: skip
    return path


def escape_reason(path: Path, root: Path, where: str) -> str | None:
    """Why `path` (read from library data) is not inside `root`, or None when it is: a
    recorded path that climbs out with `..` or is absolute, or a symbolic link leading out."""
    if not inside(Path(os.path.normpath(path)), Path(os.path.normpath(root))):
        return f"its recorded path {printable(path)} leads outside {where}: not read"
    target = real(path)
    if not inside(target, real(root)):
        return outside_reason(target, where)
    return None


def outside_reason(target: Path, where: str) -> str:
    return f"a symbolic link to {printable(target)}, outside {where}: not followed"


def system_file(path: Path) -> bool:
    """Whether the real `path` is in a pseudo file system (/proc, /sys)."""
    target = real(path)
    return any(inside(target, root) for root in _SYSTEM_ROOTS)
