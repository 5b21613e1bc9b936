"""Elasticsearch as a target, through the official `elasticsearch` client (8.x and 9.x clusters).

One document per chunk (``_id`` the chunk id): ``body`` (text, BM25), ``doc_id``, ``chunk_id``, ``page``, a
``dense_vector`` field per model (``vector_<model>`` unless ``vectors`` maps it otherwise; cosine, the
cluster's default HNSW and quantisation), and on each document's first chunk ``first: true`` with its
``title``, ``text`` and ``metadata``.

Setups: keyword (the cluster's BM25, a ``match`` query on ``body``), kNN per vector field (``k`` and
``num_candidates``; a ``script_score`` over every chunk with ``exact: true``), and hybrid through the
cluster's own retrievers: ``rrf`` (reciprocal-rank fusion) or, under ``search.fusion: convex``, ``linear``
with min-max normalisation. A cluster whose licence or version refuses a retriever gets the fusion done here
instead, said once. With ``inference_id`` naming a rerank inference endpoint, the cluster's
``text_similarity_reranker`` reranks the hybrid results itself (a setup of its own). Every search records
the cluster's own ``took`` beside the wall time.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from pydantic import Field

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    SERVICE_RANKER_PREFIX,
    Document,
    Engine,
    EngineError,
    EngineOptions,
    Hit,
    ModelSource,
    OpenContext,
    Query,
    RemotePolicy,
    SecretRef,
    ServiceUrl,
    fuse,
    on_first_use,
    record_server_time,
)
from vx_eval.plugins.engines.remote import (
    Built,
    RemoteHandle,
    RemoteOptions,
    by_document,
    collection_name,
    ensure_built,
    first_chunks,
    index_lookups,
    is_first_chunk,
    need,
    paged_document_ids,
    payload_hit,
    stored_documents,
)

_es = on_first_use("elasticsearch", "elasticsearch")
elastic_transport = on_first_use("elastic_transport", "elasticsearch")
helpers = on_first_use("elasticsearch.helpers", "elasticsearch")

FORMAT = 1
HIT_FIELDS = ["doc_id", "chunk_id", "page"]
BULK_BATCH = 200
RANKER = "text-similarity"


class ElasticsearchOptions(RemoteOptions):
    url: ServiceUrl
    """The cluster: ``https://localhost:9200`` (Elastic Cloud: its Elasticsearch endpoint)."""
    api_key: SecretRef | None = None
    """An API key (``{env: ELASTIC_API_KEY}``); or `user` and `password`."""
    user: str | None = None
    password: SecretRef | None = None
    verify_certs: bool = True
    vectors: dict[str, str] = Field(default_factory=dict)
    """Model -> dense_vector field, where the index names its fields otherwise (default ``vector_<model>``)."""
    num_candidates: int = Field(100, ge=1, le=10_000)
    """kNN's candidates per shard (at least k)."""
    exact: bool = False
    """Exact kNN (a ``script_score`` with ``cosineSimilarity`` over every chunk) instead of HNSW."""
    inference_id: str | None = None
    """A rerank inference endpoint of the cluster: adds the hybrid reranked by ``text_similarity_reranker``."""

    def field(self, model: str) -> str:
        return self.vectors.get(model, "vector_" + re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_"))

    def indexing(self) -> dict[str, Any]:
        return {**super().indexing(), "vectors": {m: self.field(m) for m in self.dense_models}}


def policy(options: ElasticsearchOptions, target: str) -> RemotePolicy:
    """Every call: the client's own errors, a 429 or 502-504 or a timeout tried again, 401/403 refused at
    once, a connection that cannot be made said in one line."""

    def status(exc: BaseException) -> object:
        return getattr(getattr(exc, "meta", None), "status", None)

    return RemotePolicy(
        target=target,
        where=options.url,
        retries=options.retries,
        errors=(_es.ApiError, elastic_transport.TransportError),
        transient=lambda exc: (
            isinstance(exc, elastic_transport.ConnectionTimeout) or status(exc) in (429, 502, 503, 504)
        ),
        refused=lambda exc: isinstance(exc, _es.AuthenticationException | _es.AuthorizationException),
        unreachable=lambda exc: (
            isinstance(exc, elastic_transport.ConnectionError)
            and not isinstance(exc, elastic_transport.ConnectionTimeout)
        ),
        already_exists=lambda exc: isinstance(exc, _es.BadRequestError) and "already_exists" in str(exc),
        status=status,
        check="check the API key, or user and password",
    )


def make_client(options: ElasticsearchOptions) -> Any:
    es = need("elasticsearch", "elasticsearch")
    auth: dict[str, Any] = {}
    if options.api_key:
        auth["api_key"] = options.api_key.value()
    elif options.user and options.password:
        auth["basic_auth"] = (options.user, options.password.value())
    return es.Elasticsearch(
        options.url, verify_certs=options.verify_certs, request_timeout=options.timeout, max_retries=0, **auth
    )


class ElasticsearchEngine(Engine[ElasticsearchOptions]):
    """Elasticsearch: BM25, kNN per vector field, the rrf and linear retrievers, its reranker, ``took``."""

    name: ClassVar[str] = "elasticsearch"
    Options: ClassVar[type[EngineOptions]] = ElasticsearchOptions

    def open(self, options: ElasticsearchOptions, context: OpenContext) -> ElasticsearchHandle:
        client = make_client(options)
        call = policy(options, context.target_name)
        index = collection_name(options, context)
        exists, stored = index_lookups(call, client, index)
        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            stored=stored,
            build=lambda built, wanted: _build(client, call, index, options, built, wanted),
            exists=exists,
            absent=f"Elasticsearch at {options.url} has no index '{index}'",
        )
        return ElasticsearchHandle(client, call, index, options, context.loaded, context)


