"""The local sentence model at question time, run by ONNX Runtime: a fresh `ask` process embeds
its queries and sentences without importing torch, transformers or sentence-transformers
(≈ 4 s of a 7.5 s first answer on a quiet machine; ONNX Runtime and the tokenizer load in
≈ 0.4 s).

The model is exported once per machine, by the indexer (torch is loaded there anyway), to the
user's cache (`$ZOCRATES_MODEL_CACHE`, else `$XDG_CACHE_HOME/zocrates-nb/models`, as
`<name>-<weights size>.onnx`: derived from the installed model, never the user's data), and
only for a model of sentence-transformers' standard
three modules (a BERT encoder, mean pooling, normalisation), whose pooling is then done here as
sentence-transformers does it: the vectors agree with the indexed ones to a cosine of 1.0
(tests/test_index_query_model.py). Without the file (an index made before it existed, a model
of another shape, the export failing) the model runs as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)



def cache_dir() -> Path:
    """Where exported models are kept (one per machine, like the Hugging Face cache)."""
    env = os.environ.get("ZOCRATES_MODEL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "zocrates-nb" / "models"

_STANDARD = [
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
]
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def exportable(model_dir: Path) -> bool:
    """A BERT encoder with mean pooling and normalisation, as sentence-transformers saves it."""
    try:
        modules = [m["type"] for m in _read_json(model_dir / "modules.json")]
        pooling = _read_json(model_dir / "1_Pooling" / "config.json")
        config = _read_json(model_dir / "config.json")
    except (OSError, ValueError, KeyError, TypeError):
        return False
    mean_only = pooling.get("pooling_mode_mean_tokens") and not any(
        v for k, v in pooling.items() if k.startswith("pooling_mode_") and k != (
            "pooling_mode_mean_tokens")
    )  # fmt: skip
    return (modules == _STANDARD and bool(mean_only) and config.get("model_type") == "bert"
            and (model_dir / "tokenizer.json").is_file())  # fmt: skip


def onnx_file(name: str, model_dir: Path) -> Path:
    """Where the exported model of `name` lives (its weights' size in the file name: other
    weights under the same name are exported again)."""
    weights = model_dir / "model.safetensors"
    size = weights.stat().st_size if weights.is_file() else 0
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "model"
    return cache_dir() / f"{safe}-{size}.onnx"


def export(model_dir: Path, out: Path) -> None:
    """Export the encoder of a sentence-transformers model directory to ONNX (atomically)."""
    import torch
    from transformers import BertModel

    model = BertModel.from_pretrained(str(model_dir)).eval()

    class Encoder(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, ids: Any, mask: Any, types: Any) -> Any:
            return self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)[0]

    sample = torch.ones(2, 8, dtype=torch.long)
    axes = {name: {0: "batch", 1: "tokens"} for name in (*_INPUTS, "tokens")}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        with torch.no_grad():
            torch.onnx.export(Encoder(), (sample, sample, torch.zeros_like(sample)), str(tmp),
                              input_names=list(_INPUTS), output_names=["tokens"],
                              dynamic_axes=axes, opset_version=17, dynamo=False)  # fmt: skip
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def ensure_exported(name: str, model_dir: Path) -> Path | None:
    """The model's ONNX file, exported now if missing (None: not exportable, or the export
    failed; the model then runs as before and the failure is logged)."""
    if not exportable(model_dir):
        return None
    out = onnx_file(name, model_dir)
    if out.is_file():
        return out
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the exporter's notes on its own operators
            export(model_dir, out)
    except Exception as e:  # the export is an optimisation: never an indexing error
        log.warning("could not export %s for question time: %s", name, e)
        return None
    with _LOCK:
        _LOADED.pop(name, None)  # a process that found none loads it next time
    return out


class QueryModel:
    """The exported encoder with the tokenizer and pooling of sentence-transformers."""

    def __init__(self, onnx_path: Path, model_dir: Path) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        config = {}
        with contextlib.suppress(OSError, ValueError):
            config = _read_json(model_dir / "sentence_bert_config.json")
        self.lower = bool(config.get("do_lower_case"))
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(int(config.get("max_seq_length") or 256))
        self.tokenizer.enable_padding()
        options = ort.SessionOptions()
        options.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), options,
                                            providers=["CPUExecutionProvider"])  # fmt: skip
        self._lock = threading.Lock()

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit-length mean-pooled vectors, one row per text."""
        out: list[np.ndarray] = []
        for i in range(0, len(texts), batch_size):
            batch = [t.strip().lower() if self.lower else t.strip()
                     for t in texts[i : i + batch_size]]  # fmt: skip
            enc = self.tokenizer.encode_batch(batch)
            feed = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            with self._lock:
                tokens = self.session.run(None, feed)[0]
            mask = feed["attention_mask"][..., None].astype(np.float32)
            pooled = (tokens * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out.append(pooled / np.clip(norms, 1e-12, None))
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, 0), np.float32)


_LOADED: dict[str, QueryModel | None] = {}
_LOCK = threading.Lock()


def export_for_questions(name: str, model_path: Callable[[str], str | Path]) -> None:
    """The index's local model exported for question time, once per machine (a remote
    embedder or a model not on disk has nothing to export); `model_path` finds its folder."""
    from zocrates_nb.index.embedding_remote import REMOTE_PREFIX

    if name.startswith(REMOTE_PREFIX):
        return
    try:
        directory = Path(model_path(name))
    except Exception:
        return
    if directory.is_dir():
        ensure_exported(name, directory)


def query_model(name: str, model_dir: Path) -> QueryModel | None:
    """The process-wide question-time model of `name` (None: not exported, or not loadable:
    the model then runs as before)."""
    with _LOCK:
        if name in _LOADED:
            return _LOADED[name]
        got: QueryModel | None = None
        path = onnx_file(name, model_dir) if exportable(model_dir) else None
        if path is not None and path.is_file():
            try:
                got = QueryModel(path, model_dir)
            except Exception as e:  # a damaged file: the model runs as before
                log.warning("could not load %s for question time: %s", path, e)
        _LOADED[name] = got
        return got


def loaded() -> list[str]:
    """Names whose question-time model this process has loaded."""
    return [name for name, m in _LOADED.items() if m is not None]


__all__ = ["QueryModel", "cache_dir", "ensure_exported", "exportable", "loaded", "onnx_file",
           "query_model"]
