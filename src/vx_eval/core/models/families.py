"""Model families: which models share a base model (a bi-encoder and a cross-encoder distilled from one MiniLM,
two sizes of one chat model) or a training lineage (the sentence-transformers models trained on the same billion
pairs). A judge grading setups a model of its own family ranks or embeds is partly grading itself (Clarke & Dietz
2024): those setups are related to it. A model plugin may say its `family` and its `lineage`; served and unknown
models are told by their names (`PATTERNS`) and by what is known of their lineage (`LINEAGE`), which a name alone
does not tell: multilingual-e5-small is an E5 model initialised from Multilingual-MiniLM."""

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


LINEAGE: tuple[tuple[str, tuple[str, ...]], ...] = (
    # initialised from microsoft/Multilingual-MiniLM-L12-H384 (Wang et al. 2024, the multilingual E5 report)
    (r"multilingual-e5-small", ("MiniLM",)),
    # sentence-transformers' all-* models share one training set of about a billion pairs (its model cards)
    (r"\ball-(minilm|mpnet|distilroberta)", ("sentence-transformers 1B pairs",)),
)
"""What is known of a model's lineage beyond its name's family: each pattern's families, all that match."""


def families_of(*names: str | None) -> frozenset[str]:
    """Every family the names tell, by `PATTERNS` (the first match) and by `LINEAGE` (every match)."""
    text = " ".join(n for n in names if n).casefold()
    found = {f for pattern, kin in LINEAGE if re.search(pattern, text) for f in kin}
    first = family_of(*names)
    return frozenset(found | ({first} if first else set()))
