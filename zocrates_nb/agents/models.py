"""Which model plays each role and how hard it thinks: model resolution.

`zocrates_config.json` names a base model and per-role overrides (coordinator, search,
synthesizer, verifier, online_search, online_synthesizer; null inherits the base);
ZOCRATES_MODEL / ZOCRATES_<ROLE>_MODEL and arguments override the file.
`ModelRegistry.resolve(role)` turns that into a pydantic-ai `Model` plus model settings
(thinking, timeouts) — or None for the embedded offline engine, which never touches a network.
An edit to the file takes effect at the next `resolve` (mtime check).

Rules kept here:
- API keys come only from the environment (`api_key_env` names the variable); they are never
  stored, printed or logged, and `redact` scrubs them from any text we produce.
- No silent fallback: a missing key or package is a `ModelConfigError` at resolve time, a dead or
  unauthorised endpoint an error at use that `describe_model_error` turns into one sentence.
- Connecting is capped at 5 s by the HTTP clients, so a dead endpoint fails in seconds, and
  `models.timeout` is the deadline of a whole call, retries included (`deadline_settings`).

Beside it, one concept each: `role_spec` (what the config asks of a role, no network),
`providers` (endpoints, key variables), `ollama_probe`, `telemetry`, `model_cost`,
`model_errors`; secrets and URLs in `zocrates_nb.redaction`. Their public names are re-exported
here, so `from zocrates_nb.agents.models import …` keeps working.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from zocrates_nb.agents.model_cost import cost_usd
from zocrates_nb.agents.model_errors import describe_model_error
from zocrates_nb.agents.ollama_probe import ollama_can_think
from zocrates_nb.agents.providers import DEFAULT_URLS, OPENAI_FAMILY
from zocrates_nb.agents.role_spec import ROLE_THINKING, Role, RoleSpec, role_spec, thinking_setting
from zocrates_nb.agents.telemetry import configure_telemetry
from zocrates_nb.config import ROLES, ConfigError, ConfigWatcher, Settings
from zocrates_nb.redaction import is_local_url, redact, safe_url
from zocrates_nb.turn import OFFLINE_DISPLAY


class ModelConfigError(ConfigError):
    """A model that cannot be set up as configured; the message names the config key."""


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
        ModelSettings, {**deadline_settings(timeout), **thinking_setting(spec, can_think=can_think)}
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


SDK_RETRIES = 2  # transient failures (429, 5xx, dropped connections) are retried this often
# A Chat Completions stream that ends without a finish_reason was cut: an error, never "stop".
WHOLE_STREAMS: Any = {"openai_chat_streaming_requires_finish_reason": True}


def deadline_settings(timeout: float) -> ModelSettings:
    """`models.timeout` as the deadline of one whole model call: every SDK retry and the whole
    streamed answer fit inside it (`request_timeout`); each attempt waits at most as long
    (`timeout`), and the SDK's retries are set here, not left to its default."""
    return {"timeout": timeout, "request_timeout": timeout, "max_retries": SDK_RETRIES}


def _envs(spec: RoleSpec) -> tuple[str, ...]:
    return (spec.key_env,) if spec.key_env else ()


def _ollama(name: str, url: str, key: str | None, can_think: bool | None) -> Model:
    from pydantic_ai.models.ollama import OllamaModel
    from pydantic_ai.profiles import ModelProfile, merge_profile
    from pydantic_ai.providers.ollama import OllamaProvider

    provider = OllamaProvider(base_url=url, api_key=key)
    profile = merge_profile(
        provider.model_profile(name),
        ModelProfile(supports_thinking=bool(can_think)),
        WHOLE_STREAMS,
    )
    return OllamaModel(name, provider=provider, profile=profile)


def _openai(spec: RoleSpec, key: str | None) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.profiles import ModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider

    from zocrates_nb.agents.clean_bytes import clean_client

    if spec.base_url:
        # Any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, a gateway): Chat Completions.
        # Thinking goes out only when thinking_setting decided to send it.
        wants = "thinking" in thinking_setting(spec)
        compat = OpenAICompatibleProvider(
            "openai-compatible",
            base_url=spec.base_url,
            api_key=key,
            http_client=clean_client(),
            profile=ModelProfile(supports_thinking=wants),
        )
        if spec.provider == "openai-responses":
            return OpenAIResponsesModel(spec.model_name, provider=compat)
        return OpenAIChatModel(spec.model_name, provider=compat, profile=WHOLE_STREAMS)
    provider = OpenAIProvider(api_key=key, http_client=clean_client())
    if spec.provider == "openai-chat":
        return OpenAIChatModel(spec.model_name, provider=provider, profile=WHOLE_STREAMS)
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
                    self.telemetry_status = configure_telemetry(settings, self)
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
