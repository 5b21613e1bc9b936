"""OpenSearch as a target, through `opensearch-py`.

One document per chunk (``_id`` the chunk id): ``body`` (text, BM25), ``doc_id``, ``chunk_id``, ``page``,
a ``knn_vector`` field per model (``vector_<model>`` unless ``vectors`` maps it otherwise; HNSW, cosine),
and on each document's first chunk ``first: true`` with its ``title``, ``text`` and ``metadata``.

Setups: keyword (the cluster's BM25, a ``match`` query on ``body``), k-NN per vector field, and, where the
cluster has the search pipeline vx-eval creates when it builds the index, dense-with-both and hybrid
(``hybrid`` query through the pipeline: min-max normalisation + arithmetic mean, or RRF with
``fusion: rrf``); a cluster without search pipelines gets the fusion done here. Reranked variants come
from the shared cross-encoder setup. Every search records the cluster's own ``took`` beside the wall time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    Discovered,
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
    options_for,
    paged_document_ids,
    payload_hit,
    stored_documents,
    target_parts,
)

_os_errors = on_first_use("opensearchpy.exceptions", "opensearch")
helpers = on_first_use("opensearchpy.helpers", "opensearch")

FORMAT = 1
USER_ENV, PASSWORD_ENV = "OPENSEARCH_USER", "OPENSEARCH_PASSWORD"
HIT_FIELDS = ["doc_id", "chunk_id", "page"]
BULK_BATCH = 200


class OpenSearchOptions(RemoteOptions):
    url: ServiceUrl
    """The cluster: ``https://localhost:9200``."""
    user: str | None = None
    password: SecretRef | None = None
    verify_certs: bool = True
    vectors: dict[str, str] = Field(default_factory=dict)
    """Model -> k-NN field, where the index names its fields otherwise (default ``vector_<model>``)."""
    fusion: Literal["normalization", "rrf"] = "normalization"
    """The hybrid pipeline vx-eval creates: min-max + arithmetic mean (OpenSearch's default), or RRF."""
    pipeline: str | None = None
    """The search pipeline hybrid queries go through; default ``<index>-vx-hybrid``."""
    exact: bool = False
    """Exact k-NN (a ``script_score`` over every chunk) instead of the HNSW ``knn`` query."""

    def field(self, model: str) -> str:
        return self.vectors.get(model, "vector_" + re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_"))

    def indexing(self) -> dict[str, Any]:
        return {**super().indexing(), "vectors": {m: self.field(m) for m in self.dense_models}}


def policy(options: OpenSearchOptions, target: str) -> RemotePolicy:
    """Every call this plugin makes: opensearch-py's own errors, a 429 or 502-504 or a timeout tried again,
    401/403 refused at once, a connection that cannot be made said in one line."""

    def status(exc: BaseException) -> object:
        return exc.status_code if isinstance(exc, _os_errors.TransportError) else None

    return RemotePolicy(
        target=target,
        where=options.url,
        retries=options.retries,
        errors=(_os_errors.OpenSearchException,),
        transient=lambda exc: (
            isinstance(exc, _os_errors.ConnectionTimeout)
            or (isinstance(exc, _os_errors.TransportError) and exc.status_code in (429, 502, 503, 504))
        ),
        refused=lambda exc: isinstance(exc, _os_errors.AuthenticationException | _os_errors.AuthorizationException),
        unreachable=lambda exc: (
            isinstance(exc, _os_errors.ConnectionError) and not isinstance(exc, _os_errors.ConnectionTimeout)
        ),
        already_exists=lambda exc: isinstance(exc, _os_errors.RequestError) and "already_exists" in str(exc.error),
        status=status,
        check="check user and password",
    )


class OpenSearchEngine(Engine[OpenSearchOptions]):
    """OpenSearch: BM25, k-NN per vector field, hybrid through a search pipeline, the cluster's ``took``."""

    name: ClassVar[str] = "opensearch"
    Options: ClassVar[type[EngineOptions]] = OpenSearchOptions

    def open(self, options: OpenSearchOptions, context: OpenContext) -> OpenSearchHandle:
        client = make_client(options)
        call = policy(options, context.target_name)
        index = collection_name(options, context)
        pipeline = options.pipeline or f"{index}-vx-hybrid"
        exists, stored = index_lookups(call, client, index)
        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            settings={**options.indexing(), "fusion": options.fusion},
            stored=stored,
            build=lambda built, wanted: _build(client, call, index, pipeline, options, built, wanted),
            exists=exists,
            absent=f"OpenSearch at {options.url} has no index '{index}'",
        )
        return OpenSearchHandle(client, call, index, pipeline, options, context.loaded)

    def discover(self, where: str) -> Discovered:
        """``URL/INDEX`` (the user and password from ``OPENSEARCH_USER`` and ``OPENSEARCH_PASSWORD`` when set):
        an index of the shape this engine builds (``body`` text, ``doc_id``), searched as it is:
        the cluster's BM25, k-NN per ``knn_vector`` field named after its model (``vector_<model>``), and the
        hybrid pipeline vx-eval made where the cluster has it."""
        base, index = target_parts(where, self.name, "https://localhost:9200/docs")
        spec = f"opensearch:{where}"
        fields: dict[str, Any] = {"url": base, "collection": index, "build": "never"}
        fields |= {"user": os.environ[USER_ENV]} if os.environ.get(USER_ENV) else {}
        fields |= {"password": {"env": PASSWORD_ENV}} if os.environ.get(PASSWORD_ENV) else {}
        options = options_for(OpenSearchOptions, fields, spec)
        client = make_client(options)
        call = policy(options, f"--target {spec}")
        try:
            if not call(f"looking up index {index}", lambda: client.indices.exists(index=index)):
                raise EngineError(f"--target {spec}: OpenSearch at {base} has no index '{index}'")
            got = call(f"reading the mapping of {index}", lambda: client.indices.get_mapping(index=index))
            chunks = int(call(f"counting the chunks of {index}", lambda: client.count(index=index))["count"])
        finally:
            client.close()
        mapping = got.get(index, {}).get("mappings", {})
        properties: dict[str, Any] = mapping.get("properties", {})
        lacking = sorted({"body", "doc_id"} - set(properties))
        if lacking:
            raise EngineError(
                f"--target {spec}: index '{index}' has no {', '.join(lacking)} field: it is not of the shape this "
                "engine searches (see the README)"
            )
        knn = {name: p.get("dimension") for name, p in sorted(properties.items()) if p.get("type") == "knn_vector"}
        fields["dense_models"] = [f.removeprefix("vector_") for f in knn]
        fields["vectors"] = {f: f for f in knn if not f.startswith("vector_")}
        built = (mapping.get("_meta") or {}).get("fingerprint")
        found = (
            f"{chunks} chunks in index {index}" + (" (built by vx-eval)" if built else ""),
            "k-NN fields: " + (", ".join(f"{f} ({d} dims)" for f, d in knn.items()) or "none"),
        )
        return Discovered(options_for(OpenSearchOptions, fields, spec), index, found)


