"""What the engine plugins that build from the corpus share (Elasticsearch, OpenSearch, Azure AI Search,
Chroma, LanceDB, pgvector, Qdrant): their options, when to build (`ensure_built`), a handle's common part
(`RemoteHandle`: capabilities, the document ids, `missing`), retries, discovery's address, payload hits.

A remote target is built from the config's corpus with the same chunks and the same cached vectors as the
embedded engine (`prepare`), so the engines hold the same documents. A fingerprint of the corpus and every
indexing setting is written last, when everything else is in: an index without it (a build that crashed)
or with another one is built again on the next run.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import Field, ValidationError
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from vx_eval.plugin import (
    DENSE_PREFIX,
    HYBRID,
    PASSAGES,
    RERANKER_PREFIX,
    Built,
    Chunk,
    ConfigError,
    Corpus,
    Document,
    EngineError,
    Hit,
    IndexOptions,
    OpenContext,
    RemotePolicy,
    RerankerModel,
    prepare,
    remember_secret,
    slug,
)

__all__ = ["Built", "prepare"]  # where remote engines have always found them

T = TypeVar("T")
MODES = ("dense", "hybrid", "ultimate")


class CorpusOptions(IndexOptions):
    """Options every engine that builds its index from the config's corpus shares: from which chunks and
    vectors (`IndexOptions`), when to build, the reranker of its reranked setups, and how far its setups go
    (`level`: 0 keyword + dense, 1 + hybrid and reranked, 2 + ColBERT-style)."""

    collection: str | None = None
    """The index, collection or table; default: the target's name as a slug (``Qdrant local`` -> ``qdrant-local``)."""
    mode: Literal["dense", "hybrid", "ultimate"] = "hybrid"
    """dense: keyword + dense; hybrid: + fused and reranked setups; ultimate: + ColBERT-style where held."""
    reranker: RerankerModel | None = "ms-marco-minilm"
    build: Literal["auto", "always", "never"] = "auto"
    """auto: build from the config's corpus when it or a setting changed; always; never: search as it is."""

    def level(self) -> int:
        return MODES.index(self.mode)

    def indexing(self) -> dict[str, Any]:
        """Everything an index built from the corpus depends on (engines add their own)."""
        return {
            "chunk_words": self.chunk_words,
            "chunk_overlap": self.chunk_overlap,
            "dense_models": sorted(self.dense_models),
        }


class RemoteOptions(CorpusOptions):
    """Options every remote engine shares: what to build, from which chunks, and how to call the service."""

    timeout: float = Field(30.0, gt=0)
    """Seconds one request may take."""
    retries: int = Field(3, ge=0, le=10)
    """Further tries after a 429, a 502-504 or a timeout, with exponential backoff (bounded)."""


