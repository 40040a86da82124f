"""What the configuration asks of one role, before any model is built: which model string from
which config key, its endpoint, whether that endpoint is in the cloud, the key variable and its
status (never the value), and the thinking level to send. No network, no key values."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal, cast, get_args

from pydantic_ai.settings import ModelSettings

from zocrates_nb.agents.providers import DEFAULT_URLS, KEY_ENV, LITELLM_LOCAL, OPENAI_FAMILY
from zocrates_nb.config import OFFLINE_MODEL, ROLES, ModelEndpoint, Settings
from zocrates_nb.redaction import is_local_url, safe_url

Role = Literal[
    "coordinator", "search", "synthesizer", "verifier", "online_search", "online_synthesizer"
]
assert get_args(Role) == ROLES

ROLE_THINKING: dict[str, str] = {
    "coordinator": "medium",
    "search": "low",
    "synthesizer": "high",
    "verifier": "off",  # a yes/no support check: speed over deliberation
    "online_search": "low",  # fast retrieval across the scholarly APIs
    "online_synthesizer": "high",  # choosing and explaining the recommendations
}


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
