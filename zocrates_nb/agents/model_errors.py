"""A failed model call (or model setup) as one plain sentence the researcher can act on: which
endpoint, what went wrong, which variable to check; secrets scrubbed, no provider bodies."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping
from typing import Protocol

from pydantic_ai.exceptions import ModelAPIError

from zocrates_nb.agents.providers import KEY_ENV
from zocrates_nb.config import ConfigError
from zocrates_nb.errors import ZocratesError
from zocrates_nb.redaction import redact, safe_url

log = logging.getLogger(__name__)


class _Spec(Protocol):
    @property
    def key_env(self) -> str | None: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def model_string(self) -> str | None: ...


class _Resolved(Protocol):
    """What a message needs of a role's `ResolvedModel` (agents/models.py, which imports this
    module: so the shape, not the class)."""

    @property
    def spec(self) -> _Spec: ...
    @property
    def settings(self) -> Mapping[str, object]: ...


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    stack = [exc]
    while stack:
        e = stack.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        if isinstance(e, BaseExceptionGroup):
            stack.extend(e.exceptions)
        for nxt in (e.__cause__, e.__context__):
            if nxt is not None:
                stack.append(nxt)


def _url_from(exc: BaseException) -> str:
    for e in _chain(exc):
        request = getattr(e, "request", None)
        url = getattr(request, "url", None)
        if url is not None:
            text = str(url)
            for tail in ("/chat/completions", "/responses", "/messages", "/completions"):
                if tail in text:
                    text = text[: text.index(tail)]
            return safe_url(text)
    return ""


def _status(exc: BaseException) -> int | None:
    for e in _chain(exc):
        for attr in ("status_code", "status"):
            value = getattr(e, attr, None)
            if isinstance(value, int) and 100 <= value < 600:
                return value
    return None


class ModelCallError(ZocratesError):
    """A role's model call failed or answered unusably: the message names the role, the model
    and what went wrong (and how long it took), in one plain sentence."""

    def __init__(self, message: str, role: str = "", model: str = "") -> None:
        super().__init__(message)
        self.role, self.model = role, model


class IncompleteReply(ModelAPIError):
    """A reply that ended before it was complete: no finish reason (a stream that stopped
    half-way), or `length` (the output token limit). Never passed off as a whole answer."""

    def __init__(self, model_name: str, finish: str | None) -> None:
        self.finish = finish
        why = "its output token limit" if finish == "length" else "no finish reason"
        super().__init__(model_name, f"the reply ended before it was complete ({why})")


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (Retry-After), from the error or its cause's headers."""
    for e in _chain(exc):
        told = getattr(e, "retry_after", None)
        if isinstance(told, int | float) and told >= 0:
            return float(told)
        response = getattr(e, "response", None)
        headers = getattr(response, "headers", None)
        value = headers.get("retry-after") if headers is not None else None
        if value:
            try:
                return float(value)
            except ValueError:
                return None
    return None


_NOT_JSON = (
    "expected json",
    "expected a json",
    "decode response as json",
    "ended without content",
)
_DROPPED = ("RemoteProtocolError", "ReadError", "IncompleteRead", "ProtocolError", "WriteError")
_DROPPED_TEXT = (
    "incomplete chunked read",
    "peer closed",
    "server disconnected",
    "connection reset",
)


