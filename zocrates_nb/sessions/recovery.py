"""A `sessions.db` that cannot be read is moved aside, never deleted, and a fresh one started.

It holds the researcher's conversations, so nothing in it is thrown away: the damaged file (with
its -wal and -shm) is renamed `sessions.db.damaged-<UTC time>` next to it, where SQLite's
recovery tools (`sqlite3 … .recover`) can still get at what is left, and the notice says where.
Every command, `index` included, then works on the fresh store instead of failing.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from zocrates_nb.index.damage import damage_reason, is_damage
from zocrates_nb.sessions.database import DB_FILE
from zocrates_nb.sessions.store import SessionStore

_SIDES = ("-wal", "-shm", "-journal")


def open_sessions(home: Path) -> tuple[SessionStore, str | None]:
    """The store of a data home, and a notice when a damaged one had to be moved aside."""
    path = Path(home) / DB_FILE
    problem = _check(path)
    if problem is None:
        try:
            return SessionStore(path), None
        except sqlite3.DatabaseError as e:
            if not is_damage(e):
                raise
            problem = damage_reason(e)
    aside = _move_aside(path)
    notice = (f"{path} could not be read ({problem}): it was moved to {aside} (kept as it was) "
              "and a fresh sessions.db was started; the index and settings are unaffected.")
    return SessionStore(path), notice


def _check(path: Path) -> str | None:
    """What SQLite's quick check finds wrong with the file (None: sound, or absent)."""
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(path, timeout=30)
        try:
            row = conn.execute("PRAGMA quick_check(1)").fetchone()
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        if is_damage(e):
            return damage_reason(e)
        return None  # busy, locked, read-only: the store says so when it opens
    return None if row is None or row[0] == "ok" else "database disk image is malformed"


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    for side in _SIDES:  # first the side files: a WAL replayed onto the fresh file would be wrong
        src = Path(f"{path}{side}")
        if src.exists():
            src.rename(Path(f"{aside}{side}"))
    path.rename(aside)
    return aside
