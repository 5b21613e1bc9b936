"""Azure AI Search as a target, through `azure-search-documents` (12.x).

One search document per chunk: ``id`` (the chunk id, base64url: Azure keys allow no ``:``), ``body``
(searchable), ``doc_id``, ``chunk_id``, ``page``, ``first`` (filterable), a vector field per model
(``vector_<model>`` unless ``vectors`` maps it otherwise; HNSW, cosine), and on each document's first chunk
its ``title``, ``text`` and ``metadata`` (JSON).

Setups, as the seed counts them for one index with two vector sets and a semantic configuration (14):
keyword (the service's BM25); keyword + the semantic ranker; dense per vector field and both (the service
fuses several vector queries); hybrid (``search`` text + vector queries, fused by the service with RRF);
hybrid reranked by the local cross-encoder; hybrid + the semantic ranker. The semantic ranker is chosen
search by search (``queryType: semantic``); ``semantic: true`` adds a configuration to an index that has
none and keeps one it has. Searches record the service's ``elapsed-time`` header as its own time.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from functools import partial
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
    on_first_use,
    record_server_time,
)
from vx_eval.plugins.engines.remote import (
    Built,
    RemoteHandle,
    RemoteOptions,
    collection_name,
    ensure_built,
    is_first_chunk,
    need,
    payload_hit,
    stored_documents,
)

_az_credentials = on_first_use("azure.core.credentials", "azure")
_az_errors = on_first_use("azure.core.exceptions", "azure")
_az_search = on_first_use("azure.search.documents", "azure")
_az_indexes = on_first_use("azure.search.documents.indexes", "azure")
_az_index_models = on_first_use("azure.search.documents.indexes.models", "azure")
_az_query_models = on_first_use("azure.search.documents.models", "azure")

FORMAT = 1
SEMANTIC = "semantic"
HIT_FIELDS = ["doc_id", "chunk_id", "page"]
UPLOAD_BATCH = 500
PROFILE, ALGORITHM, DEFAULT_SEMANTIC = "vx-hnsw", "vx-hnsw-cosine", "vx-semantic"
FINGERPRINT = re.compile(r"vx-eval fingerprint ([0-9a-f]{64})")


class AzureSearchOptions(RemoteOptions):
    endpoint: ServiceUrl
    """The service: ``https://<name>.search.windows.net``."""
    api_key: SecretRef
    """An admin key to build, a query key to search: ``{env: AZURE_SEARCH_KEY}``."""
    vectors: dict[str, str] = Field(default_factory=dict)
    """Model -> vector field, where the index names its fields otherwise (default ``vector_<model>``)."""
    semantic: bool = False
    """Add a semantic configuration to an index that has none (one it has is kept)."""
    semantic_configuration: str | None = None
    """Which configuration the semantic ranker uses; default the index's default (or its first)."""

    def field(self, model: str) -> str:
        return self.vectors.get(model, "vector_" + re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_"))

    def indexing(self) -> dict[str, Any]:
        return {**super().indexing(), "vectors": {m: self.field(m) for m in self.dense_models}}


def key_of(chunk_id: str) -> str:
    """A document key Azure accepts (letters, digits, ``_ - =``) that maps back to the chunk id."""
    return base64.urlsafe_b64encode(chunk_id.encode("utf-8")).decode("ascii")


def _clients(options: AzureSearchOptions, index: str) -> tuple[Any, Any]:
    need("azure.search.documents", "azure")

    credential = _az_credentials.AzureKeyCredential(options.api_key.value())
    transport = {  # the policy retries (every call, searches and paging included); azure-core does not
        "retry_total": 0,
        "connection_timeout": options.timeout,
        "read_timeout": options.timeout,
    }
    return (
        _az_indexes.SearchIndexClient(options.endpoint, credential, **transport),
        _az_search.SearchClient(options.endpoint, index, credential, **transport),
    )


def policy(options: AzureSearchOptions, target: str) -> RemotePolicy:
    """azure-core's errors: 408, 429 and 502-504 or a timeout tried again, 401/403 refused at once (the key
    named by api_key), a service that cannot be reached said in one line."""

    def status(exc: BaseException) -> object:
        return getattr(exc, "status_code", None)

    return RemotePolicy(
        target=target,
        where=options.endpoint,
        retries=options.retries,
        errors=(_az_errors.AzureError,),
        transient=lambda exc: (
            isinstance(exc, _az_errors.ServiceResponseError)
            or (isinstance(exc, _az_errors.HttpResponseError) and exc.status_code in (408, 429, 502, 503, 504))
        ),
        refused=lambda exc: (
            isinstance(exc, _az_errors.ClientAuthenticationError)
            or (isinstance(exc, _az_errors.HttpResponseError) and exc.status_code in (401, 403))
        ),
        unreachable=lambda exc: isinstance(exc, _az_errors.ServiceRequestError),
        already_exists=lambda exc: isinstance(exc, _az_errors.ResourceExistsError),
        status=status,
        credentials=f"the key named by api_key (env {options.api_key.env})",
        check="check it is an admin key to build, or a query key to search",
    )


class AzureSearchEngine(Engine[AzureSearchOptions]):
    """Azure AI Search: keyword, vectors, the service's hybrid (RRF) and its semantic ranker."""

    name: ClassVar[str] = "azure-search"
    Options: ClassVar[type[EngineOptions]] = AzureSearchOptions

    def open(self, options: AzureSearchOptions, context: OpenContext) -> AzureSearchHandle:

        index = collection_name(options, context)
        indexes, search = _clients(options, index)
        call = policy(options, context.target_name)
        try:
            definition = call(
                f"reading index {index}",
                lambda: indexes.get_index(index),
                expected=(_az_errors.ResourceNotFoundError,),
            )
        except _az_errors.ResourceNotFoundError:
            definition = None

        def stored() -> str | None:
            found = FINGERPRINT.search(definition.description or "") if definition is not None else None
            return found.group(1) if found else None

        def build(built: Built, wanted: str) -> None:
            nonlocal definition
            definition = _build(indexes, search, call, index, options, built, wanted)

        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            stored=stored,
            build=build,
            exists=lambda: definition is not None,
            absent=f"Azure AI Search at {options.endpoint} has no index '{index}'",
        )
        if options.semantic and not (definition.semantic_search and definition.semantic_search.configurations):
            definition.semantic_search = semantic_search(definition)
            definition = call(
                f"adding a semantic configuration to {index}", lambda: indexes.create_or_update_index(definition)
            )
        return AzureSearchHandle(search, call, definition, options, context.loaded)


