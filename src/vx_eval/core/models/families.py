"""Model families: which models share a base model (a bi-encoder and a cross-encoder distilled from one MiniLM,
two sizes of one chat model). A judge grading setups a model of its own family ranks or embeds is partly grading
itself (Clarke & Dietz 2024): those setups are circular. A model plugin may say its `family`; served and
unknown models are told by their names."""

from __future__ import annotations

import re

PATTERNS: tuple[tuple[str, str], ...] = (
    (r"minilm", "MiniLM"),
    (r"\bbge\b|bge-|baai", "BGE"),
    (r"smollm", "SmolLM"),
    (r"qwen", "Qwen"),
    (r"llama", "Llama"),
    (r"mistral|mixtral|ministral", "Mistral"),
    (r"gemma", "Gemma"),
    (r"\bgemini", "Gemini"),
    (r"claude", "Claude"),
    (r"\bgpt|text-embedding-3|text-embedding-ada|\bo[134]\b|\bo[134]-", "OpenAI"),
    (r"cohere|embed-(english|multilingual)|rerank-(english|multilingual|v3)", "Cohere"),
    (r"voyage|rerank-2", "Voyage"),
    (r"\be5\b|e5-", "E5"),
    (r"\bgte\b|gte-", "GTE"),
    (r"jina", "Jina"),
    (r"nomic", "Nomic"),
    (r"phi-?\d", "Phi"),
)
"""What a model's name says of its family, first match wins."""


def family_of(*names: str | None) -> str | None:
    """The family the names (a model's id, its label) say, or None where none of `PATTERNS` matches."""
    text = " ".join(n for n in names if n).casefold()
    return next((family for pattern, family in PATTERNS if re.search(pattern, text)), None)
