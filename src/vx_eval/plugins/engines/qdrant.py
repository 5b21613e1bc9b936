"""Qdrant as a target, through `qdrant-client`: local mode (``:memory:`` or a folder) or a server (``url``).

What a collection holds, one point per chunk (id: a UUID made from the chunk id):
- a named dense vector per model (cosine), named after the model unless ``vectors`` maps it otherwise;
- ``bm25``: a sparse vector of BM25 term weights (Snowball-stemmed words, stop words dropped), with
  Qdrant's IDF modifier, so Qdrant itself ranks by BM25;
- with ``mode: ultimate`` and a ``late_model``: token vectors as a multivector compared by MaxSim;
- a payload with ``doc_id``, ``chunk_id``, ``page``, ``body`` (the chunk's text, for rerankers), and on each
  document's first chunk its ``title``, ``text`` and ``metadata``.

Keyword search runs through the local words index (SQLite FTS5) written beside the config when vx-eval
builds the collection, while it holds anything; a collection somebody else filled has no words index, and
its lexical search is the ``bm25`` sparse vector if it has one. Dense with several models and hybrid
(sparse + dense) are fused by Qdrant (``query_points`` with ``prefetch`` and RRF).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    LATE,
    LATE_PREFIX,
    SPARSE_PREFIX,
    ConfigPath,
    Discovered,
    Document,
    Engine,
    EngineError,
    EngineOptions,
    Hit,
    LateModel,
    OpenContext,
    Query,
    SecretRef,
    ServiceUrl,
    on_first_use,
)
from vx_eval.plugins.engines.qdrant_calls import (
    Caller,
    bm25_documents,
    bm25_query,
    fingerprint_of,
    point_id,
    policy,
)
from vx_eval.plugins.engines.qdrant_edge import EdgeClient
from vx_eval.plugins.engines.remote import (
    Built,
    RemoteHandle,
    RemoteOptions,
    collection_name,
    ensure_built,
    is_first_chunk,
    need,
    options_for,
    payload_hit,
    stored_documents,
    target_parts,
    words_path,
)
from vx_eval.plugins.engines.words import WordsIndex, build_words, read_fingerprint

qm = on_first_use("qdrant_client.models", "qdrant")

FORMAT = 1
SPARSE = "bm25"
API_KEY_ENV = "QDRANT_API_KEY"
UPSERT_BATCH = 128
HIT_FIELDS = ["doc_id", "chunk_id", "page"]


class QdrantOptions(RemoteOptions):
    location: str | None = None
    """``:memory:`` for an in-process collection that lasts the run."""
    path: ConfigPath | None = None
    """A folder for an embedded Qdrant (kept between runs)."""
    embedded: Literal["edge", "local"] = "edge"
    """With ``location`` or ``path``: ``edge``, Qdrant's own Rust engine in process (qdrant-edge-py: HNSW,
    sparse IDF, MaxSim); ``local``, qdrant-client's local mode (a pure-Python re-implementation)."""
    url: ServiceUrl | None = None
    """A Qdrant server: ``http://localhost:6333``."""
    api_key: SecretRef | None = None
    vectors: dict[str, str] = Field(default_factory=dict)
    """Model -> vector name, where the collection names its vectors otherwise (default: the model's name)."""
    sparse: bool = True
    """Build a ``bm25`` sparse vector (BM25 ranked by Qdrant, fused with dense vectors by Qdrant)."""
    late_model: LateModel | None = None
    """A late-interaction model (``colbert-small``) stored as a MaxSim multivector; used from mode ultimate."""
    exact: bool = False
    """Exact search instead of HNSW (a server and Qdrant's embedded engine; local mode is always exact)."""
    words: ConfigPath | None = None
    """The local words index; default ``.vx/<target>.words.db`` beside the config."""

    @model_validator(mode="after")
    def _one_place(self) -> QdrantOptions:
        given = [name for name in ("location", "path", "url") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ValueError(
                "name exactly one of location (':memory:'), path (a folder) or url (a server)"
                + (f"; got {', '.join(given)}" if given else "")
            )
        if self.location is not None and self.location != ":memory:":
            raise ValueError(f"location must be ':memory:' (got {self.location!r}); use path: for a folder")
        return self

    def vector(self, model: str) -> str:
        return self.vectors.get(model, model)

    def indexing(self) -> dict[str, Any]:
        late = self.late_model if self.level() >= 2 else None
        engine = None if self.url else self.embedded
        return {
            **super().indexing(), "sparse": self.sparse, "late_model": late, "vectors": self.vectors, "engine": engine
        }  # fmt: skip


# ---------------------------------------------------------------------------------------------- engine


class QdrantEngine(Engine[QdrantOptions]):
    """Qdrant: dense per named vector, sparse BM25, MaxSim multivectors, and Qdrant's own RRF fusion."""

    name: ClassVar[str] = "qdrant"
    Options: ClassVar[type[EngineOptions]] = QdrantOptions

    @staticmethod
    def _client(options: QdrantOptions) -> tuple[Any, str]:
        """A client for where the options point, and that place as people read it."""
        client_module = need("qdrant_client", "qdrant")
        where = options.url or (str(options.path) if options.path else ":memory:")
        if options.url:
            client = client_module.QdrantClient(
                url=options.url,
                api_key=options.api_key.value() if options.api_key else None,
                timeout=int(options.timeout),
                # its version check is a request of its own, in a thread, outside the target's timeout and
                # retries (and it raced the first call): every request goes through the policy instead
                check_compatibility=False,
            )
        elif options.embedded == "edge":
            client = EdgeClient(options.path)
        elif options.path:
            client = client_module.QdrantClient(path=str(options.path))
        else:
            client = client_module.QdrantClient(location=":memory:")
        return client, where

    def open(self, options: QdrantOptions, context: OpenContext) -> QdrantHandle:
        client, where = self._client(options)
        name = collection_name(options, context)
        call = Caller(client, policy(options, context.target_name, where))
        exists = bool(call("collection_exists", name))
        words = words_path(options.words, context)

        def stored() -> str | None:
            """The collection's fingerprint, where its words index was written with the same build (None
            where it was not: the keyword index is built again with the rest)."""
            found = fingerprint_of(call, name) if exists else None
            return found if found is not None and read_fingerprint(words) == found else None

        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            stored=stored,
            build=lambda built, wanted: _build(call, name, options, built, wanted, words),
            exists=lambda: exists,
            absent=f"Qdrant at {where} has no collection '{name}'",
        )
        return QdrantHandle(call, name, options, context.models, words, where)

    def discover(self, where: str) -> Discovered:
        """``URL/COLLECTION`` (a Qdrant server; its API key from ``QDRANT_API_KEY`` when that is set) or
        ``FOLDER/COLLECTION`` (Qdrant's engine in process, the folder a ``path:`` target keeps): searched as it
        is, with a dense setup per named vector (named after its model, as vx-eval names them), Qdrant's BM25
        over the ``bm25`` sparse vector, and ColBERT-style reranking where a multivector is held."""
        base, collection = target_parts(where, self.name, "http://localhost:6333/docs or .vx/qdrant/docs")
        place = _place(base, where)
        spec = f"qdrant:{where}"
        options = options_for(QdrantOptions, {**place, "collection": collection, "build": "never"}, spec)
        client, said = self._client(options)
        call = Caller(client, policy(options, f"--target qdrant:{where}", said))
        try:
            if not call("collection_exists", collection):
                raise EngineError(f"--target qdrant:{where}: {said} has no collection '{collection}'")
            info = call("get_collection", collection)
        finally:
            client.close()
        params = info.config.params
        named: dict[str, Any] = params.vectors if isinstance(params.vectors, dict) else {}
        late = sorted(n for n, p in named.items() if p.multivector_config is not None)
        dense = sorted(n for n in named if n not in late)
        sparse = SPARSE in (params.sparse_vectors or {})
        options = options_for(
            QdrantOptions,
            {**place, "collection": collection, "build": "never", "dense_models": dense, "sparse": sparse}
            | ({"mode": "ultimate", "late_model": late[0]} if late else {}),
            spec,
        )
        unnamed = "" if named or params.vectors is None else f"; one unnamed vector ({params.vectors.size} dims)"
        found = (
            f"{info.points_count or 0} points in collection {collection}"
            + (" (built by vx-eval)" if (info.config.metadata or {}).get("fingerprint") else ""),
            "dense vectors: " + (", ".join(f"{n} ({named[n].size} dims)" for n in dense) or "none") + unnamed,
            f"BM25 sparse vector: {'yes' if sparse else 'no'}; multivectors: {', '.join(late) or 'none'}",
        )
        return Discovered(options, collection, found)