def semantic_search(definition: Any) -> Any:
    """A semantic configuration over the chunk text (and the title where the index has one)."""

    names = {f.name for f in definition.fields}
    fields = _az_index_models.SemanticPrioritizedFields(
        title_field=_az_index_models.SemanticField(field_name="title") if "title" in names else None,
        content_fields=[_az_index_models.SemanticField(field_name="body")],
    )
    configuration = _az_index_models.SemanticConfiguration(name=DEFAULT_SEMANTIC, prioritized_fields=fields)
    return _az_index_models.SemanticSearch(default_configuration_name=DEFAULT_SEMANTIC, configurations=[configuration])


def index_definition(index: str, options: AzureSearchOptions, built: Built, description: str) -> Any:

    string, integer, boolean = (
        _az_index_models.SearchFieldDataType.STRING,
        _az_index_models.SearchFieldDataType.INT32,
        _az_index_models.SearchFieldDataType.BOOLEAN,
    )
    fields = [
        _az_index_models.SearchField(name="id", type=string, key=True, filterable=True),
        _az_index_models.SearchField(name="body", type=string, searchable=True),
        _az_index_models.SearchField(name="doc_id", type=string, filterable=True),
        _az_index_models.SearchField(name="chunk_id", type=string, filterable=True),
        _az_index_models.SearchField(name="page", type=integer, filterable=True),
        _az_index_models.SearchField(name="first", type=boolean, filterable=True),
        _az_index_models.SearchField(name="title", type=string, searchable=True),
        _az_index_models.SearchField(name="text", type=string),
        _az_index_models.SearchField(name="metadata", type=string),
    ]
    for model in options.dense_models:
        fields.append(
            _az_index_models.SearchField(
                name=options.field(model),
                type=_az_index_models.SearchFieldDataType.Collection(_az_index_models.SearchFieldDataType.SINGLE),
                searchable=True,
                vector_search_dimensions=int(built.dense[model].shape[1]),
                vector_search_profile_name=PROFILE,
            )
        )
    vector_search = _az_index_models.VectorSearch(
        algorithms=[
            _az_index_models.HnswAlgorithmConfiguration(
                name=ALGORITHM, parameters=_az_index_models.HnswParameters(metric="cosine")
            )
        ],
        profiles=[_az_index_models.VectorSearchProfile(name=PROFILE, algorithm_configuration_name=ALGORITHM)],
    )
    definition = _az_index_models.SearchIndex(
        name=index, fields=fields, vector_search=vector_search, description=description
    )
    if options.semantic:
        definition.semantic_search = semantic_search(definition)
    return definition


