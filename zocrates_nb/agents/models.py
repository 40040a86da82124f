"""Which model plays each role, how hard it thinks, and what it costs.

`zocrates_config.json` names a base model and per-role overrides (coordinator, search,
synthesizer, verifier; null inherits the base); ZOCRATES_MODEL / ZOCRATES_<ROLE>_MODEL and
arguments override the file. `ModelRegistry.resolve(role)` turns that into a pydantic-ai `Model`
plus model settings (thinking, timeouts) — or None for the embedded offline engine, which never
touches a network. An edit to the file takes effect at the next `resolve` (mtime check).

Rules kept here:
- API keys come only from the environment (`api_key_env` names the variable); they are never
  stored, printed or logged, and `redact` scrubs them from any text we produce.
- No silent fallback: a missing key or package is a `ModelConfigError` at resolve time, a dead or
  unauthorised endpoint an error at use that `describe_model_error` turns into one sentence.
- Connecting is capped at 5 s by the HTTP clients, so a dead endpoint fails in seconds.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args
from urllib.parse import urlsplit, urlunsplit

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from zocrates_nb.config import (
    OFFLINE_MODEL,
    ROLES,
    ConfigError,
    ConfigWatcher,
    ModelEndpoint,
    Settings,
)

log = logging.getLogger(__name__)

Role = Literal["coordinator", "search", "synthesizer", "verifier"]
assert get_args(Role) == ROLES

OFFLINE_DISPLAY = "embedded offline engine (no language model)"
ROLE_THINKING: dict[str, str] = {
    "coordinator": "medium",
    "search": "low",
    "synthesizer": "high",
    "verifier": "off",  # a yes/no support check: speed over deliberation
}
DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "ollama": "http://localhost:11434/v1",
}
# The variable each provider's SDK reads its key from (used for errors and the missing-key check).
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "huggingface": "HF_TOKEN",
}
OPENAI_FAMILY = ("openai", "openai-chat", "openai-responses")
# litellm providers that run on the researcher's machine by default.
LITELLM_LOCAL = ("ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm", "vllm")
PROBE_TIMEOUT = 2.0  # seconds for the ollama capability probe
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.I)


class ModelConfigError(ConfigError):
    """A model that cannot be set up as configured; the message names the config key."""


# --- secrets --------------------------------------------------------------------------------
def _secret_values(extra_names: tuple[str, ...] = ()) -> list[str]:
    names = {n for n in os.environ if _SECRET_NAME.search(n)} | set(extra_names)
    values = {os.environ.get(n, "") for n in names}
    return sorted((v for v in values if len(v) >= 8), key=len, reverse=True)


def redact(text: str, *, extra_env: tuple[str, ...] = ()) -> str:
    """`text` with every secret-looking environment value (…KEY, …TOKEN, …SECRET) masked."""
    for value in _secret_values(extra_env):
        text = text.replace(value, "***")
    return re.sub(r"\b(sk-[A-Za-z0-9_\-]{4})[A-Za-z0-9_\-]{12,}", r"\1***", text)


def safe_url(url: str | None) -> str:
    """A URL fit for messages: no credentials, no query string."""
    if not url:
        return ""
    try:
        p = urlsplit(url)
    except ValueError:
        return ""
    host = p.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{p.port}" if p.port else host
    return urlunsplit((p.scheme, netloc, p.path.rstrip("/"), "", ""))


def is_local_url(url: str | None) -> bool:
    """Loopback, private-network, link-local and `localhost`/`.local` hosts count as local."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    if host in ("localhost", "0.0.0.0") or host.endswith((".localhost", ".local")):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local