@functools.cache
def _connection_class() -> type:
    """opensearch-py's urllib3 connection, keeping a failed answer's ``Retry-After`` on the error it raises as
    ``retry_after`` (the client drops every header of an error otherwise), for the policy to wait as asked."""

    # lazy: a class of the optional dependency (vx-eval[opensearch]) to subclass; made once, when first asked
    from opensearchpy.connection import Urllib3HttpConnection

    answered = threading.local()  # searches run in threads: each keeps the headers of its own last answer

    class RetryAfterConnection(Urllib3HttpConnection):  # type: ignore[misc, unused-ignore]
        def get_response_headers(self, response: Any) -> Any:
            headers = super().get_response_headers(response)
            answered.retry_after = headers.get("retry-after")
            return headers

        def _raise_error(self, status_code: int, raw_data: Any, content_type: str | None = None) -> None:
            try:
                super()._raise_error(status_code, raw_data, content_type)
            except _os_errors.TransportError as exc:
                exc.retry_after = getattr(answered, "retry_after", None)
                raise

    return RetryAfterConnection


def make_client(options: OpenSearchOptions, concurrency: int = 10) -> Any:
    """The client, with a connection pool as large as the searches that may run at once (urllib3 keeps one
    connection otherwise, and every caller past it opens a new one)."""
    opensearchpy = need("opensearchpy", "opensearch")
    auth = (options.user, options.password.value()) if options.user and options.password else None
    return opensearchpy.OpenSearch(
        hosts=[options.url],
        http_auth=auth,
        verify_certs=options.verify_certs,
        timeout=options.timeout,
        max_retries=0,  # the policy retries, with backoff
        pool_maxsize=max(concurrency, 10),
        connection_class=_connection_class(),
    )


