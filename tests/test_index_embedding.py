"""Embeddings where the compute is: the GPU when torch sees one, or a lab's OpenAI-compatible
`/v1/embeddings` server (a real HTTP server on loopback serving the packaged model's vectors).
The index records which embedding produced it: another one re-embeds, never mixes."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest
from conftest import LibraryBuilder

from zocrates_nb.config import ConfigError, EmbeddingSettings, Settings, load_settings
from zocrates_nb.devtools.embedding_server import EmbeddingServer
from zocrates_nb.index import Index, index_library
from zocrates_nb.index.embedder import Embedder, embedding_identity, make_embedder, select_device
from zocrates_nb.index.embedding_remote import EmbeddingServerError, RemoteEmbedder

PASSAGES = [
    "Raft elects a leader with randomized election timeouts.",
    "BM25 saturates term frequency with the k1 parameter.",
    "A lock holder that fails loses its lease after the timeout.",
    "Tidy data: each variable is a column, each observation a row.",
    "Self-attention costs quadratic time in the sequence length.",
    "Garbage collection reclaims the chunks of deleted files lazily.",
    "short",
]


@pytest.fixture(scope="module")
def server() -> Any:
    with EmbeddingServer() as srv:
        yield srv


def _remote(srv: EmbeddingServer, **kw: Any) -> dict[str, Any]:
    return {"provider": "openai-compatible", "base_url": srv.url, "model": srv.model, **kw}


def test_server_vectors_match_local_ones_in_batches(server: EmbeddingServer) -> None:
    local = np.asarray(Embedder().embed(PASSAGES, threads=1))
    before = len(server.requests)
    remote = RemoteEmbedder(EmbeddingSettings(**_remote(server, batch_size=3)))
    got = np.asarray(remote.embed(PASSAGES))
    assert [len(r) for r in server.requests[before:]] == [3, 3, 1]  # batch_size texts a request
    assert got.shape == local.shape == (7, 384)
    np.testing.assert_allclose(got, local, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    query = remote.embed_query("how is a leader elected")
    assert float(np.dot(query, Embedder().embed_query("how is a leader elected"))) > 0.99999


def test_a_failed_request_is_retried(server: EmbeddingServer) -> None:
    server.failures[:] = [503, 500]
    before = len(server.requests)
    remote = RemoteEmbedder(EmbeddingSettings(**_remote(server, max_retries=2)))
    assert len(remote.embed(PASSAGES[:2])) == 2
    assert len(server.requests) == before + 1  # the two failures, then one served request
    assert server.failures == []


def test_failures_are_plain_sentences_without_the_key(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-embedding-key-never-printed"
    monkeypatch.setenv("LAB_EMBED_KEY", key)
    cases: list[tuple[dict[str, Any], list[int | float], str]] = [
        ({"max_retries": 0}, [401], "refused the key (HTTP 401)"),
        ({"max_retries": 1}, [502, 502], "answered HTTP 502"),
        ({"model": "no-such-model"}, [], "no model 'no-such-model' (HTTP 404)"),
        ({"timeout": 0.5, "max_retries": 0}, [3.0], "did not answer within 0.5 s"),
    ]
    for extra, failures, expected in cases:
        server.failures[:] = failures
        remote = RemoteEmbedder(
            EmbeddingSettings(**{**_remote(server, api_key_env="LAB_EMBED_KEY"), **extra})
        )
        with pytest.raises(EmbeddingServerError) as err:
            remote.embed(["a passage"])
        message = str(err.value)
        assert expected in message and server.url in message
        assert key not in message and "Traceback" not in message and "\n" not in message
    server.failures[:] = []
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    remote = RemoteEmbedder(EmbeddingSettings(**{**_remote(server), "base_url": closed,
                                                 "max_retries": 0}))
    with pytest.raises(EmbeddingServerError, match="cannot reach the embedding server"):
        remote.embed(["a passage"])
    monkeypatch.delenv("LAB_EMBED_KEY")
    with pytest.raises(EmbeddingServerError, match="LAB_EMBED_KEY, which is not set"):
        RemoteEmbedder(EmbeddingSettings(**_remote(server, api_key_env="LAB_EMBED_KEY"))).embed(
            ["x"]
        )


def test_the_key_is_sent_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAB_EMBED_KEY", "sk-lab")
    with EmbeddingServer(api_key="sk-lab") as srv:
        remote = RemoteEmbedder(EmbeddingSettings(**_remote(srv, api_key_env="LAB_EMBED_KEY")))
        assert len(remote.embed(["one passage"])) == 1
        monkeypatch.setenv("LAB_EMBED_KEY", "sk-wrong")
        with pytest.raises(EmbeddingServerError, match="refused the key"):
            RemoteEmbedder(
                EmbeddingSettings(**_remote(srv, api_key_env="LAB_EMBED_KEY", max_retries=0))
            ).embed(["one passage"])


def test_config_needs_an_address_and_a_model(tmp_path: Path) -> None:
    (tmp_path / "zocrates_config.json").write_text(
        '{"index": {"embedding": {"provider": "openai-compatible", "model": "m"}}}'
    )
    with pytest.raises(ConfigError, match=r"index.embedding: .*needs base_url"):
        load_settings(tmp_path)
    settings = Settings.model_validate({"index": {"embedding": {"model": "some/local-model"}}})
    assert embedding_identity(settings.index) == "some/local-model"
    old_key = Settings.model_validate({"index": {"embedding_model": "older/key"}})
    assert embedding_identity(old_key.index) == "older/key"  # an existing config still reads


def test_switching_embedding_reembeds_every_document_and_never_mixes(
    server: EmbeddingServer, library_builder: LibraryBuilder, tmp_path: Path
) -> None:
    b = library_builder
    b.paper("RAFT", "raft")
    home = tmp_path / "home"
    local = Index.open(home, Settings())
    first = index_library(b.library, local, progress=False)
    assert first.converted == 1 and local.catalog.get_meta("embedding_model") == server.model
    local_hits = [h.chunk.chunk_id for h in local.search("leader election", mode="dense")]
    chunks = local.catalog.chunk_count()
    vectors = local.dense.collection.count()  # a chunk has a vector per window (passages.py)
    local.close()

    remote_settings = Settings.model_validate({"index": {"embedding": _remote(server)}})
    remote = Index.open(home, remote_settings)
    served = sum(len(r) for r in server.requests)
    second = index_library(b.library, remote, progress=False)
    # Every document re-embedded through the server from its cached bundle, none converted.
    assert (second.converted, second.reused, second.unchanged) == (0, 1, 0)
    assert sum(len(r) for r in server.requests) - served == vectors > chunks
    assert remote.catalog.get_meta("embedding_model") == f"openai-compatible:{server.model}"
    assert remote.dense.count() == chunks
    before = len(server.requests)
    remote_hits = [h.chunk.chunk_id for h in remote.search("leader election", mode="dense")]
    assert len(server.requests) == before + 1  # the query went to the server too
    assert remote_hits == local_hits  # same model, same vectors, same ranking
    remote.close()

    # The remote-embedded index opened with the local model configured: no silent mix.
    reopened = Index.open(home, Settings())
    with pytest.raises(ConfigError, match=r"no longer configured.*zocrates-nb index"):
        reopened.search("leader election", mode="dense")
    assert reopened.search("leader election", mode="bm25")  # lexical search still answers
    third = index_library(b.library, reopened, progress=False)
    assert (third.converted, third.reused) == (0, 1)
    assert reopened.catalog.get_meta("embedding_model") == server.model
    reopened.close()


def test_a_gpu_is_used_when_torch_sees_one() -> None:
    import torch

    with mock.patch.object(torch.cuda, "is_available", return_value=True):
        assert select_device("auto") == "cuda"
        assert Embedder(device="auto").device == "cuda"
        assert Embedder(device="auto", precision="bfloat16").bf16 is False  # CPU autocast only
    with mock.patch.object(torch.cuda, "is_available", return_value=False), mock.patch.object(
        torch.backends.mps, "is_available", return_value=True
    ):
        assert select_device("auto") == "mps"
    with mock.patch.object(torch.cuda, "is_available", return_value=False), mock.patch.object(
        torch.backends.mps, "is_available", return_value=False
    ):
        assert select_device("auto") == "cpu"
        assert select_device("cuda") == "cuda"  # asked for explicitly: torch's error, if any
    settings = Settings.model_validate({"index": {"embedding": {"device": "cpu", "batch_size": 8}}})
    emb = make_embedder(settings.index)
    assert isinstance(emb, Embedder) and emb.device == "cpu" and emb.batch_size == 8


@pytest.mark.skipif(
    not __import__("torch").cuda.is_available(), reason="no CUDA GPU on this machine"
)
def test_gpu_vectors_match_cpu_ones() -> None:  # pragma: no cover - needs a GPU
    gpu = np.asarray(Embedder(device="cuda").embed(PASSAGES))
    cpu = np.asarray(Embedder(device="cpu").embed(PASSAGES, threads=1))
    assert np.min(np.sum(gpu * cpu, axis=1)) > 0.999


def test_a_text_embedded_once_is_served_from_the_process_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reranker, the offline writer and the support score embed the same windows and
    sentences in one answer: a second Embedder in the process encodes only what is new."""
    encoded: list[str] = []
    real = Embedder._embed_new  # the exported model at question time, else torch

    def counting(self: Embedder, texts: list[str], threads: int | None) -> list[list[float]]:
        encoded.extend(texts)
        return real(self, texts, threads)

    monkeypatch.setattr(Embedder, "_embed_new", counting)
    first = Embedder().embed(["cache probe alpha", "cache probe beta"])
    second = Embedder().embed(["cache probe beta", "cache probe gamma", "cache probe beta"])
    assert encoded == ["cache probe alpha", "cache probe beta", "cache probe gamma"]
    assert second[0] == second[2] == first[1]
    fresh = Embedder()._encode(["cache probe gamma"])[0]
    np.testing.assert_allclose(second[1], fresh, atol=1e-5)
