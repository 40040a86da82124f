"""The local sentence model at question time (index/query_model.py): exported once to ONNX, it
gives the vectors torch gives (the index's stored vectors stay comparable), and a process that
asks imports neither torch nor transformers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from zocrates_nb.index import query_model
from zocrates_nb.index.embedder import DEFAULT_MODEL, Embedder, load_model, model_path

TEXTS = [
    "How does Raft elect a leader?",
    "Bigtable uses Chubby to keep track of tablet servers.",
    "  A sentence with spaces around it, and a word split by hyphen- ation.  ",
    "x " * 400,  # longer than the model's 256 tokens: truncated as sentence-transformers does
]


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cache = tmp_path_factory.mktemp("model-cache")
    old = os.environ.get("ZOCRATES_MODEL_CACHE")
    os.environ["ZOCRATES_MODEL_CACHE"] = str(cache)
    try:
        got = query_model.ensure_exported(DEFAULT_MODEL, Path(model_path(DEFAULT_MODEL)))
    finally:
        if old is None:
            os.environ.pop("ZOCRATES_MODEL_CACHE", None)
        else:
            os.environ["ZOCRATES_MODEL_CACHE"] = old
    assert got is not None and got.is_file() and got.parent == cache
    return cache


def test_the_exported_model_gives_the_vectors_torch_gives(exported: Path) -> None:
    directory = Path(model_path(DEFAULT_MODEL))
    fast = query_model.QueryModel(next(exported.glob("*.onnx")), directory)
    mine = fast.encode(TEXTS, batch_size=3)
    theirs = load_model(DEFAULT_MODEL).encode(TEXTS, normalize_embeddings=True)
    cos = (mine * theirs).sum(axis=1)
    assert mine.shape == theirs.shape and np.all(cos > 0.9999), cos


def test_only_a_standard_sentence_model_is_exported(tmp_path: Path) -> None:
    assert query_model.exportable(Path(model_path(DEFAULT_MODEL)))
    (tmp_path / "modules.json").write_text('[{"type": "sentence_transformers.models.Dense"}]')
    assert not query_model.exportable(tmp_path)
    assert query_model.ensure_exported("odd", tmp_path) is None


def test_a_question_process_embeds_without_torch(exported: Path) -> None:
    code = (
        "import sys\n"
        "from zocrates_nb.index.embedder import Embedder, loaded_models\n"
        "e = Embedder()\n"
        "v = e.embed_query('How does Raft elect a leader?')\n"
        "w = e.embed(['a sentence', 'another one'])\n"
        "heavy = [m for m in ('torch', 'transformers', 'sentence_transformers') "
        "if m in sys.modules]\n"
        "print(len(v), len(w), heavy, loaded_models())\n"
    )
    env = {**os.environ, "ZOCRATES_MODEL_CACHE": str(exported)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=300).stdout  # fmt: skip
    assert out.strip() == f"384 2 [] ['{DEFAULT_MODEL}']"


def test_without_an_export_the_model_runs_by_torch(tmp_path: Path) -> None:
    old = os.environ.get("ZOCRATES_MODEL_CACHE")
    os.environ["ZOCRATES_MODEL_CACHE"] = str(tmp_path)
    query_model._LOADED.pop(DEFAULT_MODEL, None)
    try:
        assert Embedder()._question_time() is None
        assert len(Embedder().embed_query("a question")) == 384
    finally:
        query_model._LOADED.pop(DEFAULT_MODEL, None)
        if old is None:
            os.environ.pop("ZOCRATES_MODEL_CACHE", None)
        else:
            os.environ["ZOCRATES_MODEL_CACHE"] = old