def pipeline_body(options: OpenSearchOptions) -> dict[str, Any]:
    """The hybrid search pipeline: score normalisation + combination, or reciprocal-rank fusion."""
    if options.fusion == "rrf":
        processor = {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}
    else:
        processor = {
            "normalization-processor": {
                "normalization": {"technique": "min_max"},
                "combination": {"technique": "arithmetic_mean"},
            }
        }
    return {"description": "vx-eval hybrid search", "phase_results_processors": [processor]}


def index_body(options: OpenSearchOptions, built: Built, wanted: str | None) -> dict[str, Any]:
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
            "type": "knn_vector",
            "dimension": int(built.dense[model].shape[1]),
            "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "faiss"},
        }
    mappings: dict[str, Any] = {"properties": properties}
    if wanted:
        mappings["_meta"] = {"fingerprint": wanted, "format": FORMAT}
    return {"settings": {"index": {"knn": True}}, "mappings": mappings}


def _build(
    client: Any, call: RemotePolicy, index: str, pipeline: str, options: OpenSearchOptions, built: Built, wanted: str
) -> None:
    """(Re)create the index without its fingerprint, bulk-load every chunk, make the hybrid pipeline, then
    write the fingerprint into the mapping's ``_meta`` last."""

    if call(f"looking up index {index}", lambda: client.indices.exists(index=index)):
        with contextlib.suppress(_os_errors.NotFoundError):  # gone already: our own earlier, retried delete
            call(
                f"deleting index {index}",
                lambda: client.indices.delete(index=index),
                expected=(_os_errors.NotFoundError,),
            )
    body = index_body(options, built, None)
    call.create(f"creating index {index}", lambda: client.indices.create(index=index, body=body))
    advance = built.context.progress.start(f"Writing {built.context.target_name} · {index}", len(built.chunks))
    for start in range(0, len(built.chunks), BULK_BATCH):
        actions = []
        for i, chunk in enumerate(built.chunks[start : start + BULK_BATCH], start):
            source: dict[str, Any] = {
                "body": chunk.body,
                "doc_id": chunk.doc_id,
                "chunk_id": chunk.chunk_id,
                "page": chunk.page,
            }
            source.update({options.field(m): built.dense[m][i].tolist() for m in options.dense_models})
            if is_first_chunk(chunk):
                source.update(built.documents[chunk.doc_id], first=True)
            actions.append({"_index": index, "_id": chunk.chunk_id, "_source": source})
        # bulk writes by chunk id, so a retried batch writes the same documents again, never twice
        call(
            f"writing {len(actions)} chunks to {index}",
            lambda actions=actions: helpers.bulk(client, actions, refresh=False),  # type: ignore[misc]
        )
        advance(len(actions))
    call(f"refreshing index {index}", lambda: client.indices.refresh(index=index))
    try:
        path, body = f"/_search/pipeline/{pipeline}", pipeline_body(options)
        call(
            f"creating search pipeline {pipeline}",
            lambda: client.transport.perform_request("PUT", path, body=body),
            expected=(_os_errors.RequestError,),
        )
    except _os_errors.RequestError as exc:  # a cluster without the neural-search plugin (or a test server)
        built.context.progress.note(
            f"{built.context.target_name}: the cluster made no search pipeline ({exc.error}); hybrid search is "
            "fused by vx-eval instead"
        )
    meta = {"_meta": {"fingerprint": wanted, "format": FORMAT}}
    call(f"writing the fingerprint of {index}", lambda: client.indices.put_mapping(index=index, body=meta))


