"""The edge of a configured model: every request counted, retried, timed and its reply cleaned.

`GuardedModel` wraps a role's pydantic-ai model (any route: `openai:`, `litellm:`, a native
provider) for one turn, so every route behaves alike:

- Retries are ours (the SDKs' are off): a 429 honours Retry-After, a 5xx or a dropped
  connection is tried again after a short wait, never past `models.timeout`.
- Every request sent is booked on the turn's usage (failed ones too), with the tokens the
  server reported; the time of the call in flight is known, so an error says how long it
  actually waited.
- Every reply is cleaned and bounded (`model_output`) before the agent sees it; a streamed
  answer that runs past its limit is stopped there.
- A reply that ends without a finish reason, or at the output token limit, is incomplete: an
  `IncompleteReply`, never a half answer passed off as a whole one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, TypeVar

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
)
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponseStreamEvent,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ThinkingPart,
    ThinkingPartDelta,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.settings import ModelSettings

from zocrates_nb.agents.model_errors import IncompleteReply, retry_after
from zocrates_nb.agents.model_output import (
    Tally,
    bound_history,
    clean_response,
    clean_text,
    message_chars,
)
from zocrates_nb.config import OutputLimits

_T = TypeVar("_T")

RETRIES = 2  # a transient failure (429, 5xx, a dropped connection) is tried again this often
BACKOFF = 0.5  # seconds before the first retry without a Retry-After; doubled after each
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})

# What a request cost, as the usage record books it: role, model, input and output tokens,
# and whether it was answered without token counts.
Booker = Callable[[str, "GuardedModel", int, int, bool], None]


class ModelEdge:
    """One turn's edge: where its guarded models book requests and report what they cleaned.

    Bookings made before the turn binds its usage book wait here, then go to the book."""

    def __init__(self, limits: OutputLimits | None = None) -> None:
        self.limits = limits or OutputLimits()
        self._book: Booker | None = None
        self._pending: list[tuple[str, GuardedModel, int, int, bool]] = []
        self.tallies: dict[str, Tally] = {}
        self.said: list[str] = []  # other lines for the turn's warnings (`say`)

    def bind(self, book: Booker) -> None:
        self._book = book
        pending, self._pending = self._pending, []
        for entry in pending:
            book(*entry)

    def book(
        self, role: str, model: GuardedModel, inp: int, out: int, unmetered: bool = False
    ) -> None:
        if self._book is None:
            self._pending.append((role, model, inp, out, unmetered))
        else:
            self._book(role, model, inp, out, unmetered)

    def note(self, role: str, tally: Tally) -> None:
        if tally:
            self.tallies.setdefault(role, Tally()).add(tally)

    def say(self, line: str) -> None:
        """A plain line for the turn's warnings (e.g. what the second citation check found)."""
        if line not in self.said:
            self.said.append(line)

    def warnings(self) -> list[str]:
        """What cleaning did this turn, one plain line per role and kind, then what was said."""
        out = []
        for role, t in self.tallies.items():
            if t.replaced:
                out.append(
                    f"The {role} model sent {t.replaced:,} invalid character(s) (bytes that are "
                    "not UTF-8, lone surrogates); each was replaced with \ufffd."
                )
            if t.merged:
                out.append(
                    f"The {role} model asked for {t.merged + 1} searches at once: they were "
                    "searched as one request."
                )
            for what in dict.fromkeys(t.cut):
                n = t.cut.count(what)
                times = "" if n == 1 else f" ({n} times)"
                out.append(
                    f"The {role} model's {what} was longer than models.limits allows: it was "
                    f"cut{times}, with a notice where."
                )
        return out + self.said


def retry_wait(e: BaseException, attempt: int) -> float | None:
    """Seconds to wait before trying a failed request again, or None when a retry cannot help."""
    if isinstance(e, ModelTimeoutError):
        return None  # an attempt's own timeout is the whole deadline
    status = e.status_code if isinstance(e, ModelHTTPError) else None
    transient = isinstance(
        e, ModelRateLimitError | ModelServerError | ModelUnavailableError | ModelConnectionError
    ) or (status is not None and status in RETRY_STATUS)
    if not transient or (status is not None and status not in RETRY_STATUS):
        return None
    told = retry_after(e)
    return told if told is not None else BACKOFF * 2 ** (attempt - 1)