def describe_model_error(
    exc: BaseException,
    resolved: _Resolved | None = None,
    *,
    role: str | None = None,
    elapsed: float | None = None,
) -> str:
    """One clear sentence for a failed model call (or model setup), secrets scrubbed.

    E.g. "The model endpoint http://127.0.0.1:9/v1 is unreachable (connection refused)." or,
    with the role and the time it took, "The search model openai:qwen at http://…/v1 did not
    finish answering within models.timeout = 3 s (gave up after 3.0 s)."
    """
    from pydantic_ai import exceptions as x

    spec = resolved.spec if resolved else None
    extra = (spec.key_env,) if spec and spec.key_env else ()
    url = (spec.endpoint if spec else "") or _url_from(exc) or "(unknown)"
    model = (spec.model_string if spec else None) or getattr(exc, "model_name", None) or "model"
    who = f"The {role} model {model} at {url}" if role else f"The model endpoint {url}"
    after = f" (gave up after {elapsed:.1f} s)" if elapsed is not None else ""
    chain = list(_chain(exc))

    def has(*types: type[BaseException]) -> bool:
        return any(isinstance(e, types) for e in chain)

    def named(*names: str) -> bool:
        return any(type(e).__name__ in names for e in chain)

    def says(*texts: str) -> bool:
        return any(t in str(e).lower() for e in chain for t in texts)

    status = _status(exc)
    # A connection that broke after the request was sent (a read), whatever status a client
    # library made up for it (litellm says 500).
    dropped = any(
        isinstance(e, x.ModelConnectionError)
        and not isinstance(e, x.ModelTimeoutError)
        and e.phase in ("read", "write")
        for e in chain
    )
    if dropped:
        status = None
    if has(ModelCallError):
        text = next(str(e) for e in chain if isinstance(e, ModelCallError))
        after = ""
    elif has(ConfigError):
        text = next(str(e) for e in chain if isinstance(e, ConfigError))
        after = ""
    elif has(IncompleteReply):
        finish = next(e.finish for e in chain if isinstance(e, IncompleteReply))
        why = (
            'it reached its output token limit (finish_reason "length")'
            if finish == "length"
            else "the reply ended without a finish reason"
        )
        text = f"{who} stopped before the answer was complete: {why}."
    elif (
        has(x.ModelAuthenticationError)
        or status in (401, 403)
        or named("AuthenticationError", "PermissionDeniedError")
    ):
        env = spec.key_env if spec else None
        env = env or _guess_key_env(exc)
        hint = f"check {env}" if env else "set api_key_env in zocrates_config.json"
        text = f"{who} rejected the API key ({hint})."
    elif named("ConnectTimeout") and not has(x.ModelRequestTimeout):
        text = f"{who} is unreachable (connecting timed out)."
    elif has(x.ModelRequestTimeout, x.ModelTimeoutError, TimeoutError) or named(
        "APITimeoutError", "Timeout", "ConnectTimeout", "ReadTimeout", "PoolTimeout"
    ):
        # The whole call's deadline or one attempt's (its timeout is the same setting): one
        # sentence whichever fired first, on every route.
        timeout: object = next(
            (e.timeout for e in chain if isinstance(e, x.ModelRequestTimeout)), None
        )
        if timeout is None and resolved is not None:
            timeout = resolved.settings.get("request_timeout")
        text = (
            f"{who} did not finish answering within models.timeout = {float(timeout):g} s."
            if isinstance(timeout, int | float)
            else f"{who} did not answer in time (timed out)."
        )
    elif dropped or (
        (status is None or status == 200) and (named(*_DROPPED) or says(*_DROPPED_TEXT))
    ):
        text = f"{who} dropped the connection before the answer was complete."
    elif has(ConnectionRefusedError) or named("ConnectError") or says("connection refused"):
        text = f"{who} is unreachable (connection refused)."
    elif has(x.ModelConnectionError, ConnectionError, OSError) or named("APIConnectionError"):
        text = f"{who} is unreachable."
    elif has(x.ModelNotFoundError) or status == 404:
        text = (
            f"{who} does not know the model {model!r} (check the model name and base_url "
            "in zocrates_config.json)."
        )
    elif has(x.ModelContextWindowExceededError) or says(*_TOO_LONG):
        text = (
            f"{who} refused the request as longer than its context window, even sent again "
            "shortened: choose fewer papers, a narrower question, or a model with a larger "
            "context window."
        )
    elif has(x.ModelQuotaExceededError) or status == 402:
        text = f"{who} reports the account's quota or credits are exhausted."
    elif has(x.ModelRateLimitError) or status == 429:
        wait = retry_after(exc)
        when = f"try again in {wait:g} s" if wait is not None else "try again shortly"
        text = f"{who} is rate-limiting requests (HTTP 429); {when}."
    elif has(x.ModelUnavailableError, x.ModelServerError) or (status or 0) >= 500:
        text = f"{who} failed with a server error (HTTP {status or '5xx'}); try again later."
    elif has(x.ModelRequestRejectedError) or status is not None:
        text = f"{who} rejected the request (HTTP {status or 400}) for {model}."
    elif says(*_NOT_JSON):
        text = (
            f"{who} sent a reply that is not JSON or is empty (is base_url an "
            "OpenAI-compatible API?)."
        )
    elif has(x.UnexpectedModelBehavior) and says("exceeded maximum output retries"):
        text = f"{who} sent unusable output {_times(chain)}."
    elif has(x.UnexpectedModelBehavior) and says("exceeded max retries"):
        tool = next((str(e).split("'")[1] for e in chain if str(e).startswith("Tool '")), "")
        what = f"arguments for {tool}" if tool else "output"
        text = f"{who} sent invalid {what} {_times(chain)}."
    elif has(x.UnexpectedModelBehavior):
        text = f"{who} answered in a form that could not be used."
    elif has(x.UserError):
        text = (
            f"The model setup failed: {next(str(e) for e in chain if isinstance(e, x.UserError))}"
        )
        after = ""
    else:
        # An error of a kind not recognised above: its text may be a provider body or a
        # traceback line, so the user gets a plain sentence and the details go to the log.
        log.warning("model call to %s failed: %s: %s", model, type(exc).__name__,
                    redact(str(exc)[:500], extra_env=extra))  # fmt: skip
        text = f"The call to {model} failed unexpectedly (details are in the log); try again."
    if after:
        text = text[:-1] + after + "." if text.endswith(".") else text + after
    return redact(text, extra_env=extra)


_TOO_LONG = ("context_length_exceeded", "maximum context length")
# Failures a retry of the same request cannot mend (the researcher must change something).
_FINAL = ("rejected the API key", "does not know the model", "context window", "quota",
          "model setup failed")  # fmt: skip


def can_retry(message: str) -> bool:
    """Whether retrying the turn as it is can succeed, from its error's sentence."""
    return not any(t in message for t in _FINAL)


def _times(chain: list[BaseException]) -> str:
    """How many replies were refused, from pydantic-ai's "… retries (N)" / "count of N" text."""
    for e in chain:
        m = re.search(r"(?:retries \(|retries count of )(\d+)", str(e))
        if m:
            n = int(m.group(1)) + 1
            if n == 1:
                return "once"
            return {2: "twice", 3: "three times"}.get(n, f"{n} times") + " in a row"
    return "repeatedly"


def _guess_key_env(exc: BaseException) -> str | None:
    for e in _chain(exc):
        mod = type(e).__module__.split(".")[0]
        if mod in ("openai", "anthropic"):
            return KEY_ENV[mod]
    return None