class OpenSearchHandle(RemoteHandle[OpenSearchOptions]):
    """An opened OpenSearch index."""

    def __init__(
        self,
        client: Any,
        call: RemotePolicy,
        index: str,
        pipeline: str,
        options: OpenSearchOptions,
        models: ModelSource,
    ) -> None:

        self.client = client
        self.call = call
        self.index = index
        self.pipeline = pipeline
        self.options = options
        self.models = models
        got = call(f"reading the mapping of {index}", lambda: client.indices.get_mapping(index=index))
        mapping = got.get(index, {}).get("mappings", {})
        properties = mapping.get("properties", {})
        self.meta = mapping.get("_meta") or {}
        knn = {name for name, spec in properties.items() if spec.get("type") == "knn_vector"}
        by_field = {options.field(m): m for m in options.dense_models}
        self.dense = {by_field.get(f, f.removeprefix("vector_")): f for f in sorted(knn)}
        try:
            path = f"/_search/pipeline/{pipeline}"
            call(
                f"looking up search pipeline {pipeline}",
                lambda: client.transport.perform_request("GET", path),
                expected=(_os_errors.NotFoundError, _os_errors.RequestError),
            )
            self.has_pipeline = True
        except (
            _os_errors.NotFoundError,
            _os_errors.RequestError,
        ):  # none made, or a cluster without the neural-search plugin
            self.has_pipeline = False
        self.chunks = int(call(f"counting the chunks of {index}", lambda: client.count(index=index))["count"])

    def held(self) -> int:
        return self.chunks

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        return {KEYWORD, FUSION} if self.has_pipeline else {KEYWORD}

    def describe(self) -> dict[str, Any]:
        version = self.call("asking the cluster its version", self.client.info).get("version", {})
        return {
            "collection": self.index,
            "documents": len(self.document_ids()),
            "chunks": self.chunks,
            "models": sorted(self.dense),
            "version": f"{version.get('distribution', 'opensearch')} {version.get('number', '')}".strip(),
            "location": self.options.url,
            "pipeline": self.pipeline if self.has_pipeline else None,
            "fingerprint": self.meta.get("fingerprint"),
            "mode": self.options.mode,
        }

    # ------------------------------------------------------------------------------------------ search

    def clause(self, capability: str, text: str, k: int) -> dict[str, Any]:
        """The query clause for one capability: ``match`` for keyword, ``knn`` (or exact) per vector field."""
        if capability == KEYWORD:
            return {"match": {"body": {"query": text}}}
        model = capability.removeprefix(DENSE_PREFIX)
        if capability.startswith(DENSE_PREFIX) and model in self.dense:
            vector = [float(x) for x in self.models.get(model, DENSE).encode_queries([text])[0]]
            field = self.dense[model]
            if self.options.exact:
                return {
                    "script_score": {
                        "query": {"match_all": {}},
                        "script": {
                            "source": "knn_score",
                            "lang": "knn",
                            "params": {"field": field, "query_value": vector, "space_type": "cosinesimil"},
                        },
                    }
                }
            return {"knn": {field: {"vector": vector, "k": k}}}
        raise EngineError(
            f"the OpenSearch target has no capability '{capability}' (it has: {', '.join(sorted(self.capabilities()))})"
        )

    def body(self, query: Query) -> tuple[dict[str, Any], dict[str, Any]]:
        """The search body and URL parameters for a query: what this plugin sends, exactly."""
        if query.capability == FUSION:
            if not self.has_pipeline:
                raise EngineError(f"index {self.index} has no search pipeline '{self.pipeline}' for hybrid search")
            queries = [self.clause(part, query.text, query.k) for part in query.parts]
            body = {"size": query.k, "query": {"hybrid": {"queries": queries}}, "_source": HIT_FIELDS}
            return body, {"search_pipeline": self.pipeline}
        return {"size": query.k, "query": self.clause(query.capability, query.text, query.k), "_source": HIT_FIELDS}, {}

    def search(self, query: Query) -> list[Hit]:
        if query.capability == KEYWORD and not query.text.strip():
            return []
        body, params = self.body(query)
        response = self.call("searching", lambda: self.client.search(index=self.index, body=body, params=params))
        if "took" in response:
            record_server_time(response["took"])
        return [payload_hit(h.get("_source") or {}, h.get("_score") or 0.0) for h in response["hits"]["hits"]]

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [h.chunk_id or "" for h in hits]
        response = self.call(
            "reading passages", lambda: self.client.mget(index=self.index, body={"ids": ids}, _source=["body"])
        )
        body = {d["_id"]: (d.get("_source") or {}).get("body", "") for d in response["docs"] if d.get("found")}
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:
        return paged_document_ids(self.call, lambda body: self.client.search(index=self.index, body=body), self.index)

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        wanted = list(doc_ids)
        if not wanted:
            return []
        query = first_chunks(wanted)
        body = {"size": len(wanted), "query": query}
        response = self.call("reading documents", lambda: self.client.search(index=self.index, body=body))
        return stored_documents(wanted, by_document(response))

    def close(self) -> None:
        self.client.close()


@hookimpl
def vx_eval_register_engines(register):
    register.add(OpenSearchEngine)
