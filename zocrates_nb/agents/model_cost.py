"""What a request cost, from the price table LiteLLM ships (read as data, no network).

The table is read when a cost is first needed, straight from the JSON file in LiteLLM's
package: pricing an `openai:` model never imports LiteLLM itself (seconds of import time).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

from zocrates_nb.agents.providers import OPENAI_FAMILY
from zocrates_nb.config import OFFLINE_MODEL

PRICE_FILE = "model_prices_and_context_window_backup.json"


@functools.cache
def price_table() -> dict[str, Any]:
    """LiteLLM's packaged price table ({} when LiteLLM is not installed or the file unreadable)."""
    try:
        spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    except (ImportError, ValueError):
        return {}
    for folder in (spec.submodule_search_locations or []) if spec else []:
        try:
            table = json.loads((Path(folder) / PRICE_FILE).read_text("utf-8"))
        except (OSError, ValueError):
            continue
        return table if isinstance(table, dict) else {}
    return {}


def cost_usd(model_string: str | None, input_tokens: int, output_tokens: int) -> float | None:
    """Cost of a request from the price table; None when the model is unknown.

    The offline engine costs nothing to run but has no price entry: None.
    """
    if not model_string or model_string == OFFLINE_MODEL or ":" not in model_string:
        return None
    provider, _, name = model_string.partition(":")
    family = "openai" if provider in OPENAI_FAMILY else provider
    if provider == "litellm":
        candidates = [name, name.split("/", 1)[-1]]
    elif family in ("openai", "anthropic"):
        candidates = [name, f"{family}/{name}"]
    else:
        candidates = [f"{family}/{name}", name]
    table = price_table()
    for candidate in candidates:
        entry = table.get(candidate)
        if not isinstance(entry, dict) or "input_cost_per_token" not in entry:
            continue
        try:
            return float(entry["input_cost_per_token"]) * input_tokens + float(
                entry.get("output_cost_per_token") or 0.0
            ) * output_tokens
        except (TypeError, ValueError):
            continue
    return None