# --- the resolved configuration of one role (no network, no key values) -----------------------
@dataclass(frozen=True)
class RoleSpec:
    role: str
    config_key: str  # where the model came from, e.g. "models.search" or "models.base"
    model_string: str | None  # None = the offline engine
    provider: str  # "offline", "openai", "anthropic", "ollama", "litellm", …
    model_name: str
    base_url: str | None
    api_key_env: str | None
    thinking: str  # off | on | minimal | low | medium | high | xhigh | max
    thinking_explicit: bool  # set in the config rather than the role's default
    is_cloud: bool

    @property
    def offline(self) -> bool:
        return self.model_string is None

    @property
    def endpoint(self) -> str:
        """Where requests go (display form), "" for the offline engine and litellm defaults."""
        if self.offline:
            return ""
        if self.base_url:
            return safe_url(self.base_url)
        if self.provider == "ollama":
            return safe_url(os.environ.get("OLLAMA_BASE_URL") or DEFAULT_URLS["ollama"])
        return DEFAULT_URLS.get("openai" if self.provider in OPENAI_FAMILY else self.provider, "")

    @property
    def key_env(self) -> str | None:
        """The variable the key is read from: configured, else the provider's own."""
        if self.api_key_env:
            return self.api_key_env
        if self.base_url or self.provider in ("offline", "ollama", "litellm"):
            return None  # local and compatible servers need no key unless configured
        family = "openai" if self.provider in OPENAI_FAMILY else self.provider
        return KEY_ENV.get(family)  # other providers read their own variable

    def key_status(self) -> str:
        """ "set", "missing" or "not needed" (never the value)."""
        if self.provider == "litellm" and not self.api_key_env:
            return _litellm_key_status(self.model_name)
        env = self.key_env
        if env is None:
            return "not needed" if self.base_url or self.provider == "ollama" else "unknown"
        return "set" if os.environ.get(env) else "missing"


def _litellm_key_status(model_name: str) -> str:
    try:
        from zocrates_nb.agents.litellm_model import _litellm

        env = _litellm().validate_environment(model_name)
    except Exception:
        return "unknown"
    if env.get("keys_in_environment"):
        return "set"
    missing = env.get("missing_keys") or []
    return f"missing ({', '.join(missing)})" if missing else "not needed"


def role_spec(settings: Settings, role: str) -> RoleSpec:
    """What the configuration asks of `role`: a role entry with a model pins it; otherwise the
    base model applies. Thinking: role entry, else base entry, else the role's default."""
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}; expected one of {ROLES}")
    models = settings.models
    base: ModelEndpoint = models.base
    own: ModelEndpoint | None = getattr(models, role)
    chosen, key = (
        (own, f"models.{role}") if own is not None and own.model else (base, "models.base")
    )
    thinking = (own.thinking if own else None) or base.thinking
    explicit = thinking is not None
    level = thinking or ROLE_THINKING[role]
    model_string = chosen.model if chosen.model and chosen.model != OFFLINE_MODEL else None
    if model_string is None:
        return RoleSpec(role, key, None, "offline", "", None, None, level, explicit, False)
    provider, _, name = model_string.partition(":")
    base_url = chosen.base_url
    if base_url:
        cloud = not is_local_url(base_url)
    elif provider == "ollama":
        url = os.environ.get("OLLAMA_BASE_URL") or DEFAULT_URLS["ollama"]
        cloud = not is_local_url(url) or name.endswith("-cloud")  # -cloud models are forwarded
    elif provider == "litellm":
        cloud = name.split("/", 1)[0] not in LITELLM_LOCAL
    else:
        cloud = True
    return RoleSpec(
        role,
        key,
        model_string,
        provider,
        name,
        base_url,
        chosen.api_key_env,
        level,
        explicit,
        cloud,
    )


# --- thinking -------------------------------------------------------------------------------
_COMPAT_EFFORT = {"minimal": "low", "xhigh": "high", "max": "high"}


