"""The model role: a registered model (`ModelPlugin`) of a kind (`DENSE`, `RERANKER`, `LATE`), loaded with
`ModelSettings`, giving an encoder of that kind (`DenseEncoder`, `CrossEncoder`, `LateEncoder`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

DENSE, RERANKER, LATE = "dense", "reranker", "late"


class DenseEncoder(Protocol):
    """Texts to unit-length vectors; questions may be encoded differently from documents (a prefix).

    Optionally ``token_limit`` (the tokens it reads of a text) and ``truncates(texts) -> int`` (how many of
    `texts` are longer): the run's plan warns where a model would read only the start of most chunks."""

    name: str
    dim: int

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray: ...


class CrossEncoder(Protocol):
    """Scores (question, passage) pairs; higher is more relevant."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray: ...


class LateEncoder(Protocol):
    """Token vectors (unit length) for late interaction: one matrix per text."""

    name: str
    dim: int

    def encode_documents(self, texts: Sequence[str]) -> list[np.ndarray]: ...

    def encode_query(self, text: str) -> np.ndarray: ...


class ModelPlugin(Protocol):
    """A registered model: a short ``name``, its ``kind``, a ``label`` people read, and ``load``."""

    name: ClassVar[str]
    kind: ClassVar[str]
    label: ClassVar[str]

    def load(self, settings: ModelSettings) -> Any: ...


@dataclass(frozen=True)
class ModelSettings:
    threads: int = 1
    batch_size: int = 32
    max_tokens: int = 512
    """The cross-encoder's (question, passage) length in tokens (`models.passage_tokens`); document encoders
    keep their own (bge-small 512), so this never shortens what the dense index holds."""
    device: str = "auto"
    """Where in-process models run (`models.device`): ``auto`` (a CUDA GPU where torch or onnxruntime sees
    one, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``."""


class ModelSource(Protocol):
    """The run's models as an engine, a setup or a judge sees them (the run gives `core.models.loading.Models`):
    each loaded once by name, under the run's `settings`; `label` is what people read, `cache_space` where its
    results are kept by content, `pair_scores` the cross-encoder scores kept across runs (or None)."""

    settings: ModelSettings
    pair_scores: Any

    def get(self, name: str, kind: str) -> Any: ...

    def dense(self, name: str) -> DenseEncoder: ...

    def reranker(self, name: str) -> CrossEncoder: ...

    def late(self, name: str) -> LateEncoder: ...

    def label(self, name: str) -> str: ...

    def cache_space(self, name: str) -> str: ...
