"""Served models: embedding models and rerankers a run calls over the network (OpenAI, Cohere, Voyage, or any
server speaking their wire formats: vLLM, TEI, Infinity, Ollama, a LiteLLM proxy), declared in a config by a
name people choose and then named exactly as a built-in model is::

    models:
      endpoints:
        te3-small: {provider: openai, model: text-embedding-3-small, dimensions: 512, api_key: {env: OPENAI_API_KEY}}
        rerank-35: {provider: cohere, model: rerank-v3.5, kind: reranker, api_key: {env: COHERE_API_KEY}}
        gpt: {provider: openai, model: gpt-4o-mini, kind: chat, api_key: {env: OPENAI_API_KEY}}

A chat endpoint is named as a run's judge (``evaluation: {judge: gpt}``) or a question writer's model
(``writers: {chat: {model: gpt}}``): the chat plugins speak OpenAI's wire format, so its provider is ``openai``.

This module is the typed contract: what a config says of an endpoint (`ModelEndpoint`), what a provider
plugin does with it (`Provider`: one request's texts in, vectors or scores and the tokens billed out), and what
the report says was sent (`ServedUsage`). Batching, the rate, retries, the cache and the accounting are the
run's (`core.models.served`); providers only speak their wire format.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from vx_eval.core.contracts.fields import SecretRef, ServiceUrl

InputType = Literal["query", "document"]


class ModelEndpoint(BaseModel):
    """One served model of ``models.endpoints``: who serves it, which model, and how to call it."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    provider: str = Field(min_length=1)
    """A provider plugin: ``openai`` (every OpenAI-compatible server, Azure OpenAI's v1 route included),
    ``cohere``, ``voyage``; see `vx-eval plugins`."""
    model: str = Field(min_length=1)
    """The model (or Azure deployment) as the service names it."""
    kind: Literal["dense", "reranker", "chat"] = "dense"
    """``dense`` (an embedding model), ``reranker``, or ``chat`` (a chat model, to judge or to draft questions)."""
    base_url: ServiceUrl | None = None
    """The API's base (``http://127.0.0.1:8080/v1``); default: the provider's hosted API."""
    api_key: SecretRef | None = None
    """The key, by reference only: ``{env: OPENAI_API_KEY}``."""
    dimensions: int | None = Field(None, ge=1, le=65_536)
    """Vector size where the model can shorten its vectors (OpenAI's text-embedding-3, Cohere v4, Voyage)."""
    label: str | None = Field(None, min_length=1, max_length=80)
    """What reports call it; default: the model's own name."""
    timeout: float = Field(30.0, gt=0, le=600)
    """Seconds one request may take."""
    retries: int = Field(4, ge=0, le=10)
    """Further tries after a 429 (after its Retry-After), a 5xx, a timeout or a dropped connection."""
    batch: int | None = Field(None, ge=1, le=4_096)
    """Texts per request; default: the provider's limit."""
    rate: float | None = Field(None, gt=0, le=10_000)
    """Requests a second at most (default: as fast as the service answers)."""
    concurrency: int = Field(4, ge=1, le=64)
    """Requests in flight at once while a corpus is embedded (always within `rate`); 1: one after another."""
    price: float | None = Field(None, ge=0)
    """Estimated US dollars per million tokens (rerankers: per thousand searches); default: the price table."""


class ServedUsage(BaseModel):
    """What a run sent to one served model: for the report, and for the bill."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    provider: str
    model: str
    kind: str
    location: str
    """Where it answers: the base URL (never with credentials), or the provider's hosted API."""
    requests: int = 0
    """Requests that got an answer (retries not counted)."""
    retried: int = 0
    """Requests tried again after a 429, a 5xx or a timeout."""
    texts: int = 0
    """Texts sent (documents and questions; rerankers: passages scored)."""
    cached: int = 0
    """Texts found in the embeddings cache, not sent."""
    tokens: int | None = None
    """Tokens the service billed (None where it does not say)."""
    searches: int | None = None
    """Rerank searches billed (Cohere's search units)."""
    cost_usd: float | None = None
    """Estimated from the price table (or the endpoint's `price`); None where no price is known."""
    price_source: str | None = None

    def plus(self, other: ServedUsage) -> ServedUsage:
        """What this and `other` (the same model, sent from another process) sent together."""

        return self.model_copy(
            update={
                "requests": self.requests + other.requests,
                "retried": self.retried + other.retried,
                "texts": self.texts + other.texts,
                "cached": self.cached + other.cached,
                "tokens": _both(self.tokens, other.tokens),
                "searches": _both(self.searches, other.searches),
                "cost_usd": None if (cost := _both(self.cost_usd, other.cost_usd)) is None else round(cost, 6),
                "price_source": self.price_source or other.price_source,
            }
        )

    def minus(self, before: ServedUsage) -> ServedUsage:
        """What was sent since `before` (an earlier count of the same model in the same process)."""
        return self.model_copy(
            update={
                "requests": self.requests - before.requests,
                "retried": self.retried - before.retried,
                "texts": self.texts - before.texts,
                "cached": self.cached - before.cached,
                "tokens": _less(self.tokens, before.tokens),
                "searches": _less(self.searches, before.searches),
                "cost_usd": None if (cost := _less(self.cost_usd, before.cost_usd)) is None else round(cost, 6),
            }
        )


