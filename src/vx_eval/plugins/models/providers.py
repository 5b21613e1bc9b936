"""Served models' wire formats (`core.models.endpoints.Provider`): OpenAI's embeddings API (and every server that
speaks it: Azure OpenAI's v1 route, vLLM, TEI, Infinity, Ollama, LiteLLM) with a Cohere-shaped ``/rerank``
beside it (Infinity, Jina, TEI behind a proxy), Cohere and Voyage through their official clients with their
query and document input types. Each client is made with its own retries off: the run's policy retries
(`core.models.served`), honouring Retry-After, so the count of tries is bounded once.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import numpy as np

from vx_eval import hookimpl
from vx_eval.plugin import Billed, ConfigError, Embedded, Failure, InputType, ModelEndpoint, Reranked, on_first_use

httpx = on_first_use("httpx")


def _seconds(headers: Any) -> float | None:
    """A Retry-After (or retry-after-ms) header in seconds; None where absent or a date."""
    if not headers:
        return None
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return float(ms) / 1000
        value = headers.get("retry-after") or headers.get("Retry-After")
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _status_failure(status: int | None, headers: Any, message: str) -> Failure:
    transient = status == 429 or (status is not None and status >= 500) or status == 408
    return Failure(status, transient, _seconds(headers) if transient else None, message=message)


def _client(module: str, extra: str, endpoint: ModelEndpoint) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f'served models of provider {endpoint.provider} need its client: pip install "vx-eval[{extra}]"'
        ) from None


def _installed(module: str, extra: str) -> str | None:
    try:
        importlib.import_module(module)
    except ImportError:
        return f'its client is not installed: pip install "vx-eval[{extra}]"'
    return None


class OpenAIProvider:
    """OpenAI's ``/embeddings`` through the official client; reranking as a Cohere-shaped ``/rerank`` at the
        same base URL (OpenAI itself has none: name a server that does). Its chat endpoints are the chat judge's and
    writer's (`vx_eval.llm.chat`), never asked to embed."""

    name: ClassVar[str] = "openai"
    kinds: ClassVar[frozenset[str]] = frozenset({"dense", "reranker", "chat"})
    max_batch: ClassVar[int] = 2048  # OpenAI's limit on inputs a request
    default_url: ClassVar[str] = "https://api.openai.com/v1"

    def __init__(self, endpoint: ModelEndpoint, key: str | None) -> None:
        openai = _client("openai", "chat", endpoint)

        self.endpoint = endpoint
        self._openai, self._httpx = openai, httpx
        base = endpoint.base_url or self.default_url
        self._client = openai.OpenAI(
            base_url=base, api_key=key or "not-needed", timeout=endpoint.timeout, max_retries=0
        )
        self._http = httpx.Client(base_url=base.rstrip("/") + "/", timeout=endpoint.timeout)
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.errors: tuple[type[BaseException], ...] = (openai.APIError, httpx.HTTPError)

    @classmethod
    def missing(cls) -> str | None:
        return _installed("openai", "chat")

    def embed(self, texts: Sequence[str], input_type: InputType) -> Embedded:
        e = self.endpoint
        extra: dict[str, Any] = {"dimensions": e.dimensions} if e.dimensions else {}
        answer = self._client.embeddings.create(model=e.model, input=list(texts), **extra)
        rows = sorted(answer.data, key=lambda d: d.index)
        usage = getattr(answer, "usage", None)
        tokens = getattr(usage, "prompt_tokens", None) if usage is not None else None
        return Embedded(np.asarray([r.embedding for r in rows], dtype=np.float32), Billed(tokens=tokens))

    def rerank(self, query: str, documents: Sequence[str]) -> Reranked:
        body = {"model": self.endpoint.model, "query": query, "documents": list(documents), "top_n": len(documents)}
        response = self._http.post("rerank", json=body, headers=self._headers)
        response.raise_for_status()
        return _cohere_shaped(response.json(), len(documents))

    def failure(self, exc: BaseException) -> Failure:
        openai, httpx = self._openai, self._httpx
        if isinstance(exc, openai.APIStatusError):
            return _status_failure(exc.status_code, exc.response.headers, exc.message)
        if isinstance(exc, httpx.HTTPStatusError):
            return _status_failure(exc.response.status_code, exc.response.headers, exc.response.text[:300])
        if isinstance(exc, openai.APITimeoutError | httpx.TimeoutException):
            return Failure(None, True, message="timed out")
        return Failure(None, True, unreachable=True, message=str(exc))


def in_order(scored: Iterable[tuple[Any, Any]], n: int) -> list[float]:
    """Scores by the index of the document they score (a rerank answer lists them best first), in the order
    the documents were sent; a document the answer left out scores below every other."""
    scores = [float("-inf")] * n
    for index, score in scored:
        if score is not None:
            scores[int(index)] = float(score)
    return scores


