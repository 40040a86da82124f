"""Whether an SQLite error means a damaged file, and what was found in a few words.

The catalogue and the vectors (derived: rebuilt) and `sessions.db` (the researcher's history:
moved aside, kept) react differently to damage, but recognise it the same way: corruption and
"not a database" are damage; "database is locked", a full disk or a missing permission are not.
It lives with the index, its first user; the session store (a room above) uses it too.
"""

from __future__ import annotations

import sqlite3

_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26
_KNOWN = ("file is not a database", "database disk image is malformed", "no such table",
          "no such column", "disk I/O error", "permission denied")  # fmt: skip


def is_damage(e: BaseException) -> bool:
    """Whether an SQLite error says the file is corrupt or not a database (not busy/locked)."""
    if not isinstance(e, sqlite3.DatabaseError):
        return False
    code = getattr(e, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    return any(s in str(e) for s in ("malformed", "not a database", "corrupt"))


def damage_reason(e: BaseException) -> str:
    """What SQLite (or a library over SQLite) found, in its own few words; a library's
    internals ("'RustBindingsAPI' object has no attribute…") are never shown."""
    seen, text = 0, ""
    cur: BaseException | None = e
    while cur is not None and seen < 10:
        text += " " + str(cur).lower()
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    found = next((k for k in _KNOWN if k.lower() in text), None)
    if found is None and "malformed" in text:
        found = "database disk image is malformed"
    return found or "it cannot be opened"
