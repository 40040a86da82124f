"""What one turn carries through the agents: the event sink, the models per role, usage, spans.

Every role runs a pydantic-ai agent; with no model configured, the embedded offline engine
supplies that role's model (a `FunctionModel`), so the agents, tools and pipeline are the same
either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from zocrates_nb.agents.model_errors import ModelCallError
from zocrates_nb.agents.model_guard import GuardedModel, ModelEdge
from zocrates_nb.agents.models import (
    OFFLINE_DISPLAY,
    ModelConfigError,
    ModelRegistry,
    ResolvedModel,
    cost_usd,
    describe_model_error,
    resolve_model,
)
from zocrates_nb.agents.offline import OfflineEngine
from zocrates_nb.agents.prompts import ActiveItemView
from zocrates_nb.config import ROLES, ModelEndpoint, Settings
from zocrates_nb.events import Event, Step, StepTimer
from zocrates_nb.text import shorten
from zocrates_nb.turn import AskOptions, Discovery, Scope, TrailStep, Usage

if TYPE_CHECKING:
    from zocrates_nb.index import Index
    from zocrates_nb.retrieval import Reranker
    from zocrates_nb.sessions.store import SessionStore

log = logging.getLogger("zocrates_nb.agents")


# ============================================================================ models per role
@dataclass
class RoleModel:
    role: str
    model: Model
    settings: ModelSettings
    display: str
    model_string: str | None
    resolved: ResolvedModel
    pinned: bool = False  # given explicitly (App(role_models=…)), not from the configuration

    @property
    def offline(self) -> bool:
        return self.resolved.is_offline and not self.pinned

    @property
    def guarded(self) -> bool:
        """A configured model at the edge: it books its own requests (`model_guard`)."""
        return isinstance(self.model, GuardedModel)

    @property
    def name(self) -> str:
        """The model that runs, as the usage record and error messages name it."""
        if self.pinned:
            return str(self.model.model_name)
        return self.model_string or OFFLINE_DISPLAY


def is_model_failure(exc: BaseException) -> bool:
    """A failure of the model call itself (transport, HTTP, deadline, unusable reply), as
    opposed to a bug in our own code."""
    from pydantic_ai import exceptions as x

    kinds = (x.ModelAPIError, x.UnexpectedModelBehavior, ConnectionError, TimeoutError)
    seen: BaseException | None = exc
    for _ in range(20):
        if seen is None:
            return False
        if isinstance(seen, kinds) or type(seen).__module__.split(".")[0] in ("openai", "httpx"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


@dataclass
class RoleCall:
    """One agent run of a role: pass `run_id` to the run so its answers can be booked if it
    fails (the captured messages also hold the history it was given)."""

    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)


@contextlib.contextmanager
def role_call(rm: RoleModel, turn: TurnContext | None = None) -> Iterator[RoleCall]:
    """Turn a failed model call of role `rm` into a `ModelCallError` whose message names the
    role, the model and the time it took ("The search model … gave up after 3.0 s"). With
    `turn`, a run that fails still books the usage of every answer it received."""
    from pydantic_ai import capture_run_messages

    call = RoleCall()
    t0 = time.monotonic()
    with capture_run_messages() as captured:
        try:
            yield call
        except BaseException as e:
            if turn is not None:
                mine = [m for m in captured if getattr(m, "run_id", None) == call.run_id]
                turn.usage.add_messages(rm.role, mine, rm)
            if isinstance(e, ModelCallError) or not isinstance(e, Exception):
                raise
            if not is_model_failure(e):
                raise
            # The time the failing call waited (from its first attempt), not the whole run's.
            waited = rm.model.waited() if isinstance(rm.model, GuardedModel) else None
            message = describe_model_error(
                e,
                None if rm.pinned else rm.resolved,
                role=rm.role,
                elapsed=waited if waited is not None else time.monotonic() - t0,
            )
            if rm.pinned:
                message = message.replace(" model model at ", f" model {rm.name} at ")
            raise ModelCallError(message, rm.role, rm.name) from e


@dataclass
class Roles:
    coordinator: RoleModel
    search: RoleModel
    synthesizer: RoleModel
    verifier: RoleModel | None  # None: the offline support score
    engine: OfflineEngine | None  # its support score also checks a verifier model's verdicts
    # Discovery's roles (None only in a hand-built `Roles`: discovery then says it cannot run).
    online_search: RoleModel | None = None
    online_synthesizer: RoleModel | None = None
    edge: ModelEdge = field(default_factory=ModelEdge)  # the configured models' requests

    @property
    def offline(self) -> bool:
        return all(r.offline for r in (self.coordinator, self.search, self.synthesizer))

    @property
    def display(self) -> str:
        names = list(
            dict.fromkeys(r.display for r in (self.coordinator, self.search, self.synthesizer))
        )
        return (
            names[0]
            if len(names) == 1
            else "; ".join(
                f"{r.role}: {r.display}" for r in (self.coordinator, self.search, self.synthesizer)
            )
        )


def override_settings(settings: Settings, model: str) -> Settings:
    """Settings with every role on `model` (the `--model` of one turn)."""
    try:
        endpoint = ModelEndpoint.model_validate(model)
    except ValidationError as e:
        msg = "; ".join(str(err["msg"]).removeprefix("Value error, ") for err in e.errors())
        if shorten(model, 80) not in msg:
            msg = f"the model {shorten(model, 80)!r} cannot be used: {msg}"
        raise ModelConfigError(msg) from None
    new = settings.model_copy(deep=True)
    new.models.base = endpoint
    for role in ROLES:
        setattr(new.models, role, None)
    return new


def check_roles(registry: ModelRegistry, model_override: str | None = None) -> None:
    """Resolve every role as a turn would (no request is made); raises `ModelConfigError`."""
    if model_override:
        settings = override_settings(registry.settings, model_override)
        for role in ROLES:
            resolve_model(settings, role)
    else:
        registry.resolve_all()


def resolve_roles(
    registry: ModelRegistry,
    engine: Any,
    model_override: str | None = None,
    explicit: dict[str, Model] | None = None,
) -> Roles:
    """The model of each role for this turn; `engine()` gives the shared offline engine.

    `explicit` pins pydantic-ai models to roles (custom models in a notebook, scripted models
    in tests); they win over the configuration.
    """
    settings = registry.settings
    if model_override:
        settings = override_settings(settings, model_override)
        resolved = {r: resolve_model(settings, r) for r in ROLES}
    else:
        resolved = {r: registry.resolve(r) for r in ROLES}
    eng: OfflineEngine | None = None
    pinned = explicit or {}
    edge = ModelEdge(settings.models.limits)

    def configured(role: str, rm: ResolvedModel) -> RoleModel:
        """A configured model, at this turn's edge (counted, retried, cleaned)."""
        assert rm.model is not None
        name = rm.model_string or rm.display_name
        guarded = GuardedModel(
            rm.model, role=role, name=name, model_string=rm.model_string, edge=edge
        )
        return RoleModel(role, guarded, rm.settings, rm.display_name, rm.model_string, rm)

    def role_model(role: str) -> RoleModel:
        nonlocal eng
        rm = resolved[role]
        if role in pinned:
            m = pinned[role]
            return RoleModel(role, m, {}, f"{role}: {m.model_name}", None, rm, pinned=True)
        if rm.model is None:
            eng = eng or engine()
            assert eng is not None
            return RoleModel(role, eng.model_for(role), {}, OFFLINE_DISPLAY, None, rm)
        return configured(role, rm)

    coordinator = role_model("coordinator")
    search = role_model("search")
    synthesizer = role_model("synthesizer")
    v = resolved["verifier"]
    verifier: RoleModel | None = None
    if "verifier" in pinned:
        verifier = role_model("verifier")
    elif v.model is not None:
        verifier = configured("verifier", v)
    eng = eng or engine()  # the offline verifier, or the second check beside a verifier model
    online_search = role_model("online_search")
    online_synthesizer = role_model("online_synthesizer")
    return Roles(coordinator, search, synthesizer, verifier, eng, online_search,
                 online_synthesizer, edge)  # fmt: skip