def thinking_setting(spec: RoleSpec, *, can_think: bool | None = None) -> ModelSettings:
    """The unified pydantic-ai `thinking` setting for a role, or {} to send nothing.

    pydantic-ai maps it per provider (OpenAI reasoning_effort, Anthropic thinking budget/effort,
    Ollama reasoning_effort…). Here: OpenAI-compatible servers get `low` for `minimal` (and
    `high` above it); a local server is asked to think only when it can (ollama's capability
    probe says so) or the config asks explicitly; when unsure, nothing is sent.
    """
    if spec.offline:
        return {}
    level = spec.thinking
    value: bool | str = False if level == "off" else True if level == "on" else level
    local = not spec.is_cloud
    if local:
        if spec.provider == "ollama" or can_think is not None:
            if not can_think:
                return {}
        elif not spec.thinking_explicit:
            return {}
    compatible = bool(spec.base_url) or spec.provider == "ollama"
    if compatible and isinstance(value, str):
        value = _COMPAT_EFFORT.get(value, value)
    return cast(ModelSettings, {"thinking": value})


_PROBES: dict[tuple[str, str], tuple[float, bool | None]] = {}
_PROBE_LOCK = threading.Lock()


def ollama_can_think(base_url: str, model: str, *, timeout: float = PROBE_TIMEOUT) -> bool | None:
    """Ask ollama's `/api/show` whether `model` lists the "thinking" capability.

    True/False when the server answers, None when unsure (unreachable, old server). Answers are
    cached for the process; "unsure" is retried after a minute.
    """
    import httpx

    root = re.sub(r"/v1/?$", "", base_url.rstrip("/"))
    key = (root, model)
    with _PROBE_LOCK:
        hit = _PROBES.get(key)
    if hit is not None and (hit[1] is not None or time.monotonic() - hit[0] < 60):
        return hit[1]
    answer: bool | None = None
    try:
        r = httpx.post(f"{root}/api/show", json={"model": model}, timeout=timeout)
        if r.status_code == 200:
            caps = r.json().get("capabilities")
            if isinstance(caps, list):
                answer = "thinking" in caps
    except (httpx.HTTPError, ValueError):
        answer = None
    with _PROBE_LOCK:
        _PROBES[key] = (time.monotonic(), answer)
    return answer


# --- building models ------------------------------------------------------------------------
@dataclass(frozen=True, repr=False)
class ResolvedModel:
    """A role's model, ready for `Agent(model, model_settings=settings)`.

    `model` is None for the embedded offline engine. Holds no key value in any field that is
    printed (the pydantic-ai Model keeps its client private).
    """

    role: str
    model: Model | None
    settings: ModelSettings
    display_name: str
    is_cloud: bool
    spec: RoleSpec
    thinking_sent: bool = False
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def is_offline(self) -> bool:
        return self.model is None

    @property
    def model_string(self) -> str | None:
        return self.spec.model_string

    @property
    def endpoint(self) -> str:
        return self.spec.endpoint

    def __repr__(self) -> str:
        return (
            f"ResolvedModel(role={self.role!r}, model={self.display_name!r}, "
            f"cloud={self.is_cloud}, settings={dict(self.settings)!r})"
        )

    __str__ = __repr__


def _display(spec: RoleSpec, thinking_sent: bool, settings: ModelSettings) -> str:
    if spec.offline:
        return OFFLINE_DISPLAY
    text = spec.model_string or ""
    if spec.base_url:
        text += f" @ {safe_url(spec.base_url)}"
    if thinking_sent:
        value = settings.get("thinking")
        text += " (thinking off)" if value is False else f" (thinking {value})"
    return text


def _api_key(spec: RoleSpec) -> str | None:
    env = spec.key_env
    if env is None:
        return None
    value = os.environ.get(env)
    if value:
        return value
    if spec.api_key_env or not spec.base_url:
        raise ModelConfigError(
            f"{spec.config_key}: {spec.model_string} needs an API key: set the environment "
            f"variable {env}" + ("" if spec.api_key_env else " (or name another in api_key_env)")
        )
    return None