def index_body(options: ElasticsearchOptions, built: Built) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "body": {"type": "text"},
        "doc_id": {"type": "keyword"},
        "chunk_id": {"type": "keyword"},
        "page": {"type": "integer"},
        "first": {"type": "boolean"},
        "title": {"type": "text", "index": False},
        "text": {"type": "text", "index": False},
        "metadata": {"type": "object", "enabled": False},
    }
    for model in options.dense_models:
        properties[options.field(model)] = {
            "type": "dense_vector",
            "dims": int(built.dense[model].shape[1]),
            "index": True,
            "similarity": "cosine",
        }
    return {"mappings": {"properties": properties, "_meta": {"format": FORMAT}}}


def _build(
    client: Any, call: RemotePolicy, index: str, options: ElasticsearchOptions, built: Built, wanted: str
) -> None:
    """(Re)create the index without its fingerprint, bulk-load every chunk, then write the fingerprint into
    the mapping's ``_meta`` last."""

    if call(f"looking up index {index}", lambda: client.indices.exists(index=index)):
        with contextlib.suppress(_es.NotFoundError):
            call(
                f"deleting index {index}",
                lambda: client.indices.delete(index=index),
                expected=(_es.NotFoundError,),
            )
    body = index_body(options, built)
    call.create(f"creating index {index}", lambda: client.indices.create(index=index, **body))
    advance = built.context.progress.start(f"Writing {built.context.target_name} · {index}", len(built.chunks))
    for start in range(0, len(built.chunks), BULK_BATCH):
        actions = []
        for i, chunk in enumerate(built.chunks[start : start + BULK_BATCH], start):
            source: dict[str, Any] = {"body": chunk.body, "doc_id": chunk.doc_id, "chunk_id": chunk.chunk_id}
            source["page"] = chunk.page
            source.update({options.field(m): built.dense[m][i].tolist() for m in options.dense_models})
            if is_first_chunk(chunk):
                source.update(built.documents[chunk.doc_id], first=True)
            actions.append({"_index": index, "_id": chunk.chunk_id, "_source": source})
        call(
            f"writing {len(actions)} chunks to {index}",
            lambda actions=actions: helpers.bulk(client, actions, refresh=False),  # type: ignore[misc]
        )
        advance(len(actions))
    call(f"refreshing index {index}", lambda: client.indices.refresh(index=index))
    meta = {"fingerprint": wanted, "format": FORMAT}
    call(f"writing the fingerprint of {index}", lambda: client.indices.put_mapping(index=index, meta=meta))