def fingerprint(corpus: Corpus, settings: dict[str, Any], engine_format: int) -> str:
    blob = json.dumps({"format": engine_format, "corpus": corpus.fingerprint, **settings}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def ensure_built(
    options: CorpusOptions,
    context: OpenContext,
    *,
    engine_format: int,
    stored: Callable[[], str | None],
    build: Callable[[Built, str], None],
    exists: Callable[[], bool],
    absent: str,
    settings: dict[str, Any] | None = None,
) -> None:
    """Build the target from the config's corpus where the index holds another fingerprint than the corpus
    and settings make (`stored()`: None where there is none), or always where the options say so; say so
    when a built index is built again. Without a corpus (or with ``build: never``) an index that does not
    exist (`exists()`) is refused in one line: `absent` says what is missing (``Qdrant at URL has no
    collection 'docs'``), and the error what to do."""
    corpus = context.corpus
    if corpus is not None and options.build != "never":
        wanted = fingerprint(corpus, options.indexing() if settings is None else settings, engine_format)
        found = stored()
        if options.build == "always" or found != wanted:
            if found is not None and found != wanted:
                context.progress.note(f"{context.target_name}: the corpus or a setting changed; building again")
            build(prepare(corpus, options, context), wanted)
    elif not exists():
        raise EngineError(
            f"target {context.target_name}: {absent} and the config declares no corpus; add `corpus:` to the "
            "config to build it, or name an existing one"
        )


HandleOptions = TypeVar("HandleOptions", bound=CorpusOptions)


class RemoteHandle(Generic[HandleOptions]):
    """The part every handle of these engines has alike: capabilities (nothing where the index is empty;
    passages, a dense setup per model held, and from ``mode: hybrid`` on the hybrid and reranked setups,
    beside what the engine adds in `own_capabilities`), the document ids read once, and `missing`.

    A handle sets `options`, and has `held` (chunks held), `dense_models` (the models it holds
    vectors of) and `_read_document_ids` (every document id, sorted)."""

    options: HandleOptions
    _ids: list[str] | None = None

    def held(self) -> int:
        raise NotImplementedError

    def dense_models(self) -> Iterable[str]:
        raise NotImplementedError

    def own_capabilities(self) -> set[str]:
        """What this engine adds: keyword search, its fusion, the rankers it runs itself."""
        return set()

    def capabilities(self) -> frozenset[str]:
        if not self.held():
            return frozenset()
        caps = {PASSAGES} | {DENSE_PREFIX + m for m in self.dense_models()} | self.own_capabilities()
        if self.options.level() >= 1:
            caps.add(HYBRID)
            if self.options.reranker:
                caps.add(RERANKER_PREFIX + self.options.reranker)
        return frozenset(caps)

    def _read_document_ids(self) -> list[str]:
        raise NotImplementedError

    def document_ids(self) -> list[str]:
        if self._ids is None:
            self._ids = self._read_document_ids()
        return self._ids

    def missing(self, doc_ids: Iterable[str]) -> set[str]:
        return set(doc_ids) - set(self.document_ids())


def collection_name(options: RemoteOptions, context: OpenContext) -> str:
    return options.collection or slug(context.target_name)


def is_first_chunk(chunk: Chunk) -> bool:
    """The chunk that carries its document's own fields (title, text, metadata) in a remote index."""
    return chunk.ord == 0 and chunk.page in (None, 1)


def stored_documents(wanted: Sequence[str], found: dict[str, dict[str, Any]]) -> list[Document]:
    """Documents rebuilt from their first chunks' fields (``title``, ``text``, ``metadata`` as an object
    or JSON), in the order asked, those not found left out."""
    out = []
    for doc_id in wanted:
        if doc_id not in found:
            continue
        fields = found[doc_id]
        metadata = fields.get("metadata") or {}
        if isinstance(metadata, str):
            metadata = json.loads(metadata or "{}")
        text, title = fields.get("text") or "", fields.get("title") or ""
        out.append(Document(id=doc_id, text=text, title=title, metadata=metadata))
    return out


def index_lookups(call: RemotePolicy, client: Any, index: str) -> tuple[Callable[[], bool], Callable[[], str | None]]:
    """For `ensure_built` on an Elasticsearch-DSL cluster (OpenSearch and Elasticsearch alike): whether the
    index exists, and the fingerprint its mapping's ``_meta`` holds (None where there is no index or none)."""

    def exists() -> bool:
        return bool(call(f"looking up index {index}", lambda: client.indices.exists(index=index)))

    def stored() -> str | None:
        if not exists():
            return None
        mapping = dict(call(f"reading the mapping of {index}", lambda: client.indices.get_mapping(index=index)))
        return (mapping.get(index, {}).get("mappings", {}).get("_meta") or {}).get("fingerprint")

    return exists, stored


def first_chunks(wanted: Sequence[str]) -> dict[str, Any]:
    """The Elasticsearch-DSL query (OpenSearch and Elasticsearch alike) for these documents' first chunks."""
    return {"bool": {"filter": [{"terms": {"doc_id": list(wanted)}}, {"term": {"first": True}}]}}


def paged_document_ids(
    call: RemotePolicy, search: Callable[[dict[str, Any]], Any], index: str, page: int = 1000
) -> list[str]:
    """Every document id of an Elasticsearch-DSL index (OpenSearch and Elasticsearch alike), read from its first
    chunks a page at a time in id order (`search` sends one request's body): each page is one call under the
    policy, so a fault costs that page's retry, never the listing so far (a scroll retried whole could meet a
    fault in every try)."""
    ids: list[str] = []
    after: list[Any] | None = None
    while True:
        body: dict[str, Any] = {
            "query": {"term": {"first": True}},
            "_source": ["doc_id"],
            "size": page,
            "sort": [{"doc_id": "asc"}],
            **({"search_after": after} if after is not None else {}),
        }
        hits = call(f"listing the documents of {index}", partial(search, body))["hits"]["hits"]
        ids += [str(h["_source"]["doc_id"]) for h in hits]
        if len(hits) < page:
            return sorted(set(ids))
        after = hits[-1]["sort"]


def by_document(response: Any) -> dict[str, dict[str, Any]]:
    """A search answer's hits as {doc_id: stored fields}."""
    return {str(h["_source"]["doc_id"]): h["_source"] for h in response["hits"]["hits"]}


def payload_hit(payload: dict[str, Any], score: float) -> Hit:
    """A hit from a stored chunk's fields: ``doc_id``, ``chunk_id``, ``page``; the rest kept as fields."""
    page = payload.get("page")
    return Hit(
        str(payload.get("doc_id")),
        float(score),
        int(page) if page is not None else None,
        payload.get("chunk_id"),
        {k: v for k, v in payload.items() if k not in ("doc_id", "chunk_id", "page", "body") and not k.startswith("@")},
    )


def retrying(call: Callable[[], T], *, attempts: int, transient: Callable[[BaseException], bool]) -> T:
    """`call()`, tried again after a transient failure up to `attempts` more times (backoff 0.5 s doubling,
    at most 8 s a wait); the last failure is raised as it was."""
    for attempt in Retrying(
        stop=stop_after_attempt(attempts + 1),
        wait=wait_exponential(multiplier=0.5, max=8),
        retry=retry_if_exception(transient),
        reraise=True,
    ):
        with attempt:
            return call()
    raise AssertionError("unreachable")  # pragma: no cover


def need(module: str, extra: str) -> Any:
    """Import a client library, or say which extra installs it."""

    try:
        return importlib.import_module(module)
    except ImportError:
        raise EngineError(
            f"this engine needs the Python package behind '{module}'; install it with: pip install 'vx-eval[{extra}]'"
        ) from None


def target_parts(where: str, engine: str, example: str) -> tuple[str, str]:
    """``ADDRESS/NAME`` as ``--target ENGINE:`` takes it for a remote engine: where the service or folder is,
    and the collection, index or table. A password in the address is refused (it would be kept in the
    config the run writes) and masked in anything printed after."""
    password = urlsplit(where).password if "://" in where else None
    if password:
        remember_secret(password)
        raise ConfigError(
            f"--target {engine}:{where.replace(password, '***')}: the address carries a password, which the "
            "config this run writes would keep; write it without one and export the password (PGPASSWORD, "
            "QDRANT_API_KEY, OPENSEARCH_PASSWORD)"
        )
    base, _, name = where.rstrip("/").rpartition("/")
    if not base or not name or base.endswith(":/"):
        raise ConfigError(f"--target {engine}:{where}: write {engine}:ADDRESS/NAME, e.g. {engine}:{example}")
    return base, name


Opts = TypeVar("Opts", bound=RemoteOptions)


def options_for(cls: type[Opts], fields: dict[str, Any], spec: str) -> Opts:
    """The options a ``--target`` names, validated; what is wrong with them one line naming the target."""
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"]) or "the address"
        raise ConfigError(f"--target {spec}: {field}: {error['msg']}") from None


def words_path(options_path: Path | None, context: OpenContext) -> Path:
    return options_path or context.config_dir / ".vx" / f"{slug(context.target_name)}.words.db"