def build_model(spec: RoleSpec, timeout: float = 120.0) -> ResolvedModel:
    """Construct the pydantic-ai model for a role spec (probing ollama once for thinking)."""
    if spec.offline:
        return ResolvedModel(spec.role, None, {}, OFFLINE_DISPLAY, False, spec)
    if spec.provider not in ("ollama", "litellm", "anthropic", *OPENAI_FAMILY):
        _provider_class(spec)  # an unknown provider is named before any key is asked for
    key = _api_key(spec)
    can_think: bool | None = None
    model: Model
    try:
        if spec.provider == "ollama":
            url = spec.base_url or os.environ.get("OLLAMA_BASE_URL") or DEFAULT_URLS["ollama"]
            can_think = ollama_can_think(url, spec.model_name)
            model = _ollama(spec.model_name, url, key, can_think)
        elif spec.provider == "litellm":
            from zocrates_nb.agents.litellm_model import LiteLLMModel

            # With a base_url and no api_key_env, a placeholder key: litellm would otherwise
            # send the provider's usual key (e.g. OPENAI_API_KEY) to that other server.
            placeholder = "api-key-not-set" if spec.base_url else None
            model = LiteLLMModel(
                spec.model_name,
                api_base=spec.base_url,
                api_key=key or placeholder,
                redact=lambda s: redact(s, extra_env=_envs(spec)),
            )
        elif spec.provider in OPENAI_FAMILY:
            model = _openai(spec, key)
        elif spec.provider == "anthropic":
            from pydantic_ai.models.anthropic import AnthropicModel
            from pydantic_ai.providers.anthropic import AnthropicProvider

            provider = AnthropicProvider(api_key=key, base_url=spec.base_url)
            model = AnthropicModel(spec.model_name, provider=provider)
        else:
            model = _other(spec, key)
    except ImportError as e:
        raise ModelConfigError(
            f"{spec.config_key}: provider {spec.provider!r} needs a package that is not "
            f"installed ({e.name or e}); install pydantic-ai-slim[{spec.provider}] or use "
            f"litellm:{spec.provider}/{spec.model_name}"
        ) from None
    except ModelConfigError:
        raise
    except Exception as e:  # UserError and friends from provider constructors
        raise ModelConfigError(
            f"{spec.config_key}: cannot set up {spec.model_string}: {redact(str(e))}"
        ) from None
    settings = cast(
        ModelSettings, {"timeout": timeout, **thinking_setting(spec, can_think=can_think)}
    )
    sent = "thinking" in settings
    warnings: tuple[str, ...] = ()
    if not sent and spec.thinking != "off" and not spec.is_cloud:
        warnings = (f"{spec.role}: thinking not requested from local model {spec.model_string}",)
    return ResolvedModel(
        spec.role,
        model,
        settings,
        _display(spec, sent, settings),
        spec.is_cloud,
        spec,
        sent,
        warnings,
    )


def _envs(spec: RoleSpec) -> tuple[str, ...]:
    return (spec.key_env,) if spec.key_env else ()


def _ollama(name: str, url: str, key: str | None, can_think: bool | None) -> Model:
    from pydantic_ai.models.ollama import OllamaModel
    from pydantic_ai.profiles import ModelProfile, merge_profile
    from pydantic_ai.providers.ollama import OllamaProvider

    provider = OllamaProvider(base_url=url, api_key=key)
    profile = merge_profile(
        provider.model_profile(name), ModelProfile(supports_thinking=bool(can_think))
    )
    return OllamaModel(name, provider=provider, profile=profile)


def _openai(spec: RoleSpec, key: str | None) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.profiles import ModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    if spec.base_url:
        # Any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a gateway): Chat Completions.
        # Thinking goes out only when thinking_setting decided to send it.
        wants = "thinking" in thinking_setting(spec)
        compat = OpenAICompatibleProvider(
            "openai-compatible",
            base_url=spec.base_url,
            api_key=key,
            profile=ModelProfile(supports_thinking=wants),
        )
        if spec.provider == "openai-responses":
            return OpenAIResponsesModel(spec.model_name, provider=compat)
        return OpenAIChatModel(spec.model_name, provider=compat)
    provider = OpenAIProvider(api_key=key)
    if spec.provider == "openai-chat":
        return OpenAIChatModel(spec.model_name, provider=provider)
    return OpenAIResponsesModel(spec.model_name, provider=provider)


