"""Agents: model configuration and resolution (`models`), the litellm-backed model, and the
coordinator, search pipeline, synthesizer and verifier built on them."""

import pydantic_ai

from zocrates_nb.agents.models import (
    OFFLINE_DISPLAY,
    ModelConfigError,
    ModelRegistry,
    ResolvedModel,
    cost_usd,
    describe_model_error,
    doctor_info,
    resolve_model,
)

# pydantic-ai prints a first-run banner (its logo, the agent's internals and a hosted service's
# sign-up link) on an interactive terminal: a product's console is its own, and "nothing leaves
# your machine" is not followed by an advertisement. Every agent module imports this package.
pydantic_ai.BANNER_ENABLED = False

# The agents and the pipeline, imported on first use (they pull in retrieval and the index).
_LAZY = {
    "OfflineEngine": "offline",
    "SearchPipeline": "pipeline",
    "coordinator_agent": "coordinator",
    "search_agent": "search_agent",
    "synthesizer_agent": "synthesizer",
    "verifier_agent": "verifier",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f"zocrates_nb.agents.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'zocrates_nb.agents' has no attribute {name!r}")


__all__ = [
    "OFFLINE_DISPLAY",
    "ModelConfigError",
    "ModelRegistry",
    "ResolvedModel",
    "cost_usd",
    "describe_model_error",
    "doctor_info",
    "resolve_model",
]
