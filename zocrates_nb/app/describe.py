"""One sentence for any failure a researcher sees, whichever surface shows it.

A user-facing error (`ZocratesError`) already says what went wrong; a failed model call is named
by its endpoint and cause; anything else is an internal failure: logged with its traceback,
shown as a plain sentence. Never an exception class name, never a secret.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import ValidationError

from zocrates_nb.agents.model_errors import describe_model_error
from zocrates_nb.config import ConfigError
from zocrates_nb.errors import ZocratesError, explain
from zocrates_nb.redaction import redact

if TYPE_CHECKING:
    from zocrates_nb.agents.runtime import Roles

log = logging.getLogger("zocrates_nb.app")


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
        return redact(str(e))
    if any(isinstance(c, model_errors) for c in causes):
        resolved = None
        if roles is not None:
            names = {r.model_string for r in (roles.coordinator, roles.search, roles.synthesizer)}
            if len(names) == 1:
                resolved = roles.coordinator.resolved
        return describe_model_error(e, resolved)
    if isinstance(e, ValidationError):
        return redact(explain(e))
    if isinstance(e, ValueError) and str(e):
        return redact(str(e))
    log.error("%s failed", doing or "a request", exc_info=e)
    text = str(e).strip()
    what = doing or "This request"
    return redact(f"{what} failed: {text}" if text else f"{what} failed unexpectedly (see the log)")


__all__ = ["describe_error"]