def _cohere_shaped(data: Any, n: int) -> Reranked:
    """Scores from a Cohere-shaped rerank answer (``results: [{index, relevance_score}]``), in the order sent."""
    rows = data.get("results") or data.get("data") or []
    scores = in_order(((row["index"], row.get("relevance_score", row.get("score"))) for row in rows), n)
    meta = (data.get("meta") or {}).get("billed_units") or {}
    usage = data.get("usage") or {}
    return Reranked(scores, Billed(tokens=usage.get("total_tokens"), searches=meta.get("search_units")))


class CohereProvider:
    """Cohere's v2 embed (``search_document`` / ``search_query``) and rerank, through the official client."""

    name: ClassVar[str] = "cohere"
    kinds: ClassVar[frozenset[str]] = frozenset({"dense", "reranker"})
    max_batch: ClassVar[int] = 96  # Cohere's limit on texts an embed request
    default_url: ClassVar[str] = "https://api.cohere.com"

    def __init__(self, endpoint: ModelEndpoint, key: str | None) -> None:
        cohere = _client("cohere", "cohere", endpoint)

        self.endpoint = endpoint
        self._api_error = importlib.import_module("cohere.core.api_error").ApiError
        self._httpx = httpx
        self._client = cohere.ClientV2(
            api_key=key or "not-needed", base_url=endpoint.base_url, timeout=endpoint.timeout, max_retries=0
        )
        self.errors: tuple[type[BaseException], ...] = (self._api_error, httpx.HTTPError)

    @classmethod
    def missing(cls) -> str | None:
        return _installed("cohere", "cohere")

    def embed(self, texts: Sequence[str], input_type: InputType) -> Embedded:
        e = self.endpoint
        extra: dict[str, Any] = {"output_dimension": e.dimensions} if e.dimensions else {}
        answer = self._client.embed(
            model=e.model,
            texts=list(texts),
            input_type="search_query" if input_type == "query" else "search_document",
            embedding_types=["float"],
            **extra,
        )
        units = getattr(getattr(answer, "meta", None), "billed_units", None)
        tokens = getattr(units, "input_tokens", None)
        vectors = np.asarray(answer.embeddings.float_, dtype=np.float32)
        return Embedded(vectors, Billed(tokens=int(tokens) if tokens is not None else None))

    def rerank(self, query: str, documents: Sequence[str]) -> Reranked:
        answer = self._client.rerank(model=self.endpoint.model, query=query, documents=list(documents))
        scores = in_order(((row.index, row.relevance_score) for row in answer.results), len(documents))
        units = getattr(getattr(answer, "meta", None), "billed_units", None)
        searches = getattr(units, "search_units", None)
        return Reranked(scores, Billed(searches=int(searches) if searches is not None else None))

    def failure(self, exc: BaseException) -> Failure:
        if isinstance(exc, self._api_error):
            return _status_failure(exc.status_code, exc.headers, str(exc.body)[:300])
        if isinstance(exc, self._httpx.TimeoutException):
            return Failure(None, True, message="timed out")
        return Failure(None, True, unreachable=True, message=str(exc))


class VoyageProvider:
    """Voyage's embeddings (``document`` / ``query`` input types) and rerank, through the official client."""

    name: ClassVar[str] = "voyage"
    kinds: ClassVar[frozenset[str]] = frozenset({"dense", "reranker"})
    max_batch: ClassVar[int] = 128  # Voyage's limit on texts a request
    default_url: ClassVar[str] = "https://api.voyageai.com/v1"

    def __init__(self, endpoint: ModelEndpoint, key: str | None) -> None:
        voyageai = _client("voyageai", "voyage", endpoint)
        self.endpoint = endpoint
        self._error = voyageai.error
        self._client = voyageai.Client(
            api_key=key or "not-needed", max_retries=0, timeout=endpoint.timeout, base_url=endpoint.base_url
        )
        self.errors: tuple[type[BaseException], ...] = (voyageai.error.VoyageError,)

    @classmethod
    def missing(cls) -> str | None:
        return _installed("voyageai", "voyage")

    def embed(self, texts: Sequence[str], input_type: InputType) -> Embedded:
        e = self.endpoint
        answer = self._client.embed(list(texts), model=e.model, input_type=input_type, output_dimension=e.dimensions)
        tokens = getattr(answer, "total_tokens", None)
        return Embedded(np.asarray(answer.embeddings, dtype=np.float32), Billed(tokens=tokens))

    def rerank(self, query: str, documents: Sequence[str]) -> Reranked:
        answer = self._client.rerank(query, list(documents), model=self.endpoint.model)
        scores = in_order(((row.index, row.relevance_score) for row in answer.results), len(documents))
        return Reranked(scores, Billed(tokens=getattr(answer, "total_tokens", None)))

    def failure(self, exc: BaseException) -> Failure:
        status = getattr(exc, "http_status", None)
        if status is not None:
            return _status_failure(status, getattr(exc, "headers", None), str(getattr(exc, "_message", exc))[:300])
        if isinstance(exc, self._error.Timeout):
            return Failure(None, True, message="timed out")
        return Failure(None, True, unreachable=True, message=str(exc))


@hookimpl
def vx_eval_register_providers(register):
    register.add(OpenAIProvider)
    register.add(CohereProvider)
    register.add(VoyageProvider)