def _other(spec: RoleSpec, key: str | None) -> Model:
    """Any other pydantic-ai provider (groq, mistral, google, deepseek, openrouter…)."""
    from pydantic_ai.models import infer_model
    from pydantic_ai.providers import infer_provider

    cls = _provider_class(spec)
    kwargs: dict[str, Any] = {}
    if key:
        kwargs["api_key"] = key
    if spec.base_url:
        kwargs["base_url"] = spec.base_url
    provider = cls(**kwargs) if kwargs else infer_provider(spec.provider)
    return infer_model(f"{spec.provider}:{spec.model_name}", provider_factory=lambda _: provider)


def _provider_class(spec: RoleSpec) -> Any:
    from pydantic_ai.providers import infer_provider_class

    try:
        return infer_provider_class(spec.provider)
    except ImportError:
        raise ModelConfigError(
            f"{spec.config_key}: provider {spec.provider!r} needs a package that is not "
            f"installed; install pydantic-ai-slim[{spec.provider}] or use "
            f"litellm:{spec.provider}/{spec.model_name}"
        ) from None
    except ValueError:
        raise ModelConfigError(
            f"{spec.config_key}: unknown model provider {spec.provider!r} in "
            f"{spec.model_string!r}; use openai:, anthropic:, ollama:, another pydantic-ai "
            "provider, or litellm:<provider>/<model>"
        ) from None


def resolve_model(settings: Settings, role: str) -> ResolvedModel:
    """The model for `role` under `settings` (see `ModelRegistry` for hot reload)."""
    return build_model(role_spec(settings, role), timeout=settings.models.timeout)


# --- the registry: hot reload and doctor ------------------------------------------------------
class ModelRegistry:
    """Resolves roles against the current config; re-resolves after the file changes.

    Call `resolve(role)` at the start of each turn: an edited `zocrates_config.json` (or a
    changed ZOCRATES_* variable) is picked up there, without a restart.
    """

    def __init__(
        self,
        home: Path | str | None = None,
        overrides: dict[str, Any] | None = None,
        *,
        settings: Settings | None = None,
    ) -> None:
        if settings is None and home is None:
            raise ValueError("give a data home or settings")
        self._watcher = ConfigWatcher(Path(home), overrides) if home is not None else None
        self._fixed = settings
        self._cache: dict[str, ResolvedModel] = {}
        self._generation = -1
        self._lock = threading.Lock()
        self.telemetry_status = ""

    @property
    def settings(self) -> Settings:
        if self._watcher is None:
            assert self._fixed is not None
            return self._fixed
        settings = self._watcher.current()
        if self._watcher.generation != self._generation:
            with self._lock:
                if self._watcher.generation != self._generation:
                    self._cache.clear()
                    self._generation = self._watcher.generation
                    self.telemetry_status = configure_telemetry(settings)
        return settings

    @property
    def generation(self) -> int:
        """Bumps whenever the configuration was (re)loaded."""
        self.settings  # noqa: B018 - refresh
        return self._watcher.generation if self._watcher else 0

    def resolve(self, role: str) -> ResolvedModel:
        settings = self.settings
        with self._lock:
            hit = self._cache.get(role)
        if hit is not None:
            return hit
        resolved = resolve_model(settings, role)
        with self._lock:
            self._cache[role] = resolved
        return resolved

    def resolve_all(self) -> dict[str, ResolvedModel]:
        return {role: self.resolve(role) for role in ROLES}

    def doctor_info(self) -> dict[str, Any]:
        """Models per role and whether any cloud endpoint is configured. Touches no network."""
        try:
            settings = self.settings
        except ConfigError as e:
            return {"ok": False, "error": redact(str(e)), "roles": {}, "any_cloud": None}
        info = doctor_info(settings)
        if self._watcher is not None:
            info["config_file"] = str(self._watcher.path)
        return info


