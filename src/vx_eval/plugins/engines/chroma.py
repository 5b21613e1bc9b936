"""Chroma, embedded (``chromadb.PersistentClient``, a folder) or a Chroma server (``url``), as teams prototype
RAG on it. vx-eval embeds (``embedding_function=None``): Chroma holds the same chunks and the same cached
vectors as every other engine (`prepare`), a collection per target with one vector space (the first dense
model; a second model is a collection of its own, ``<name>--<model>``).

What it offers is what Chroma does:

- ``dense:<model>``: Chroma's HNSW search by cosine distance (``ef_search`` high enough to be exact on small
  collections; set ``ef_search`` for larger ones);
- ``keyword``, labelled for what it is: Chroma has no BM25, only document filters. Here a chunk's keyword
  score is how many of the question's words it holds, each word looked up with Chroma's ``$regex`` filter
  (case-insensitive, whole words); hybrid setups fuse that with the vectors here, and rerankers read its
  passages.

A fingerprint of the corpus and every indexing setting is the collection's metadata, written last: a
collection without it (a build that crashed) or with another one is built again.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import partial
from importlib.metadata import version
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    KEYWORD,
    Built,
    ConfigPath,
    Document,
    Engine,
    EngineError,
    EngineOptions,
    Hit,
    OpenContext,
    Query,
    RemotePolicy,
    ServiceUrl,
    on_first_use,
    query_terms,
    slug,
)
from vx_eval.plugins.engines.remote import (
    CorpusOptions,
    RemoteHandle,
    ensure_built,
    is_first_chunk,
    need,
    stored_documents,
)

errors = on_first_use("chromadb.errors", "chroma")
httpx = on_first_use("httpx")

FORMAT = 1
UPSERT_BATCH = 1000
TERM_LIMIT = 10_000
"""Chunks one word's filter may return: a word in more chunks than that says little about any of them."""


class ChromaOptions(CorpusOptions):
    path: ConfigPath | None = None
    """The database folder (embedded); default ``.vx/<target>.chroma`` beside the config."""
    url: ServiceUrl | None = None
    """A Chroma server (``http://127.0.0.1:8000``) instead of a folder."""
    collection: str | None = None
    """The collection (one per dense model, the first model's named so); default: the target's name as a slug."""
    mode: Literal["dense", "hybrid"] = "hybrid"
    ef_search: int = Field(200, ge=1, le=100_000)
    """HNSW's search breadth: at least the collection's size makes it exact."""
    timeout: float = Field(30.0, gt=0)
    retries: int = Field(3, ge=0, le=10)

    @field_validator("dense_models")
    @classmethod
    def _one_model_at_least(cls, models: list[str]) -> list[str]:
        if not models:
            raise ValueError("Chroma holds a collection per dense model and searches by vector: name one at least")
        return models

    def indexing(self) -> dict[str, Any]:
        return {"chunk_words": self.chunk_words, "chunk_overlap": self.chunk_overlap, "model": self.dense_models}


def _client(options: ChromaOptions, context_dir: Any, target: str) -> tuple[Any, str]:
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    chromadb = need("chromadb", "chroma")
    settings = chromadb.Settings(anonymized_telemetry=False)
    if options.url:
        parts = re.match(r"^(https?)://([^:/]+)(?::(\d+))?", options.url)
        if parts is None:
            raise EngineError(f"target {target}: url {options.url} is not http(s)://HOST[:PORT]")
        scheme, host, port = parts.groups()
        try:
            client = chromadb.HttpClient(host=host, port=int(port or 8000), ssl=scheme == "https", settings=settings)
        except ValueError as exc:  # the client asks the server's heartbeat when it is made
            raise EngineError(
                f"target {target}: cannot reach {options.url} ({exc}); is the Chroma server running and the "
                "address right?"
            ) from None
        session = getattr(getattr(client, "_server", None), "_session", None)
        if session is not None:  # the client makes its HTTP session with no timeout at all
            session.timeout = httpx.Timeout(options.timeout)
        return client, options.url
    folder = options.path or context_dir / ".vx" / f"{slug(target)}.chroma"
    return chromadb.PersistentClient(path=str(folder), settings=settings), str(folder)


def _policy(options: ChromaOptions, target: str, where: str) -> RemotePolicy:

    return RemotePolicy(
        target=f"target {target}",
        name=target,
        where=where,
        retries=options.retries if options.url else 0,
        errors=(errors.ChromaError, httpx.HTTPError),
        transient=lambda exc: isinstance(exc, httpx.TransportError),
        unreachable=lambda exc: isinstance(exc, httpx.ConnectError),
    )


