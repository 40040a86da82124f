"""What a request cost, from litellm's local price map (no network)."""

from __future__ import annotations

from zocrates_nb.agents.providers import OPENAI_FAMILY
from zocrates_nb.config import OFFLINE_MODEL


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
