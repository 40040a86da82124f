"""Discovery's memory in `sessions.db`: the candidates each discover run found, and the staging
list the researcher builds from them before anything is written to Zotero.

A list belongs to a session (the panel's) or to the data home (`HOME_LIST`, the CLI's default),
so `discover` in one process and `stage add ID` in another meet in the same file.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from zocrates_nb.errors import ZocratesError
from zocrates_nb.online.candidate import Candidate
from zocrates_nb.sessions.store import SessionStore

HOME_LIST = ""  # the data home's own list (no session)


class UnknownCandidate(ZocratesError, LookupError):
    """`stage add` named an id no discover run of this list produced."""


class AlreadyInLibrary(ZocratesError, ValueError):
    """`stage add` named a paper the library already holds (saving it would duplicate it)."""


class Staging:
    """Candidates and the staging list of one sessions.db; safe across threads and processes
    (the store's connections and write transactions)."""

    def __init__(self, store: SessionStore) -> None:
        self.store = store

    def remember(self, candidates: Iterable[Candidate], *, query: str = "",
                 list_id: str = HOME_LIST) -> None:  # fmt: skip
        """Record a discover run's candidates (newer data replaces older; staging is kept)."""
        now = time.time()
        with self.store._tx() as c:
            for cand in candidates:
                c.execute(
                    "INSERT INTO candidates (list_id, id, data, query, found) VALUES (?,?,?,?,?) "
                    "ON CONFLICT (list_id, id) DO UPDATE SET data = excluded.data, "
                    "query = excluded.query, found = excluded.found",
                    (list_id, cand.id, cand.model_dump_json(), query, now),
                )

    def remembered(self, ids: Sequence[str], *, list_id: str = HOME_LIST) -> list[Candidate]:
        """The remembered candidates of these ids (UnknownCandidate names any other id)."""
        rows = self._rows(self.store._conn(), ids, list_id)
        return [Candidate.model_validate_json(rows[i]) for i in dict.fromkeys(ids)]

    @staticmethod
    def _rows(c: Any, ids: Sequence[str], list_id: str) -> dict[str, str]:
        rows = {
            r["id"]: r["data"]
            for r in c.execute(
                f"SELECT id, data FROM candidates WHERE list_id = ? AND id IN "
                f"({','.join('?' * len(ids))})",
                (list_id, *ids),
            )
        }
        missing = [i for i in ids if i not in rows]
        if missing:
            raise UnknownCandidate(
                f"no candidate {', '.join(missing)} in this list: run discover first and "
                "use the ids it prints"
            )
        return rows

    def stage(self, ids: Sequence[str], *, list_id: str = HOME_LIST,
              held: dict[str, str] | None = None) -> list[Candidate]:  # fmt: skip
        """Stage remembered candidates by id; all or none (an unknown id names itself, a paper
        the library holds says where: `held`, id → where Zotero holds it, adds to what the
        discover run marked)."""
        held = held or {}
        with self.store._tx() as c:
            rows = self._rows(c, ids, list_id)
            found = [Candidate.model_validate_json(rows[i]) for i in dict.fromkeys(ids)]
            where = {x.id: held.get(x.id) or (f"in your library, item {x.library_key}"
                                              if x.library_key else "in your Zotero library")
                     for x in found if x.in_library or x.id in held}  # fmt: skip
            if where:
                titles = {x.id: x.title for x in found}
                named = "; ".join(f"'{titles[i][:80]}' ({i}) {w}" for i, w in where.items())
                raise AlreadyInLibrary(
                    f"already in Zotero, so not staged: {named}. Nothing was staged."
                )
            q = "SELECT COALESCE(MAX(staged), 0) FROM candidates WHERE list_id = ?"
            last = int(c.execute(q, (list_id,)).fetchone()[0])
            for i in dict.fromkeys(ids):
                cur = c.execute(
                    "UPDATE candidates SET staged = ? "
                    "WHERE list_id = ? AND id = ? AND staged IS NULL",
                    (last + 1, list_id, i),
                )
                last += cur.rowcount
        return [Candidate.model_validate_json(rows[i]) for i in dict.fromkeys(ids)]

    def unstage(self, ids: Sequence[str], *, list_id: str = HOME_LIST) -> int:
        """Take ids off the staging list (they stay remembered); how many were staged."""
        with self.store._tx() as c:
            cur = c.execute(
                f"UPDATE candidates SET staged = NULL WHERE list_id = ? AND staged IS NOT NULL "
                f"AND id IN ({','.join('?' * len(ids))})",
                (list_id, *ids),
            )
            return cur.rowcount

    def staged(self, *, list_id: str = HOME_LIST) -> list[Candidate]:
        """The staging list, in the order things were staged."""
        rows = self.store._conn().execute(
            "SELECT data FROM candidates WHERE list_id = ? AND staged IS NOT NULL "
            "ORDER BY staged, id",
            (list_id,),
        )
        return [Candidate.model_validate_json(r["data"]) for r in rows]

    def found(self, *, list_id: str = HOME_LIST) -> list[Candidate]:
        """Every remembered candidate of the list, newest run first."""
        rows = self.store._conn().execute(
            "SELECT data FROM candidates WHERE list_id = ? ORDER BY found DESC, id", (list_id,)
        )
        return [Candidate.model_validate_json(r["data"]) for r in rows]