# ============================================================================ usage
@dataclass
class UsageBook:
    """Adds each agent run's usage to the turn's typed `Usage`, pricing it per role."""

    record: Usage = field(default_factory=Usage)

    def add(self, role: str, usage: Any, model_string: str | None, name: str = "") -> None:
        inp = int(getattr(usage, "input_tokens", 0) or 0)
        out = int(getattr(usage, "output_tokens", 0) or 0)
        self.record.add(
            role,
            name or model_string or OFFLINE_DISPLAY,
            requests=int(getattr(usage, "requests", 0) or 0),
            input_tokens=inp,
            output_tokens=out,
            cost_usd=cost_usd(model_string, inp, out) if model_string else None,
        )

    def add_run(self, rm: RoleModel, usage: Any) -> None:
        """The usage of a role's finished agent run. A configured model booked each request
        itself as it was sent (`book_request`): nothing to add."""
        if not rm.guarded:
            self.add(rm.role, usage, rm.model_string, rm.name)

    def book_request(
        self, role: str, model: GuardedModel, inp: int, out: int, unmetered: bool = False
    ) -> None:
        """One request a configured model sent (failed ones too), with the tokens reported
        (`unmetered`: answered, but the server reported none)."""
        cost = cost_usd(model.model_string, inp, out) if model.model_string else None
        self.record.add(role, model.name, requests=1, input_tokens=inp, output_tokens=out,
                        cost_usd=cost, unmetered=int(unmetered))  # fmt: skip

    def add_messages(self, role: str, messages: Sequence[Any], rm: RoleModel) -> None:
        """The usage of a run that did not finish (a request limit, a failure): every answer
        it received counts, one request each, with the tokens that answer reported (a
        configured model booked its requests itself)."""
        from pydantic_ai.messages import ModelResponse
        from pydantic_ai.usage import RunUsage

        if rm.guarded:
            return

        total = RunUsage()
        for m in messages:
            # A stream cut short is captured too ("interrupted"): it counts once it reported usage.
            cut = getattr(m, "state", None) == "interrupted"
            if isinstance(m, ModelResponse) and (not cut or m.usage.output_tokens):
                total.requests += 1
                total.input_tokens += m.usage.input_tokens
                total.output_tokens += m.usage.output_tokens
        self.add(role, total, rm.model_string, rm.name)

    @property
    def cost(self) -> float | None:
        return self.record.cost_usd