def doctor_info(settings: Settings) -> dict[str, Any]:
    """Per role: model, endpoint, cloud or local, thinking, key status (never the value)."""
    roles: dict[str, Any] = {}
    for role in ROLES:
        spec = role_spec(settings, role)
        roles[role] = {
            "model": spec.model_string or OFFLINE_DISPLAY,
            "from": spec.config_key,
            "provider": spec.provider,
            "endpoint": spec.endpoint,
            "cloud": spec.is_cloud,
            "thinking": spec.thinking,
            "api_key": "not needed" if spec.offline else spec.key_status(),
        }
    any_cloud = any(r["cloud"] for r in roles.values())
    return {
        "ok": True,
        "roles": roles,
        "any_cloud": any_cloud,
        "offline": all(r["provider"] == "offline" for r in roles.values()),
        "summary": (
            "cloud endpoints configured: "
            + ", ".join(sorted({r["endpoint"] or r["model"] for r in roles.values() if r["cloud"]}))
            if any_cloud
            else "no cloud endpoint configured: nothing leaves this machine"
        ),
        "telemetry": {"otel": settings.telemetry.otel},
    }


# --- telemetry ------------------------------------------------------------------------------
def configure_telemetry(settings: Settings) -> str:
    """Switch pydantic-ai's OpenTelemetry instrumentation to match `telemetry.otel`.

    Spans carry no message content (no paper text, no prompts). They go to the global tracer
    provider; if none is set and OTEL_EXPORTER_OTLP_ENDPOINT is, an OTLP exporter is installed.
    """
    from pydantic_ai import Agent

    if not settings.telemetry.otel:
        Agent.instrument_all(False)
        return "OpenTelemetry instrumentation is off (telemetry.otel is false)"
    from pydantic_ai.models.instrumented import InstrumentationSettings

    Agent.instrument_all(InstrumentationSettings(include_content=False))
    note = _ensure_tracer_provider()
    return f"OpenTelemetry instrumentation is on (content not recorded); {note}"


