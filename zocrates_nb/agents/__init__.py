"""Agents: model configuration and resolution (`models`), the litellm-backed model, and the
coordinator, search pipeline, synthesizer and verifier built on them."""

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
