"""Served models at run time: a config's endpoint (`core.models.endpoints.ModelEndpoint`) as a dense encoder or a
cross-encoder the engines and setups use exactly as they use an in-process one.

Every request goes through one policy: texts in batches no larger than the provider takes (or the endpoint's
``batch``), at most ``rate`` requests a second, a timeout, and at most ``retries`` more tries after a 429 (its
Retry-After waited), a 5xx, a timeout or a dropped connection, ending in one clear error. What was sent is
counted (`ServedUsage`: requests, texts, tokens billed, the estimated cost). Documents' vectors are kept in
the run's embeddings cache by (provider, model, dimensions, input type, text) by the engines
(`cache_space`), so a second run sends no document again; questions' vectors are kept too and read back
only by searches whose time is not recorded (`core.run.engine.reuse_allowed`): a timed search always asks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vx_eval.core.contracts.endpoints import Embedded, InputType, ModelEndpoint, Provider, Reranked, ServedUsage
from vx_eval.core.contracts.engine import reuse_allowed
from vx_eval.core.errors import EngineError
from vx_eval.core.models.cache import KeyedCache, content_key
from vx_eval.core.models.prices import price_of
from vx_eval.core.remote import RateLimit, RemotePolicy

Answer = TypeVar("Answer", Embedded, Reranked)


def cache_space(endpoint: ModelEndpoint, input_type: InputType) -> str:
    """Where a served model's vectors are kept: the same model, size and input type share them, whatever
    name a config gives the endpoint."""
    return f"served:{endpoint.provider}:{endpoint.model}:{endpoint.dimensions or 'native'}:{input_type}"


class ServedCalls:
    """One endpoint's requests under the policy, and the count of what they sent."""

    def __init__(self, name: str, endpoint: ModelEndpoint, provider: type[Provider]) -> None:
        key = endpoint.api_key.value() if endpoint.api_key else None
        self.name, self.endpoint = name, endpoint
        self.provider: Provider = provider(endpoint, key)
        self.location = endpoint.base_url or provider.default_url
        self.batch = min(endpoint.batch or provider.max_batch, provider.max_batch)
        self.rate = RateLimit(endpoint.rate)
        read = self.provider.failure
        named = f"the key named by api_key (env {endpoint.api_key.env})" if endpoint.api_key else "the request"
        self.policy = RemotePolicy(
            target=f"model {name}",
            where=self.location,
            retries=endpoint.retries,
            errors=self.provider.errors,
            transient=lambda exc: read(exc).transient,
            refused=lambda exc: read(exc).status in (401, 403),
            unreachable=lambda exc: read(exc).unreachable,
            status=lambda exc: read(exc).status,
            retry_after=lambda exc: read(exc).retry_after,
            credentials=named,
            check="check the key, and that it may use this model",
        )
        self.lock = threading.Lock()
        self.requests = self.texts = self.cached = 0
        self.tokens: int | None = None
        self.searches: int | None = None

    def call(self, what: str, texts: int, request: Callable[[], Answer]) -> Answer:
        """One request under the policy, after the rate allows it; what it sent and was billed counted."""
        self.rate.wait()
        answer = self.policy(what, request)
        said = answer.billed
        with self.lock:
            self.requests += 1
            self.texts += texts
            if said.tokens is not None:
                self.tokens = (self.tokens or 0) + said.tokens
            if said.searches is not None:
                self.searches = (self.searches or 0) + said.searches
        return answer

    def note_cached(self, texts: int) -> None:
        with self.lock:
            self.cached += texts

    def usage(self) -> ServedUsage:
        e = self.endpoint
        price = price_of(e)
        by_search = price is not None and price.per == "thousand searches"
        billed = self.searches if by_search else self.tokens
        scale = 1_000 if by_search else 1_000_000
        cost = round(price.usd * billed / scale, 6) if price is not None and billed is not None else None
        return ServedUsage(
            name=self.name,
            provider=e.provider,
            model=e.model,
            kind=e.kind,
            location=self.location,
            requests=self.requests,
            retried=self.policy.retried,
            texts=self.texts,
            cached=self.cached,
            tokens=self.tokens,
            searches=self.searches,
            cost_usd=cost,
            price_source=price.source if price is not None and cost is not None else None,
        )