def _space(options: ChromaOptions, name: str, model: str) -> str:
    return name if model == options.dense_models[0] else f"{name}--{slug(model)}"


class ChromaEngine(Engine[ChromaOptions]):
    """Chroma: dense (HNSW, cosine), and keyword-like matches through its document filters."""

    name: ClassVar[str] = "chroma"
    Options: ClassVar[type[EngineOptions]] = ChromaOptions

    def open(self, options: ChromaOptions, context: OpenContext) -> ChromaHandle:
        client, where = _client(options, context.config_dir, context.target_name)
        call = _policy(options, context.target_name, where)
        name = options.collection or slug(context.target_name)
        spaces = {m: _space(options, name, m) for m in options.dense_models}
        listed = _names(client, call)

        def stored() -> str | None:
            """The collections' fingerprint where every model's collection has the same one ("" where they
            differ: some are of another build)."""
            found = {self._fingerprint(client, call, s) if s in listed else None for s in spaces.values()}
            return found.pop() if len(found) == 1 else ""

        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            stored=stored,
            build=lambda built, wanted: _build(client, call, spaces, options, built, wanted),
            exists=lambda: all(s in listed for s in spaces.values()),
            absent=f"Chroma at {where} has no collection '{name}'",
        )
        return ChromaHandle(client, call, name, spaces, options, context.models, where)

    @staticmethod
    def _fingerprint(client: Any, call: RemotePolicy, space: str) -> str | None:
        collection = call(f"opening collection {space}", lambda: client.get_collection(space, embedding_function=None))
        return (collection.metadata or {}).get("fingerprint")


def _names(client: Any, call: RemotePolicy) -> set[str]:
    """The collections there are (Chroma 1.x lists names; older clients list collection objects)."""
    return {c if isinstance(c, str) else c.name for c in call("listing collections", client.list_collections)}


def _build(
    client: Any, call: RemotePolicy, spaces: dict[str, str], options: ChromaOptions, built: Built, wanted: str
) -> None:
    """Each model's collection made again from the chunks, in batches; the fingerprint written last."""

    chunks = built.chunks
    for model, space in spaces.items():
        if space in _names(client, call):  # listed again: the embedding took a while, the server is shared
            call(f"deleting collection {space}", partial(client.delete_collection, space))
        hnsw = {"space": "cosine", "ef_search": options.ef_search, "ef_construction": max(200, options.ef_search)}
        collection = call(
            f"creating collection {space}",
            partial(
                client.create_collection,
                space,
                embedding_function=None,
                configuration={"hnsw": hnsw},
                metadata={"format": FORMAT},
            ),
        )
        advance = built.context.progress.start(f"Writing {built.context.target_name} · {space}", len(chunks))
        for start in range(0, len(chunks), UPSERT_BATCH):
            batch = chunks[start : start + UPSERT_BATCH]
            metadatas = []
            for c in batch:
                row: dict[str, Any] = {"doc_id": c.doc_id, "page": c.page if c.page is not None else -1}
                if is_first_chunk(c):
                    fields = built.documents[c.doc_id]
                    row |= {"first": True, "title": fields["title"], "text": fields["text"]}
                    row["metadata"] = json.dumps(fields["metadata"])
                metadatas.append(row)
            vectors = built.dense[model][start : start + UPSERT_BATCH]
            call(
                f"adding {len(batch)} chunks to {space}",
                partial(
                    collection.add,
                    ids=[x.chunk_id for x in batch],
                    embeddings=vectors,
                    documents=[x.body for x in batch],
                    metadatas=metadatas,
                ),
            )
            advance(len(batch))
        call(f"marking {space} built", partial(collection.modify, metadata={"format": FORMAT, "fingerprint": wanted}))


