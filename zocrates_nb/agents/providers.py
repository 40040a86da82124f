"""What we know about model providers: default endpoints, the variable each SDK reads its key
from, and which litellm providers run on the researcher's machine."""

from __future__ import annotations

DEFAULT_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "ollama": "http://localhost:11434/v1",
}
# The variable each provider's SDK reads its key from (used for errors and the missing-key check).
KEY_ENV = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google": "GOOGLE_API_KEY",
    "groq": "GROQ_API_KEY",
    "mistral": "MISTRAL_API_KEY",
    "cohere": "CO_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "xai": "XAI_API_KEY",
    "together": "TOGETHER_API_KEY",
    "fireworks": "FIREWORKS_API_KEY",
    "cerebras": "CEREBRAS_API_KEY",
    "huggingface": "HF_TOKEN",
}
OPENAI_FAMILY = ("openai", "openai-chat", "openai-responses")
# litellm providers that run on the researcher's machine by default.
LITELLM_LOCAL = ("ollama", "ollama_chat", "lm_studio", "llamafile", "hosted_vllm", "vllm")
