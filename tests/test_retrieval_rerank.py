"""Reranking: a tiny cross-encoder the test trains and saves, the named fallback on the real
corpus, and the failure path (a real model that breaks on long input keeps retrieval order)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zocrates_nb.config import RetrievalSettings
from zocrates_nb.retrieval import FALLBACK_METHOD, Reranker, RunState, Toolkit, rerank_state
from zocrates_nb.retrieval.evidence import format_evidence

WORDS = ("raft leader election term log entries majority vote follower candidate attention "
         "transformer heads softmax query key value encoder decoder layer the a of and is")
RAFT_DOC = "raft leader election term log entries majority vote"
ATTENTION_DOC = "attention transformer heads softmax query key value"


def _tiny_cross_encoder(directory: Path, *, labels: int = 1, train: bool = True) -> Path:
    """A 2-layer BERT cross-encoder with a hand-written vocabulary, saved by CrossEncoder."""
    import torch
    from sentence_transformers import CrossEncoder
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    directory.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS.split()]
    tokenizer = BertTokenizerFast(vocab={w: i for i, w in enumerate(vocab)}, model_max_length=64)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                        num_labels=labels, hidden_dropout_prob=0.0,
                        attention_probs_dropout_prob=0.0)
    model = BertForSequenceClassification(config)
    if train:  # relevance = the query's topic words appear in the passage
        pairs = [("raft leader", RAFT_DOC, 1.0), ("raft leader", ATTENTION_DOC, 0.0),
                 ("attention heads", ATTENTION_DOC, 1.0), ("attention heads", RAFT_DOC, 0.0),
                 ("majority vote", RAFT_DOC, 1.0), ("softmax query", RAFT_DOC, 0.0),
                 ("softmax query", ATTENTION_DOC, 1.0), ("majority vote", ATTENTION_DOC, 0.0)]
        batch = tokenizer([p[0] for p in pairs], [p[1] for p in pairs], padding=True,
                          return_tensors="pt")
        labels = torch.tensor([p[2] for p in pairs])
        optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)
        model.train()
        for _ in range(100):
            optimizer.zero_grad()
            logits = model(**batch).logits.squeeze(-1)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)
            loss.backward()
            optimizer.step()
        model.eval()
    hf_dir = directory / "hf"
    model.save_pretrained(hf_dir)
    tokenizer.save_pretrained(hf_dir)
    out = directory / "cross-encoder"
    CrossEncoder(str(hf_dir), device="cpu", local_files_only=True).save(str(out))
    return out


def test_a_configured_cross_encoder_ranks_by_relevance(tmp_path: Path) -> None:
    path = _tiny_cross_encoder(tmp_path / "ce")
    reranker = Reranker(RetrievalSettings(rerank_model=str(path)))
    assert reranker.method == f"cross-encoder:{path}"
    texts = [ATTENTION_DOC, RAFT_DOC]
    ranked = reranker.rank("raft leader", texts, prior_ranks=[1, 2])
    assert ranked.order == [1, 0] and ranked.method == f"cross-encoder:{path}"
    assert ranked.scores[1] > ranked.scores[0]
    assert reranker.rank("attention heads", texts, prior_ranks=[2, 1]).order == [0, 1]


def test_a_failing_reranker_keeps_retrieval_order(tmp_path: Path) -> None:
    # A real model that cannot score relevance: a 3-label classifier (as an NLI model is).
    path = _tiny_cross_encoder(tmp_path / "nli", labels=3, train=False)
    reranker = Reranker(RetrievalSettings(rerank_model=str(path)))
    ranked = reranker.rank("raft leader", [RAFT_DOC, ATTENTION_DOC, RAFT_DOC + " log"],
                           prior_ranks=[3, 1, 2])
    assert ranked.order == [1, 2, 0]
    assert ranked.method.startswith("retrieval-order (rerank failed: ")


def test_an_unavailable_cross_encoder_falls_back_by_name(tmp_path: Path) -> None:
    reranker = Reranker(RetrievalSettings(rerank_model=str(tmp_path / "missing")))
    assert reranker.embedder is None
    assert reranker.method == "retrieval-order"
    ranked = reranker.rank("q", ["a", "b"], prior_ranks=[2, 1])
    assert ranked.order == [1, 0]


@pytest.mark.corpus
def test_fallback_reranks_run_evidence_and_records_its_method(corpus_index: Any) -> None:
    index = corpus_index.index
    goal = "How does Raft change cluster membership safely using joint consensus?"
    kit = Toolkit(index, RunState.new(RetrievalSettings(word_ceiling=20000), goal=goal))
    kit.search_corpus("ZooKeeper watches and ephemeral znodes", limit=4)
    kit.search_corpus("multi-head attention", limit=4)
    kit.search_corpus("consensus", chunk_type="frontmatter", limit=5)
    kit.search_corpus("servers configuration change old new majorities", item_key="B4BVDRMA",
                      limit=4)
    reranker = Reranker(RetrievalSettings(rerank_model=str(Path("/nonexistent/ce"))),
                        embedder=index.embedder)
    assert reranker.method.startswith(f"{FALLBACK_METHOD} (cross-encoder unavailable")
    fallback = Reranker(RetrievalSettings(), embedder=index.embedder)
    assert fallback.method == FALLBACK_METHOD == "biencoder-bm25-fusion"
    final = rerank_state(kit.state, fallback)
    assert final and all(e.rerank_method == FALLBACK_METHOD for e in final)
    assert all(e.chunk_type != "frontmatter" for e in final)  # the survey is not evidence
    assert len(final) <= kit.state.max_rerank_chunks
    top = final[0]
    assert top.item_key == "B4BVDRMA"
    assert "membership" in top.section.lower() or "joint consensus" in top.text.lower()
    assert [e.rerank_score for e in final] == sorted((e.rerank_score or 0 for e in final),
                                                     reverse=True)
    xml = format_evidence(final)
    assert xml.count("<chunk ") == len(final) and "B4BVDRMA" not in xml


@pytest.mark.corpus
def test_rerank_caps_chunks_and_trims_words(corpus_index: Any) -> None:
    index = corpus_index.index
    state = RunState.new(RetrievalSettings(word_ceiling=20000, max_rerank_chunks=4),
                         goal="log replication")
    kit = Toolkit(index, state)
    kit.search_corpus("log replication leader followers", limit=10)
    final = rerank_state(state, Reranker(RetrievalSettings(), embedder=index.embedder))
    assert len(final) == 4
    state.word_ceiling = 500
    trimmed = rerank_state(state, Reranker(RetrievalSettings(), embedder=index.embedder))
    assert sum(e.words for e in trimmed) <= 500
