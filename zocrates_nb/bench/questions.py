"""The questions the panel and server benchmarks ask: plain ones the built-in sample answers."""

QUESTIONS = [
    "How does reciprocal rank fusion combine rankings?",
    "What is a fencing token?",
    "Why do lock services use a lock delay?",
    "What does BM25 reward?",
    "How should tables in research notebooks be organised?",
    "What should a retrieval evaluation check?",
]