class ChromaHandle(RemoteHandle[ChromaOptions]):
    """An opened Chroma collection (one per dense model)."""

    keyword_ranking = "term matches: how many of the question's words a chunk holds (Chroma's $regex filter), not BM25"

    def __init__(
        self,
        client: Any,
        call: RemotePolicy,
        name: str,
        spaces: dict[str, str],
        options: ChromaOptions,
        models: Any,
        where: str,
    ) -> None:
        self.client, self.call, self.name, self.options, self.models, self.where = (
            client,
            call,
            name,
            options,
            models,
            where,
        )
        self.collections = {
            m: call(f"opening collection {s}", partial(client.get_collection, s, embedding_function=None))
            for m, s in spaces.items()
        }
        self.first = next(iter(self.collections.values()))
        self.count = call(f"counting {name}", self.first.count)
        self._docs: dict[str, tuple[str, int | None]] = {}
        """Each chunk a keyword search has seen: its document and page."""

    def held(self) -> int:
        return int(self.count)

    def dense_models(self) -> list[str]:
        return list(self.collections)

    def own_capabilities(self) -> set[str]:
        return {KEYWORD}

    def describe(self) -> dict[str, Any]:

        return {
            "collection": self.name,
            "documents": len(self.document_ids()),
            "chunks": self.count,
            "models": sorted(self.collections),
            "version": f"Chroma {version('chromadb')}" + (" server" if self.options.url else " (embedded)"),
            "location": self.where,
            "fingerprint": (self.first.metadata or {}).get("fingerprint"),
            "mode": self.options.mode,
            "keyword": self.keyword_ranking,
        }

    def _unknown(self, capability: str) -> str:
        return f"the Chroma target has no capability '{capability}' (it has: {', '.join(sorted(self.capabilities()))})"

    def search(self, query: Query) -> list[Hit]:
        capability, text, k = query.capability, query.text, query.k
        if capability == KEYWORD:
            return self._keyword(text, k)
        model = capability.removeprefix(DENSE_PREFIX)
        if capability.startswith(DENSE_PREFIX) and model in self.collections:
            vector = self.models.get(model, DENSE).encode_queries([text])[0]
            collection = self.collections[model]
            n = min(k, self.count)
            found = self.call(
                "searching",
                lambda: collection.query(query_embeddings=[vector], n_results=n, include=["distances", "metadatas"]),
            )
            hits = [
                Hit(str(meta["doc_id"]), 1.0 - float(dist), _page(meta), chunk_id)
                for chunk_id, dist, meta in zip(
                    found["ids"][0], found["distances"][0], found["metadatas"][0], strict=True
                )
            ]
            return sorted(hits, key=lambda h: (-h.score, h.chunk_id or ""))
        raise EngineError(self._unknown(capability))

    def _keyword(self, text: str, k: int) -> list[Hit]:
        terms = list(dict.fromkeys(query_terms(text)))
        counts: Counter[str] = Counter()
        for term in terms:
            pattern = {"$regex": rf"(?i)\b{re.escape(term)}\b"}
            found = self.call(
                f"matching '{term}'",
                partial(self.first.get, where_document=pattern, include=["metadatas"], limit=TERM_LIMIT),
            )
            for chunk_id, meta in zip(found["ids"], found["metadatas"], strict=True):
                counts[chunk_id] += 1
                self._docs.setdefault(chunk_id, (str(meta["doc_id"]), _page(meta)))
        ranked = sorted(counts, key=lambda c: (-counts[c], c))[:k]
        return [Hit(self._docs[c][0], float(counts[c]), self._docs[c][1], c) for c in ranked]

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [h.chunk_id or "" for h in hits]
        if not ids:
            return []
        found = self.call(
            "reading passages", lambda: self.first.get(ids=list(dict.fromkeys(ids)), include=["documents"])
        )
        body = dict(zip(found["ids"], found["documents"], strict=True))
        return [body.get(i) or "" for i in ids]

    def _read_document_ids(self) -> list[str]:
        seen: set[str] = set()
        for offset in range(0, self.count, 5000):
            found = self.call(
                "listing documents", partial(self.first.get, include=["metadatas"], limit=5000, offset=offset)
            )
            seen.update(str(m["doc_id"]) for m in found["metadatas"])
        return sorted(seen)

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        wanted = list(doc_ids)
        if not wanted:
            return []
        keep = {"$and": [{"first": True}, {"doc_id": {"$in": wanted}}]}
        found = self.call("reading documents", lambda: self.first.get(where=keep, include=["metadatas"]))
        return stored_documents(wanted, {str(m["doc_id"]): m for m in found["metadatas"]})

    def close(self) -> None:
        return None


def _page(meta: dict[str, Any]) -> int | None:
    page = meta.get("page")
    return None if page is None or page == -1 else int(page)


@hookimpl
def vx_eval_register_engines(register):
    register.add(ChromaEngine)