def _sent(e: BaseException) -> bool:
    """Whether a failed attempt reached the server (a refused connection sent nothing)."""
    if isinstance(e, ModelConnectionError) and e.phase in ("connect", "pool"):
        return False
    seen: BaseException | None = e
    for _ in range(10):
        if seen is None:
            return True
        if isinstance(seen, ConnectionRefusedError) or type(seen).__name__ == "ConnectError":
            return False
        seen = seen.__cause__ or seen.__context__
    return True


class GuardedModel(WrapperModel):
    """A role's configured model at the edge (see the module docstring)."""

    def __init__(
        self, wrapped: Model, *, role: str, name: str, model_string: str | None, edge: ModelEdge
    ) -> None:
        super().__init__(wrapped)
        self.role, self.name, self.model_string, self.edge = role, name, model_string, edge
        self.started: float | None = None  # monotonic time the call in flight began
        self.failed: float | None = None  # when its last failure arrived (None: in flight)

    def waited(self) -> float | None:
        """Seconds the latest call waited on its server, from its first attempt to the failure
        that ended it (what an error reports): never the time spent booking it afterwards."""
        if self.started is None:
            return None
        return (self.failed or time.monotonic()) - self.started

    def for_role(self, role: str) -> GuardedModel:
        """The same model booked under another role (the compactor runs the coordinator's)."""
        return GuardedModel(
            self.wrapped, role=role, name=self.name, model_string=self.model_string, edge=self.edge
        )

    # ------------------------------------------------------------------ attempts
    async def _attempts(
        self,
        settings: ModelSettings | None,
        call: Callable[[ModelSettings], Awaitable[_T]],
        *,
        again: bool = False,
    ) -> _T:
        """`call` with our retries; `again`: the same call sent anew (shortened), its clock
        running on from the first attempt."""
        s = dict(settings or {})
        s["max_retries"] = 0  # retries are ours: each one counted and inside the deadline
        limit = s.get("request_timeout")
        deadline = float(limit) if isinstance(limit, int | float) else None
        if not again or self.started is None:
            self.started = time.monotonic()
        t0, self.failed = self.started, None
        attempt = 0
        while True:
            attempt += 1
            try:
                return await call(ModelSettings(**s))  # type: ignore[typeddict-item]
            except Exception as e:
                self.failed = time.monotonic()  # what follows is ours, not the server's
                if _sent(e):
                    self.edge.book(self.role, self, 0, 0)
                wait = retry_wait(e, attempt)
                late = deadline is not None and time.monotonic() - t0 + (wait or 0) >= deadline
                if wait is None or attempt > RETRIES or late:
                    raise
            except BaseException:  # cancelled (the deadline): the request was sent
                self.failed = time.monotonic()
                self.edge.book(self.role, self, 0, 0)
                raise
            await asyncio.sleep(wait)
            self.failed = None

    # ------------------------------------------------------------------ context window
    def shorter(self, messages: list[ModelMessage], e: BaseException) -> list[ModelMessage] | None:
        """After a context-window refusal: what is sent, shrunk to half (older exchanges
        elided, long passages and results cut), said in the turn's warnings; None when the
        error is another one or nothing can be shrunk."""
        if not too_long(e):
            return None
        chars = sum(message_chars(m) for m in messages)
        shrunk = bound_history(messages, chars // 2)
        if sum(message_chars(m) for m in shrunk) >= chars:
            return None
        self.edge.say(
            f"The {self.role} model {self.name} refused a request longer than its context "
            f"window: it was sent again shortened ({chars:,} → "
            f"{sum(message_chars(m) for m in shrunk):,} characters; older turns elided, long "
            "passages cut)."
        )
        return shrunk

    # ------------------------------------------------------------------ requests
    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        try:
            response = await self._attempts(
                model_settings,
                lambda s: self.wrapped.request(messages, s, model_request_parameters),
            )
        except Exception as e:
            shrunk = self.shorter(messages, e)
            if shrunk is None:
                raise
            response = await self._attempts(  # once: a second refusal is the error
                model_settings,
                lambda s: self.wrapped.request(shrunk, s, model_request_parameters),
                again=True,
            )
        usage = response.usage
        self.edge.book(self.role, self, usage.input_tokens, usage.output_tokens,
                       not (usage.input_tokens or usage.output_tokens))  # fmt: skip
        tally = Tally()
        response = clean_response(response, self.edge.limits, role=self.role, tally=tally)
        self.edge.note(self.role, tally)
        _check_finished(self, response.finish_reason, streamed=False)
        return response

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        async with AsyncExitStack() as stack:

            sent = messages

            async def open_stream(s: ModelSettings) -> StreamedResponse:
                cm = self.wrapped.request_stream(sent, s, model_request_parameters, run_context)
                return await stack.enter_async_context(cm)

            try:
                stream = await self._attempts(model_settings, open_stream)
            except Exception as e:
                shrunk = self.shorter(messages, e)
                if shrunk is None:
                    raise
                sent = shrunk
                stream = await self._attempts(model_settings, open_stream, again=True)
            watch = _StreamWatch(self, stream)
            try:
                yield stream
            except BaseException:
                self.failed = time.monotonic()  # the stream broke (or was stopped) here
                raise
            finally:
                usage = stream.usage
                counted = bool(usage.input_tokens or usage.output_tokens)
                # A stream cut short (a timeout, a dropped connection) sent its whole prompt
                # but reports no tokens: booked as unmetered, never as a free request.
                self.edge.book(self.role, self, usage.input_tokens, usage.output_tokens,
                               not counted)  # fmt: skip
        tally = Tally()
        clean_response(watch.raw_get(), self.edge.limits, role=self.role, tally=tally)
        self.edge.note(self.role, tally)
        if watch.ended and not watch.cut:
            _check_finished(self, stream.finish_reason, streamed=True)


def too_long(e: BaseException) -> bool:
    """Whether a failed request was refused for exceeding the model's context window."""
    seen: BaseException | None = e
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, ModelContextWindowExceededError):
            return True
        text = str(seen).lower()
        if "context_length_exceeded" in text or "maximum context length" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _check_finished(model: GuardedModel, finish: str | None, *, streamed: bool) -> None:
    """A reply at its output limit is incomplete; so is a stream without a finish reason (a
    plain reply's body is whole by HTTP's own framing, and some servers omit the field)."""
    if finish == "length" or (streamed and finish is None):
        raise IncompleteReply(model.name, finish)


