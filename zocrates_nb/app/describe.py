"""One sentence for any failure a researcher sees, whichever surface shows it.

A user-facing error (`ZocratesError`) already says what went wrong; a failed model call is named
by its endpoint and cause; anything else is an internal failure: one plain sentence, its details
(text and traceback) logged at debug level only. Never an exception class name, a traceback, a
provider's response body or a secret.
"""

from __future__ import annotations

import errno
import logging
import shutil
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from zocrates_nb.config import ConfigError
from zocrates_nb.errors import ZocratesError, explain
from zocrates_nb.redaction import redact

if TYPE_CHECKING:
    from zocrates_nb.agents.runtime import Roles

log = logging.getLogger("zocrates_nb.app")
_SQLITE_FULL = 13  # "database or disk is full"
_SQLITE_IOERR = 10  # "disk I/O error" (any extended code)
_ROOM = 1 << 20  # a disk with less free space than this is full for our writes


def _causes(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    cur: BaseException | None = e
    while cur is not None and len(out) < 20:
        out.append(cur)
        if isinstance(cur, BaseExceptionGroup):
            out.extend(cur.exceptions)
        cur = cur.__cause__ or cur.__context__
    return out


def describe_error(e: BaseException, roles: Roles | None = None, *, doing: str = "") -> str:
    """The message for `e`; `roles` (a turn's models) names the endpoint of a model failure,
    `doing` ("The turn", "Opening the data home") starts an internal failure's sentence."""
    from pydantic_ai import exceptions as x

    model_errors = (
        x.ModelAPIError,
        x.UnexpectedModelBehavior,
        x.UserError,
        ConfigError,
        ConnectionError,
        TimeoutError,
    )
    causes = _causes(e)
    if isinstance(e, ZocratesError) and not isinstance(e, ConfigError):
        return redact(str(e))  # written for the researcher, possibly over several lines
    full = disk_full(e)
    if full is not None:
        return full
    if any(isinstance(c, model_errors) for c in causes):
        resolved = None
        if roles is not None:
            names = {r.model_string for r in (roles.coordinator, roles.search, roles.synthesizer)}
            if len(names) == 1:
                resolved = roles.coordinator.resolved
        from zocrates_nb.agents.model_errors import describe_model_error

        return describe_model_error(e, resolved)
    if isinstance(e, ValidationError):
        return plain(explain(e))
    if isinstance(e, ValueError) and str(e).strip():
        return plain(str(e))
    what = doing or "This request"
    # An internal failure: its text may be anything (a library's internals, a response body),
    # so the person sees one plain sentence and the details go to the log at debug level.
    log.warning("%s failed unexpectedly (details at debug level)", what)
    log.debug("%s failed", what, exc_info=e)
    return f"{what} failed unexpectedly (an internal error; debug logging shows the details)."


def disk_full(e: BaseException, home: Path | None = None) -> str | None:
    """The sentence for a write that found no space left (a file or SQLite), else None.

    SQLite often reports a full disk as a plain "disk I/O error" (writing its WAL index): with
    `home`, such an error counts as a full disk when the disk holding `home` has no room left.
    """
    for c in _causes(e):
        code = getattr(c, "sqlite_errorcode", None) if isinstance(c, sqlite3.Error) else None
        full = (isinstance(c, OSError) and c.errno in (errno.ENOSPC, errno.EDQUOT)) or (
            code == _SQLITE_FULL or "No space left on device" in str(c)
        ) or (home is not None and code is not None and code & 0xFF == _SQLITE_IOERR
              and _no_room(home))  # fmt: skip
        if full:
            name = getattr(c, "filename", None)
            where = f" (writing {name})" if isinstance(name, str) and name else ""
            return (f"The disk is full{where}: free some space, then run the command again "
                    "(nothing was lost: what was written before is kept).")  # fmt: skip
    return None


def _no_room(home: Path) -> bool:
    try:
        return shutil.disk_usage(home).free < _ROOM
    except OSError:
        return False


def plain(text: str, limit: int = 300) -> str:
    """A message fit to show: its first line, capped, secrets masked."""
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return redact(line)


__all__ = ["describe_error", "disk_full", "plain"]
