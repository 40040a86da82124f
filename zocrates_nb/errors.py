"""The one base class of user-facing errors.

Every error a researcher can cause or fix (a bad config key, an unknown session, a pending
checkpoint, a library that cannot be read, a file that cannot be converted…) derives from
`ZocratesError`, and its message is written for them: one plain sentence, no class name, no
traceback. Surfaces catch this one type: the CLI prints it on one line (exit 2), the widget shows
it in its banner, the HTTP server maps it to a 4xx reply.
"""

from __future__ import annotations

from pydantic import ValidationError


class ZocratesError(Exception):
    """A user-facing error; `str(error)` is the message to show."""


class UsageError(ZocratesError, ValueError):
    """A request that cannot be carried out as given (two library sources, an unknown
    collection, a budget out of bounds…)."""

    @classmethod
    def invalid(cls, err: ValidationError) -> UsageError:
        return cls(explain(err))


def explain(err: ValidationError, *, with_fields: bool = True) -> str:
    """A one-line message naming each bad field: `budget: Input should be ≥ 1`. A validator's
    own message is given as it wrote it (pydantic's "Value error, " prefix is not ours)."""
    parts = []
    for e in err.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"]) or "body"
        cause = (e.get("ctx") or {}).get("error")
        msg = str(cause) if e["type"] == "value_error" and cause is not None else e["msg"]
        parts.append(f"{where}: {msg}" if with_fields else msg)
    return "; ".join(parts)


__all__ = ["UsageError", "ZocratesError", "explain"]