def _build(
    indexes: Any, search: Any, call: RemotePolicy, index: str, options: AzureSearchOptions, built: Built, wanted: str
) -> Any:
    """(Re)create the index without its fingerprint, upload every chunk, then write the fingerprint into
    the index description last: an index a crash left half-filled has none and is built again."""

    with contextlib.suppress(_az_errors.ResourceNotFoundError):
        call(
            f"deleting index {index}",
            lambda: indexes.delete_index(index),
            expected=(_az_errors.ResourceNotFoundError,),
        )
    building = index_definition(index, options, built, "vx-eval: building")
    call.create(f"creating index {index}", lambda: indexes.create_index(building))
    context = built.context
    advance = context.progress.start(f"Writing {context.target_name} · {index}", len(built.chunks))
    for start in range(0, len(built.chunks), UPLOAD_BATCH):
        batch = []
        for i, chunk in enumerate(built.chunks[start : start + UPLOAD_BATCH], start):
            row: dict[str, Any] = {
                "id": key_of(chunk.chunk_id),
                "body": chunk.body,
                "doc_id": chunk.doc_id,
                "chunk_id": chunk.chunk_id,
                "page": chunk.page,
                "first": is_first_chunk(chunk),
            }
            row.update({options.field(m): built.dense[m][i].tolist() for m in options.dense_models})
            if is_first_chunk(chunk):
                fields = built.documents[chunk.doc_id]
                row.update(title=fields["title"], text=fields["text"], metadata=json.dumps(fields["metadata"]))
            batch.append(row)
        # uploads are by key, so a retried batch writes the same documents again, never twice
        done = call(f"uploading {len(batch)} chunks to {index}", partial(search.upload_documents, batch))
        failed = [r for r in done if not r.succeeded]
        if failed:
            raise EngineError(
                f"Azure AI Search refused {len(failed)} of {len(batch)} chunks; first: {failed[0].error_message}"
            )
        advance(len(batch))
    finished = index_definition(index, options, built, f"vx-eval fingerprint {wanted} format {FORMAT}")
    return call(f"writing the fingerprint of {index}", lambda: indexes.create_or_update_index(finished))