# ============================================================================ the turn
@dataclass
class TurnContext:
    """Everything the agents of one turn share. Events go to `queue` (None ends the stream)."""

    session_id: str
    turn_id: str
    user_query: str
    queue: asyncio.Queue[Event | None]
    store: SessionStore
    index: Index
    settings: Settings
    roles: Roles
    reranker: Reranker
    options: AskOptions = field(default_factory=AskOptions)
    allowed_keys: list[str] = field(default_factory=list)  # what a restricted scope may read
    collections: list[str] = field(default_factory=list)  # the scope's, by name
    active_items: list[ActiveItemView] = field(default_factory=list)
    # One query to the enabled scholarly sources (library papers marked, candidates remembered
    # for staging), injected by the app; raises `OnlineDisabled` while discovery is off.
    discover: Callable[[str], Discovery] | None = None
    usage: UsageBook = field(default_factory=UsageBook)
    timings: dict[str, float] = field(default_factory=dict)
    steps: StepTimer = field(default_factory=StepTimer)  # the visible steps, for the record
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        # Requests of the configured models go to whatever usage book the turn holds then.
        self.roles.edge.bind(lambda *booked: self.usage.book_request(*booked))

    def warnings(self) -> list[str]:
        """What the edge cleaned or cut in this turn's model replies, one line each."""
        return self.roles.edge.warnings()

    @property
    def scope(self) -> Scope:
        return self.options.scope

    def emit(self, event: Event) -> None:
        event.session_id = self.session_id
        event.turn_id = self.turn_id
        if isinstance(event, Step):
            self.steps.add(event)
        self.queue.put_nowait(event)

    def trail(self) -> list[TrailStep]:
        """The steps so far, the last one timed up to now."""
        return self.steps.trail()

    def step(self, phase: str, label: str, **detail: Any) -> None:
        self.emit(Step(phase=phase, label=label, detail=detail))

    @contextlib.contextmanager
    def phase(self, name: str, role: str | None = None) -> Iterator[None]:
        """Times a pipeline phase and wraps it in an OpenTelemetry span (a no-op unless enabled)."""
        from opentelemetry import trace

        tracer = trace.get_tracer("zocrates_nb.agents")
        attrs = {
            "zocrates.phase": name,
            "zocrates.session_id": self.session_id,
            "zocrates.turn_id": self.turn_id,
        }
        if role:
            attrs["zocrates.role"] = role
        t0 = time.monotonic()
        with tracer.start_as_current_span(f"zocrates.{name}", attributes=attrs):
            try:
                yield
            finally:
                self.timings[name] = round(self.timings.get(name, 0.0) + time.monotonic() - t0, 3)