def _place(base: str, where: str) -> dict[str, Any]:
    """Where a discovered collection is: a server (its key from ``QDRANT_API_KEY`` when set), or a folder."""
    if base.startswith(("http://", "https://")):
        return {"url": base} | ({"api_key": {"env": API_KEY_ENV}} if os.environ.get(API_KEY_ENV) else {})
    path = Path(base).expanduser().resolve()
    if not path.is_dir():
        raise EngineError(f"--target qdrant:{where}: no folder {base} (a path: target's folder, or a server URL)")
    return {"path": path}


def _build(call: Caller, name: str, options: QdrantOptions, built: Built, wanted: str, words) -> None:
    """(Re)create the collection, upsert every chunk, write the words index, then the fingerprint last."""

    vectors = {
        options.vector(m): qm.VectorParams(size=int(built.dense[m].shape[1]), distance=qm.Distance.COSINE)
        for m in options.dense_models
    }
    late = options.indexing()["late_model"]
    if late:
        vectors[options.vector(late)] = qm.VectorParams(
            size=built.context.loaded.get(late, LATE).dim,
            distance=qm.Distance.COSINE,
            multivector_config=qm.MultiVectorConfig(comparator=qm.MultiVectorComparator.MAX_SIM),
            hnsw_config=qm.HnswConfigDiff(m=0),  # rescoring only: no graph over token vectors
        )
    sparse = {SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)} if options.sparse else None
    if call("collection_exists", name):
        call("delete_collection", name)
    call.create(
        "create_collection", name, vectors_config=vectors, sparse_vectors_config=sparse, metadata={"format": FORMAT}
    )
    if options.url:  # local mode has no payload indexes (and says so in a warning)
        call("create_payload_index", name, field_name="doc_id", field_schema=qm.PayloadSchemaType.KEYWORD)
    weights = bm25_documents([c.body for c in built.chunks]) if options.sparse else None
    tokens = iter(built.token_slices(late, UPSERT_BATCH)) if late else None
    advance = built.context.progress.start(f"Writing {built.context.target_name} · {name}", len(built.chunks))
    for start in range(0, len(built.chunks), UPSERT_BATCH):
        batch = built.chunks[start : start + UPSERT_BATCH]
        token_batch = next(tokens) if tokens else None
        points = []
        for i, chunk in enumerate(batch, start):
            vector: dict[str, Any] = {options.vector(m): built.dense[m][i].tolist() for m in options.dense_models}
            if weights is not None and weights[i][0]:
                vector[SPARSE] = qm.SparseVector(indices=weights[i][0], values=weights[i][1])
            if token_batch is not None:
                vector[options.vector(late)] = token_batch[i - start].tolist()
            payload: dict[str, Any] = {
                "doc_id": chunk.doc_id,
                "chunk_id": chunk.chunk_id,
                "page": chunk.page,
                "body": chunk.body,
            }
            if is_first_chunk(chunk):
                payload.update(built.documents[chunk.doc_id], first=True)
            points.append(qm.PointStruct(id=point_id(chunk.chunk_id), vector=vector, payload=payload))
        call("upsert", name, points=points, wait=True)
        advance(len(batch))
    build_words(words, built.chunks, wanted, "porter unicode61 remove_diacritics 2")
    call("update_collection", name, metadata={"format": FORMAT, "fingerprint": wanted})