class _StreamWatch:
    """Watches one streamed reply: its events cleaned for the screen, stopped at the answer
    limit, and its final response (what the agent keeps) cleaned and bounded."""

    def __init__(self, model: GuardedModel, stream: StreamedResponse) -> None:
        self.model, self.stream = model, stream
        self.ended = False  # the server's stream ran to its end
        self.cut = False  # we stopped reading at the answer limit
        self.raw_get = stream.get
        self._events = stream._get_event_iterator
        limits = model.edge.limits
        role = model.role
        # The instance's own methods are replaced: pydantic-ai reads the stream through them.
        stream._get_event_iterator = self._iterate  # type: ignore[method-assign]
        stream.get = lambda: clean_response(  # type: ignore[method-assign]
            self.raw_get(), limits, role=role, tally=Tally()
        )

    async def _iterate(self) -> AsyncIterator[ModelResponseStreamEvent]:
        limit = self.model.edge.limits.answer_chars
        chars = 0
        events = self._events()
        try:
            async for ev in events:
                text = _event_text(ev)
                if text:
                    chars += len(text)
                    ev = _cleaned_event(ev)
                yield ev
                if chars > limit:
                    self.cut = True
                    return
            self.ended = True
        except ModelAPIError as e:
            if "without a `finish_reason`" in str(e):  # pydantic-ai's own check of a cut stream
                raise IncompleteReply(self.model.name, None) from e
            raise
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()


def _event_text(ev: ModelResponseStreamEvent) -> str:
    if isinstance(ev, PartStartEvent) and isinstance(ev.part, TextPart | ThinkingPart):
        return ev.part.content
    if isinstance(ev, PartDeltaEvent) and isinstance(ev.delta, TextPartDelta | ThinkingPartDelta):
        return ev.delta.content_delta or ""
    return ""


def _cleaned_event(ev: Any) -> Any:
    """The event with its text cleaned (what the screen shows), the stream's parts untouched."""
    if isinstance(ev, PartStartEvent):
        part: Any = ev.part
        clean = dataclasses.replace(part, content=clean_text(part.content))
        return dataclasses.replace(ev, part=clean)
    delta = ev.delta
    text = clean_text(delta.content_delta or "")
    return dataclasses.replace(ev, delta=dataclasses.replace(delta, content_delta=text))


def is_guarded(model: Model) -> bool:
    return isinstance(model, GuardedModel)


__all__ = ["GuardedModel", "ModelAPIError", "ModelEdge", "is_guarded", "retry_wait"]