def _unit(vectors: np.ndarray) -> np.ndarray:
    """Rows as float32 unit vectors; rows already of unit length (what the services return) left as sent."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if vectors.size and np.all(np.abs(norms - 1) < 1e-4):
        return vectors
    return vectors / np.where(norms > 0, norms, 1)


class ServedEncoder:
    """A dense encoder over an endpoint: ``encode_documents`` / ``encode_queries`` as the in-process ones."""

    def __init__(self, calls: ServedCalls, cache: Path | None) -> None:
        self.calls = calls
        self.name = calls.name
        self._query_space = cache_space(calls.endpoint, "query")
        self._cache = cache
        self._dim = calls.endpoint.dimensions

    @property
    def concurrency(self) -> int:
        """Requests the engines may have in flight at once while they embed a corpus."""
        return self.calls.endpoint.concurrency

    @property
    def batch(self) -> int:
        """Texts one request carries."""
        return self.calls.batch

    @property
    def dim(self) -> int:
        """The vector size: the endpoint's `dimensions`, else learnt from the first vectors it sends."""
        if self._dim is None:
            self._dim = int(self._embed(["dimension probe"], "document").shape[1])
        return self._dim

    def _embed(self, texts: Sequence[str], input_type: InputType) -> np.ndarray:
        out = []
        step = self.calls.batch
        for start in range(0, len(texts), step):
            batch = list(texts[start : start + step])
            what = f"embedding {len(batch)} {'questions' if input_type == 'query' else 'texts'}"
            answer = self.calls.call(what, len(batch), partial(self.calls.provider.embed, batch, input_type))
            if answer.vectors.shape[0] != len(batch):
                raise EngineError(
                    f"model {self.name}: {self.calls.location} sent {answer.vectors.shape[0]} vectors for "
                    f"{len(batch)} texts"
                )
            out.append(_unit(answer.vectors))
        vectors = np.concatenate(out) if out else np.zeros((0, self._dim or 0), np.float32)
        if self._dim is None and len(vectors):
            self._dim = int(vectors.shape[1])
        return vectors

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "document")

    def note_cached(self, texts: int) -> None:
        """Told by the engines how many texts the embeddings cache held (never sent)."""
        self.calls.note_cached(texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        if self._cache is None:
            return self._embed(texts, "query")
        keys = [content_key(t) for t in texts]
        with KeyedCache(self._cache) as kept:
            found = kept.values(self._query_space, keys) if reuse_allowed.get() else {}
            todo = [i for i, k in enumerate(keys) if k not in found]
            if todo:
                fresh = self._embed([texts[i] for i in todo], "query")
                computed = {keys[i]: fresh[j].tobytes() for j, i in enumerate(todo)}
                kept.put(self._query_space, computed)
                found.update(computed)
            self.calls.note_cached(len(texts) - len(todo))
        return np.stack([np.frombuffer(found[k], dtype=np.float32) for k in keys])


class ServedReranker:
    """A cross-encoder over an endpoint's rerank route: ``score(question, passages)``, one request a question."""

    def __init__(self, calls: ServedCalls) -> None:
        self.calls = calls
        self.name = calls.name

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        scores: list[float] = []
        step = self.calls.batch
        for start in range(0, len(passages), step):
            batch = list(passages[start : start + step])
            request = partial(self.calls.provider.rerank, query, batch)
            answer = self.calls.call(f"reranking {len(batch)} passages", len(batch), request)
            scores += answer.scores
        return np.asarray(scores, dtype=np.float64)


def load_served(name: str, endpoint: ModelEndpoint, provider: type[Provider], cache: Path | None) -> Any:
    """The endpoint as the model its kind says (`ServedEncoder` or `ServedReranker`)."""
    calls = ServedCalls(name, endpoint, provider)
    return ServedReranker(calls) if endpoint.kind == "reranker" else ServedEncoder(calls, cache)