class ElasticsearchHandle(RemoteHandle[ElasticsearchOptions]):
    """An opened Elasticsearch index."""

    def __init__(
        self,
        client: Any,
        call: RemotePolicy,
        index: str,
        options: ElasticsearchOptions,
        models: ModelSource,
        context: OpenContext | None = None,
    ) -> None:
        self.client, self.call, self.index, self.options, self.models = client, call, index, options, models
        self.context = context
        got = dict(call(f"reading the mapping of {index}", lambda: client.indices.get_mapping(index=index)))
        mapping = got.get(index, {}).get("mappings", {})
        properties = mapping.get("properties", {})
        self.meta = mapping.get("_meta") or {}
        vectors = {name for name, spec in properties.items() if spec.get("type") == "dense_vector"}
        by_field = {options.field(m): m for m in options.dense_models}
        self.dense = {by_field.get(f, f.removeprefix("vector_")): f for f in sorted(vectors)}
        self.chunks = int(call(f"counting the chunks of {index}", lambda: client.count(index=index))["count"])
        self.retrievers = True
        """Whether the cluster runs the rrf and linear retrievers (False after it refused one)."""

    def held(self) -> int:
        return self.chunks

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        caps = {KEYWORD}
        if self.options.level() >= 1:
            caps.add(FUSION)
            if self.options.inference_id:
                caps.add(SERVICE_RANKER_PREFIX + RANKER)
        return caps

    def describe(self) -> dict[str, Any]:
        version = dict(self.call("asking the cluster its version", self.client.info)).get("version", {})
        return {
            "collection": self.index,
            "documents": len(self.document_ids()),
            "chunks": self.chunks,
            "models": sorted(self.dense),
            "version": f"Elasticsearch {version.get('number', '')}".strip(),
            "location": self.options.url,
            "fingerprint": self.meta.get("fingerprint"),
            "mode": self.options.mode,
            "knn": "exact (script_score)"
            if self.options.exact
            else f"HNSW, num_candidates {self.options.num_candidates}",
        }

    # ------------------------------------------------------------------------------------------ search

    def _vector(self, model: str, text: str) -> list[float]:
        return [float(x) for x in self.models.get(model, DENSE).encode_queries([text])[0]]

    def retriever(self, capability: str, text: str, k: int) -> dict[str, Any]:
        """The retriever for one capability: ``standard`` with a ``match`` for keyword, ``knn`` per field (a
        ``standard`` with a ``script_score`` where exact)."""
        if capability == KEYWORD:
            return {"standard": {"query": {"match": {"body": {"query": text}}}}}
        model = capability.removeprefix(DENSE_PREFIX)
        if capability.startswith(DENSE_PREFIX) and model in self.dense:
            field, vector = self.dense[model], self._vector(model, text)
            if self.options.exact:
                script = {"source": f"cosineSimilarity(params.v, '{field}') + 1.0", "params": {"v": vector}}
                return {"standard": {"query": {"script_score": {"query": {"match_all": {}}, "script": script}}}}
            candidates = max(k, self.options.num_candidates)
            return {"knn": {"field": field, "query_vector": vector, "k": k, "num_candidates": candidates}}
        raise EngineError(
            f"the Elasticsearch target has no capability '{capability}' "
            f"(it has: {', '.join(sorted(self.capabilities()))})"
        )

    def body(self, query: Query) -> dict[str, Any]:
        """The search body for a query: what this plugin sends, exactly."""
        if query.capability == FUSION:
            parts = [self.retriever(p, query.text, query.k) for p in query.parts]
            window = max(query.k, self.options.num_candidates)
            if query.fusion == "rrf":
                found: dict[str, Any] = {
                    "rrf": {"retrievers": parts, "rank_constant": query.rrf_k, "rank_window_size": window}
                }
            else:
                weights = list(query.weights) or [1.0 / len(parts)] * len(parts)
                weighted = [
                    {"retriever": p, "weight": w, "normalizer": "minmax"} for p, w in zip(parts, weights, strict=True)
                ]
                found = {"linear": {"retrievers": weighted, "rank_window_size": window}}
        else:
            found = self.retriever(query.capability, query.text, query.k)
        if query.ranker is not None:
            if query.ranker != RANKER or not self.options.inference_id:
                raise EngineError(f"the Elasticsearch target has no ranker '{query.ranker}'")
            found = {
                "text_similarity_reranker": {
                    "retriever": found,
                    "field": "body",
                    "inference_id": self.options.inference_id,
                    "inference_text": query.text,
                    "rank_window_size": max(query.k, self.options.num_candidates),
                }
            }
        return {"size": query.k, "retriever": found, "_source": HIT_FIELDS}

    def search(self, query: Query) -> list[Hit]:

        if query.capability == KEYWORD and not query.text.strip():
            return []
        if query.capability == FUSION and not self.retrievers:
            return self._fused_here(query)
        body = self.body(query)
        try:
            response = self.call(
                "searching",
                lambda: self.client.search(index=self.index, **body),
                expected=(_es.BadRequestError,),
            )
        except _es.BadRequestError as exc:
            if query.capability != FUSION:
                raise EngineError(f"the Elasticsearch target refused the search: {exc}") from None
            self.retrievers = False  # an older cluster, or a licence without the rrf/linear retrievers
            if self.context is not None:
                self.context.progress.note(f"{self.index}: the cluster refused its retrievers ({exc}); fusing here")
            return self._fused_here(query)
        if "took" in response:
            record_server_time(response["took"])
        return [payload_hit(h.get("_source") or {}, h.get("_score") or 0.0) for h in response["hits"]["hits"]]

    def _fused_here(self, query: Query) -> list[Hit]:

        lists = [self.search(Query(query.text, query.k, part)) for part in query.parts]
        return fuse(lists, query.k, query, list(query.weights) or None)

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [h.chunk_id or "" for h in hits]
        response = self.call(
            "reading passages", lambda: self.client.mget(index=self.index, ids=ids, source_includes=["body"])
        )
        body = {d["_id"]: (d.get("_source") or {}).get("body", "") for d in response["docs"] if d.get("found")}
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:
        return paged_document_ids(self.call, lambda body: self.client.search(index=self.index, **body), self.index)

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        wanted = list(doc_ids)
        if not wanted:
            return []
        query = first_chunks(wanted)
        response = self.call(
            "reading documents", lambda: self.client.search(index=self.index, size=len(wanted), query=query)
        )
        return stored_documents(wanted, by_document(response))

    def close(self) -> None:
        self.client.close()


@hookimpl
def vx_eval_register_engines(register):
    register.add(ElasticsearchEngine)