def _ensure_tracer_provider() -> str:
    from opentelemetry import trace

    current = trace.get_tracer_provider()
    if type(current).__name__ not in ("ProxyTracerProvider", "NoOpTracerProvider"):
        return "spans go to the application's tracer provider"
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if not endpoint:
        return (
            "no tracer provider is configured: set OTEL_EXPORTER_OTLP_ENDPOINT (or configure "
            "OpenTelemetry in the host application) to export spans"
        )
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        return f"cannot export spans: {e.name or e} is not installed"
    provider = TracerProvider(resource=Resource.create({"service.name": "zocrates-nb"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return f"spans are exported over OTLP to {safe_url(endpoint)}"


# --- costs ----------------------------------------------------------------------------------
def cost_usd(model_string: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of a request from litellm's local cost map; None when the model is unknown.

    The offline engine costs nothing to run but has no price entry: None.
    """
    if not model_string or model_string == OFFLINE_MODEL or ":" not in model_string:
        return None
    provider, _, name = model_string.partition(":")
    family = "openai" if provider in OPENAI_FAMILY else provider
    if provider == "litellm":
        candidates = [name]
    elif family in ("openai", "anthropic"):
        candidates = [name, f"{family}/{name}"]
    else:
        candidates = [f"{family}/{name}", name]
    try:
        from zocrates_nb.agents.litellm_model import _litellm

        litellm = _litellm()
    except ImportError:
        return None
    for candidate in candidates:
        try:
            prompt, completion = litellm.cost_per_token(
                model=candidate, prompt_tokens=input_tokens, completion_tokens=output_tokens
            )
        except Exception:
            continue
        return float(prompt) + float(completion)
    return None


# --- errors ---------------------------------------------------------------------------------
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


def describe_model_error(exc: BaseException, resolved: ResolvedModel | None = None) -> str:
    """One clear sentence for a failed model call (or model setup), secrets scrubbed.

    E.g. "The model endpoint http://127.0.0.1:9/v1 is unreachable (connection refused)." or
    "The model endpoint https://api.openai.com/v1 rejected the API key (check OPENAI_API_KEY)."
    """
    from pydantic_ai import exceptions as x

    spec = resolved.spec if resolved else None
    extra = _envs(spec) if spec else ()
    url = (spec.endpoint if spec else "") or _url_from(exc) or "(unknown)"
    who = f"The model endpoint {url}"
    model = (spec.model_string if spec else None) or getattr(exc, "model_name", None) or "model"
    chain = list(_chain(exc))

    def has(*types: type[BaseException]) -> bool:
        return any(isinstance(e, types) for e in chain)

    def named(*names: str) -> bool:
        return any(type(e).__name__ in names for e in chain)

    status = _status(exc)
    if has(ConfigError):
        text = next(str(e) for e in chain if isinstance(e, ConfigError))
    elif (
        has(x.ModelAuthenticationError)
        or status in (401, 403)
        or named("AuthenticationError", "PermissionDeniedError")
    ):
        env = spec.key_env if spec else None
        env = env or _guess_key_env(exc)
        hint = f"check {env}" if env else "set api_key_env in zocrates_config.json"
        text = f"{who} rejected the API key ({hint})."
    elif has(x.ModelRequestTimeout):
        timeout = next(e.timeout for e in chain if isinstance(e, x.ModelRequestTimeout))
        text = f"{who} did not finish answering within {timeout:g} s."
    elif has(x.ModelTimeoutError, TimeoutError) or named(
        "APITimeoutError", "Timeout", "ConnectTimeout", "ReadTimeout", "PoolTimeout"
    ):
        text = f"{who} did not answer in time (timed out)."
    elif has(x.ModelConnectionError, ConnectionError, OSError) or named(
        "APIConnectionError", "ConnectError", "RemoteProtocolError"
    ):
        refused = has(ConnectionRefusedError) or any(
            "refused" in str(e).lower() or "connect" in type(e).__name__.lower() for e in chain
        )
        text = f"{who} is unreachable" + (" (connection refused)." if refused else ".")
    elif has(x.ModelNotFoundError) or status == 404:
        text = (
            f"{who} does not know the model {model!r} (check the model name and base_url "
            "in zocrates_config.json)."
        )
    elif has(x.ModelContextWindowExceededError):
        text = f"The conversation is too long for {model}: start a new session or compact it."
    elif has(x.ModelQuotaExceededError) or status == 402:
        text = f"{who} reports the account's quota or credits are exhausted."
    elif has(x.ModelRateLimitError) or status == 429:
        text = f"{who} is rate-limiting requests; try again shortly."
    elif has(x.ModelUnavailableError, x.ModelServerError) or (status or 0) >= 500:
        text = f"{who} failed with a server error (HTTP {status or '5xx'}); try again later."
    elif has(x.ModelRequestRejectedError) or status is not None:
        text = f"{who} rejected the request (HTTP {status or 400}) for {model}."
    elif has(x.UserError):
        text = (
            f"The model setup failed: {next(str(e) for e in chain if isinstance(e, x.UserError))}"
        )
    else:
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        text = f"The call to {model} failed: {type(exc).__name__}" + (
            f": {detail}" if detail else ""
        )
    return redact(text, extra_env=extra)


def _guess_key_env(exc: BaseException) -> str | None:
    for e in _chain(exc):
        mod = type(e).__module__.split(".")[0]
        if mod in ("openai", "anthropic"):
            return KEY_ENV[mod]
    return None


__all__ = [
    "OFFLINE_DISPLAY",
    "ROLE_THINKING",
    "ModelConfigError",
    "ModelRegistry",
    "ResolvedModel",
    "Role",
    "RoleSpec",
    "build_model",
    "configure_telemetry",
    "cost_usd",
    "describe_model_error",
    "doctor_info",
    "is_local_url",
    "ollama_can_think",
    "redact",
    "resolve_model",
    "role_spec",
    "safe_url",
    "thinking_setting",
]