class AzureSearchHandle(RemoteHandle[AzureSearchOptions]):
    """An opened Azure AI Search index."""

    def __init__(
        self, client: Any, call: RemotePolicy, definition: Any, options: AzureSearchOptions, models: ModelSource
    ) -> None:
        self.client = client
        self.call = call
        self.definition = definition
        self.options = options
        self.models = models
        vector_fields = [f.name for f in definition.fields if getattr(f, "vector_search_dimensions", None)]
        by_field = {options.field(m): m for m in options.dense_models}
        self.dense = {by_field.get(f, f.removeprefix("vector_")): f for f in sorted(vector_fields)}
        semantic = definition.semantic_search
        configurations = [c.name for c in (semantic.configurations or [])] if semantic else []
        self.semantic = options.semantic_configuration or (
            (semantic.default_configuration_name if semantic else None)
            or (configurations[0] if configurations else None)
        )
        if options.semantic_configuration and options.semantic_configuration not in configurations:
            raise EngineError(
                f"index {definition.name} has no semantic configuration '{options.semantic_configuration}' "
                f"(it has: {', '.join(configurations) or 'none'})"
            )
        self._count: int | None = None

    def _search(self, what: str = "searching", **kwargs: Any) -> list[dict[str, Any]]:
        """One search request, its results read in full inside the policy (a page that fails is retried
        with the search), the service's elapsed-time recorded."""

        def took(response: Any) -> None:
            elapsed = response.http_response.headers.get("elapsed-time")
            if elapsed and str(elapsed).replace(".", "", 1).isdigit():
                record_server_time(float(elapsed))

        return self.call(what, lambda: list(self.client.search(raw_response_hook=took, **kwargs)))

    def held(self) -> int:
        return self.chunks()

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        return {KEYWORD, FUSION} | ({SERVICE_RANKER_PREFIX + SEMANTIC} if self.semantic else set())

    def chunks(self) -> int:
        if self._count is None:
            self._count = int(self.call("counting the chunks", self.client.get_document_count))
        return self._count

    def describe(self) -> dict[str, Any]:
        found = FINGERPRINT.search(self.definition.description or "")
        return {
            "collection": self.definition.name,
            "documents": len(self.document_ids()),
            "chunks": self.chunks(),
            "models": sorted(self.dense),
            "version": "Azure AI Search via azure-search-documents",
            "location": self.options.endpoint,
            "semantic_configuration": self.semantic,
            "fingerprint": found.group(1) if found else None,
            "mode": self.options.mode,
        }

    # ------------------------------------------------------------------------------------------ search

    def request(self, query: Query) -> dict[str, Any]:
        """The keyword arguments of `SearchClient.search` for a query: what this plugin asks, exactly."""

        capability, text, k = query.capability, query.text, query.k
        parts = query.parts if capability == FUSION else (capability,)
        unknown = [p for p in parts if p != KEYWORD and p.removeprefix(DENSE_PREFIX) not in self.dense]
        if (capability not in (FUSION, KEYWORD) and not capability.startswith(DENSE_PREFIX)) or unknown:
            raise EngineError(
                f"the Azure AI Search target has no capability '{unknown[0] if unknown else capability}' "
                f"(it has: {', '.join(sorted(self.capabilities()))})"
            )
        vectors = []
        for part in parts:
            if part.startswith(DENSE_PREFIX):
                model = part.removeprefix(DENSE_PREFIX)
                vector = [float(x) for x in self.models.get(model, DENSE).encode_queries([text])[0]]
                vectors.append(
                    _az_query_models.VectorizedQuery(vector=vector, k_nearest_neighbors=k, fields=self.dense[model])
                )
        arguments: dict[str, Any] = {
            "search_text": text if KEYWORD in parts else None,
            "top": k,
            "select": HIT_FIELDS,
        }
        if vectors:
            arguments["vector_queries"] = vectors
        if query.ranker is not None:
            if query.ranker != SEMANTIC or not self.semantic:
                raise EngineError(f"index {self.definition.name} has no service ranker '{query.ranker}'")
            arguments.update(query_type=_az_query_models.QueryType.SEMANTIC, semantic_configuration_name=self.semantic)
        return arguments

    def search(self, query: Query) -> list[Hit]:
        arguments = self.request(query)
        if arguments["search_text"] is not None and not query.text.strip() and "vector_queries" not in arguments:
            return []
        score = "@search.reranker_score" if query.ranker else "@search.score"
        return [payload_hit(r, r.get(score) or 0.0) for r in self._search(**arguments)][: query.k]

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [h.chunk_id or "" for h in hits]
        rows = self._search(
            "reading passages", search_text="*", filter=_any("chunk_id", ids), select=["chunk_id", "body"], top=len(ids)
        )
        body = {r["chunk_id"]: r.get("body") or "" for r in rows}
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:
        rows = self._search("listing the documents", search_text="*", filter="first eq true", select=["doc_id"])
        return sorted({str(r["doc_id"]) for r in rows})

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        wanted = list(doc_ids)
        if not wanted:
            return []
        rows = self._search(
            "reading documents",
            search_text="*",
            filter=f"first eq true and {_any('doc_id', wanted)}",
            select=["doc_id", "title", "text", "metadata"],
            top=len(wanted),
        )
        return stored_documents(wanted, {str(r["doc_id"]): r for r in rows})

    def close(self) -> None:
        self.client.close()


def _any(field: str, values: Sequence[str]) -> str:
    """An OData filter: `field` is one of `values` (``search.in`` with a separator none of them holds)."""
    separator = next(s for s in ("|", "~", "^", "\u241f") if not any(s in v for v in values))
    joined = separator.join(v.replace("'", "''") for v in values)
    return f"search.in({field}, '{joined}', '{separator}')"


@hookimpl
def vx_eval_register_engines(register):
    register.add(AzureSearchEngine)