class WorkerCounts:
    """What other processes (a cluster's workers) have sent to served models, by (source, model name): a
    source is one worker's searches, or its model work, each counted by models of its own. Each of their
    answers carries all that source has sent so far, in any order: the largest count is the latest."""

    def __init__(self) -> None:
        self.latest: dict[tuple[str, str], ServedUsage] = {}
        self.lock = threading.Lock()

    def keep(self, worker: str, usage: Sequence[ServedUsage]) -> None:
        with self.lock:
            for sent in usage:
                kept = self.latest.get((worker, sent.name))
                if kept is None or sent.requests + sent.cached >= kept.requests + kept.cached:
                    self.latest[(worker, sent.name)] = sent

    def items(self) -> list[tuple[str, ServedUsage]]:
        with self.lock:
            return [(worker, sent) for (worker, _), sent in sorted(self.latest.items())]

    def get(self, source: str, name: str) -> ServedUsage | None:
        with self.lock:
            return self.latest.get((source, name))


Number = TypeVar("Number", int, float)


def _both(a: Number | None, b: Number | None) -> Number | None:
    """Two counts added, where either may be unknown (None only when both are)."""
    if a is None:
        return b
    return a if b is None else a + b


def _less(a: Number | None, b: Number | None) -> Number | None:
    """A count less an earlier one (unknown stays unknown; an earlier unknown counts as none)."""
    if a is None:
        return None
    return a if b is None else a - b


@dataclass(frozen=True)
class Billed:
    """What the service said one request cost: tokens, or rerank search units (None where it said nothing)."""

    tokens: int | None = None
    searches: int | None = None


@dataclass(frozen=True)
class Embedded:
    vectors: np.ndarray
    """One row per text, in the order sent (float32; normalised by the caller)."""
    billed: Billed


@dataclass(frozen=True)
class Reranked:
    scores: list[float]
    """One score per document, in the order sent."""
    billed: Billed


@dataclass(frozen=True)
class Failure:
    """A provider's reading of an exception its client raised."""

    status: int | None
    transient: bool
    """A 429, a 5xx, a timeout or a dropped connection: worth trying again."""
    retry_after: float | None = None
    """Seconds the service asked to wait (its Retry-After header)."""
    unreachable: bool = False
    message: str = ""


class Provider(Protocol):
    """A provider plugin: speaks one wire format. Made as ``cls(endpoint, key)`` once per endpoint; its calls
    are made under the run's policy (`core.models.served`: batches, rate, retries), never retried by the client."""

    name: ClassVar[str]
    kinds: ClassVar[frozenset[str]]
    """What it serves: ``{"dense", "reranker"}``."""
    max_batch: ClassVar[int]
    """Texts one request may carry."""
    default_url: ClassVar[str]
    """Where its hosted API answers (for reports)."""
    errors: tuple[type[BaseException], ...]
    """Its client library's exceptions: only these are read by `failure` and become messages."""

    def __init__(self, endpoint: ModelEndpoint, key: str | None) -> None: ...

    # Optional: a classmethod ``missing() -> str | None`` saying what to install when its client is absent,
    # asked when a config is checked, before any work.

    def embed(self, texts: Sequence[str], input_type: InputType) -> Embedded: ...

    def rerank(self, query: str, documents: Sequence[str]) -> Reranked: ...

    def failure(self, exc: BaseException) -> Failure:
        """What an exception of `errors` means: its status, whether to try again, after how long."""
        ...