class QdrantHandle(RemoteHandle[QdrantOptions]):
    """An opened Qdrant collection."""

    def __init__(self, call: Caller, name: str, options: QdrantOptions, models: Any, words, where: str) -> None:
        self.call = call
        self.name = name
        self.options = options
        self.models = models
        self.where = where
        info = call("get_collection", name)
        self.points = info.points_count or 0  # (describe counts documents with scroll, under the policy too)
        params = info.config.params
        named: dict[str, Any] = params.vectors if isinstance(params.vectors, dict) else {}
        self.late = {n for n, p in named.items() if p.multivector_config is not None}
        by_vector = {options.vector(m): m for m in options.dense_models}
        if options.late_model:
            by_vector.setdefault(options.vector(options.late_model), options.late_model)
        self.dense = {by_vector.get(n, n): n for n in named if n not in self.late}
        self.late_models = {by_vector.get(n, n): n for n in self.late}
        self.sparse = SPARSE in (params.sparse_vectors or {})
        self.metadata = info.config.metadata or {}
        # the words index answers keyword searches only for the build it was written with
        built = self.metadata.get("fingerprint")
        self.words = WordsIndex(words) if built is not None and read_fingerprint(words) == built else None
        self.search_params = None
        if options.exact:
            self.search_params = qm.SearchParams(exact=True)

    def held(self) -> int:
        return int(self.points)

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        caps = {KEYWORD} if self.words is not None and len(self.words) else set()
        if self.sparse:
            caps |= {SPARSE_PREFIX + SPARSE, FUSION}
        if self.options.level() >= 2:
            caps |= {LATE_PREFIX + m for m in self.late_models}
        return caps

    def describe(self) -> dict[str, Any]:
        return {
            "collection": self.name,
            "documents": len(self.document_ids()),
            "chunks": self.points,
            "models": sorted(self.dense) + sorted(self.late_models),
            "version": self._version(),
            "location": self.where,
            "keyword": "local words index" if self.words is not None else None,
            "fingerprint": self.metadata.get("fingerprint"),
            "mode": self.options.mode,
        }

    def _version(self) -> str:
        if self.options.url:
            return "Qdrant server via qdrant-client"
        if self.options.embedded == "edge":
            return f"Qdrant's engine in process (qdrant-edge-py {version('qdrant-edge-py')})"
        return "qdrant-client local mode (a Python re-implementation, not Qdrant's engine)"

    # ------------------------------------------------------------------------------------------ search

    def _sub(self, capability: str, text: str, depth: int) -> tuple[Any, str]:
        """The query and vector name for one of this collection's capabilities."""

        if capability == SPARSE_PREFIX + SPARSE and self.sparse:
            indices, values = bm25_query(text)
            return qm.SparseVector(indices=indices, values=values), SPARSE
        model = capability.removeprefix(DENSE_PREFIX)
        if capability.startswith(DENSE_PREFIX) and model in self.dense:
            return self.models.get(model, DENSE).encode_queries([text])[0].tolist(), self.dense[model]
        raise EngineError(self._unknown(capability))

    def _unknown(self, capability: str) -> str:
        return f"the Qdrant target has no capability '{capability}' (it has: {', '.join(sorted(self.capabilities()))})"

    def _points(self, **kwargs: Any) -> list[Hit]:
        response = self.call(
            "query_points", self.name, with_payload=HIT_FIELDS, search_params=self.search_params, **kwargs
        )
        hits = [payload_hit(p.payload or {}, p.score) for p in response.points]
        # equal scores (common under RRF) come back from Qdrant in no fixed order; chunk-id order makes a
        # ranking repeat run after run, as a tie-break in scoring would not for the caller's own order
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id or ""))

    def search(self, query: Query) -> list[Hit]:

        capability, text, k = query.capability, query.text, query.k
        if capability == KEYWORD and self.words is not None:
            return self.words.search(text, k)
        if capability == SPARSE_PREFIX + SPARSE and self.sparse and not bm25_query(text)[0]:
            return []  # nothing but stop words: no term to look up
        if capability.startswith((DENSE_PREFIX, SPARSE_PREFIX)):
            vector, using = self._sub(capability, text, k)
            return self._points(query=vector, using=using, limit=k)
        if capability.startswith(LATE_PREFIX) and capability.removeprefix(LATE_PREFIX) in self.late_models:
            ids = [point_id(h.chunk_id) for h in query.candidates if h.chunk_id]
            if not ids:
                return []
            model = capability.removeprefix(LATE_PREFIX)
            tokens = self.models.get(model, LATE).encode_query(text).tolist()
            keep = qm.Filter(must=[qm.HasIdCondition(has_id=ids)])
            return self._points(query=tokens, using=self.late_models[model], query_filter=keep, limit=min(k, len(ids)))
        if capability == FUSION and self.sparse:
            if not query.parts:
                raise EngineError("a fusion query names no parts to fuse")
            prefetch = []
            for part in query.parts:
                if part == SPARSE_PREFIX + SPARSE and not bm25_query(text)[0]:
                    continue
                vector, using = self._sub(part, text, k)
                prefetch.append(qm.Prefetch(query=vector, using=using, limit=k))
            if not prefetch:
                return []
            return self._points(prefetch=prefetch, query=qm.FusionQuery(fusion=qm.Fusion.RRF), limit=k)
        raise EngineError(self._unknown(capability))

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [point_id(h.chunk_id or "") for h in hits]
        records = self.call("retrieve", self.name, ids=ids, with_payload=["body"])
        body = {str(r.id): (r.payload or {}).get("body", "") for r in records}
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:
        seen: set[str] = set()
        offset = None
        while True:
            records, offset = self.call(
                "scroll", self.name, limit=1000, offset=offset, with_payload=["doc_id"], with_vectors=False
            )
            seen.update(str((r.payload or {}).get("doc_id")) for r in records)
            if offset is None:
                break
        return sorted(seen)

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:

        wanted = list(doc_ids)
        if not wanted:
            return []
        keep = qm.Filter(
            must=[
                qm.FieldCondition(key="doc_id", match=qm.MatchAny(any=wanted)),
                qm.FieldCondition(key="first", match=qm.MatchValue(value=True)),
            ]
        )
        records, _ = self.call("scroll", self.name, scroll_filter=keep, limit=len(wanted), with_payload=True)
        return stored_documents(wanted, {str(r.payload["doc_id"]): r.payload for r in records if r.payload})

    def close(self) -> None:
        if self.words is not None:
            self.words.close()
        self.call.client.close()


@hookimpl
def vx_eval_register_engines(register):
    register.add(QdrantEngine)
