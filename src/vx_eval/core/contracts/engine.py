"""What engines, targets and setups look like to the core: documents, hits, handles and setups."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from vx_eval.core.contracts.fields import SearchConfig
from vx_eval.core.contracts.models import ModelSource
from vx_eval.core.errors import PluginError

KEYWORD = "keyword"


@dataclass(frozen=True)
class Document:
    """One document of a collection. `pages` holds per-page text for paged documents (PDF reports)."""

    id: str
    text: str
    title: str = ""
    pages: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Hit:
    """One search result as the engine returned it; `page` is 1-based where the unit is a page."""

    doc_id: str
    score: float
    page: int | None = None
    chunk_id: str | None = None
    fields: dict[str, Any] = field(default_factory=dict, compare=False)
    """Fields the engine returned with the result (payload); `relevance_field` looks here first."""

    @property
    def unit(self) -> str:
        """The finest unit this hit names: ``doc`` or ``doc#page=N``."""
        return self.doc_id if self.page is None else f"{self.doc_id}#page={self.page}"


@dataclass(frozen=True)
class Query:
    """One search request: the question, how many results, and which capability of the handle runs it."""

    text: str
    k: int
    capability: str = KEYWORD
    candidates: tuple[Hit, ...] = ()
    """For rescoring capabilities (``late:<model>``): the hits to score again."""
    parts: tuple[str, ...] = ()
    """For ``fusion``: the capabilities the engine runs and fuses itself (``sparse:bm25``, ``dense:minilm``)."""
    ranker: str | None = None
    """A ranker the engine runs on its own results (``semantic`` with ``service-ranker:semantic``)."""
    fusion: str = "convex"
    """For ``fusion``: how the run fuses (`search.fusion`: ``convex`` or ``rrf``), for an engine that can
    fuse either way (PostgreSQL does it in SQL); an engine with one fusion of its own (Qdrant's RRF) uses it."""
    weights: tuple[float, ...] = ()
    """For ``fusion``: each part's weight, in the order of `parts` (empty: equal)."""
    rrf_k: int = 60


# Capabilities a handle can report. Engines say what they hold; setup plugins compose over them.
DENSE_PREFIX = "dense:"  # dense:<model>, a vector per chunk for that model
LATE_PREFIX = "late:"  # late:<model>, token vectors: rescores Query.candidates by MaxSim
RERANKER_PREFIX = "reranker:"  # reranker:<model>, the cross-encoder the target is configured with
HYBRID = "hybrid"  # the target is opened to offer fused (and reranked) setups
GRAPH = "graph"  # an entity graph: graph-expanded candidates
PASSAGES = "passages"  # handle.passages(hits) gives each hit's text, for rerankers
SPARSE_PREFIX = "sparse:"  # sparse:<name>, learned or BM25 sparse vectors held by the engine
FUSION = "fusion"  # the engine fuses several of its own searches (Query.parts) server-side
SERVICE_RANKER_PREFIX = "service-ranker:"  # service-ranker:<name>, a ranker the service runs (Query.ranker)
RETRIEVER = "retriever"  # a retriever given from Python (a function, LangChain, LlamaIndex): one ranking of its own


def capability_models(capabilities: frozenset[str], prefix: str) -> list[str]:
    """The models named by capabilities with this prefix, sorted: ``dense:minilm`` -> ``minilm``."""
    return sorted(c.removeprefix(prefix) for c in capabilities if c.startswith(prefix))


# Set by the run around each search: True where a setup may reuse what an earlier search computed (a
# search whose time is not recorded), False for every timed search, which runs end to end.
reuse_allowed: ContextVar[bool] = ContextVar("vx_eval_reuse_allowed", default=False)


# Set by the run around each search: engines that learn how long the service itself took (OpenSearch's
# ``took``) add it here with `record_server_time`; the report shows it beside the time the caller saw.
server_time: ContextVar[list[float] | None] = ContextVar("vx_eval_server_time", default=None)


def record_server_time(ms: float) -> None:
    """Add the milliseconds a service says it spent on a request of the current search."""
    spent = server_time.get()
    if spent is not None:
        spent.append(float(ms))


class Corpus(Protocol):
    """Documents declared by a config, with a fingerprint that changes when their content does."""

    fingerprint: str
    source: str

    def __iter__(self) -> Iterator[Document]: ...

    def __len__(self) -> int: ...


class Progress(Protocol):
    """Where long work reports how far it is (the CLI shows a bar; tests pass a silent one). A progress may
    also have ``plan(setups, questions)``, told the run's size once searching is planned (the server's runs
    keep it)."""

    def start(self, description: str, total: int | None) -> Callable[[int], None]: ...

    def note(self, message: str) -> None: ...


class SilentProgress:
    """A `Progress` that shows nothing."""

    def start(self, description: str, total: int | None) -> Callable[[int], None]:
        return lambda advance: None

    def note(self, message: str) -> None:
        return None


@dataclass(frozen=True)
class OpenContext:
    """What an engine gets besides its options when a target is opened."""

    target_name: str
    config_dir: Path
    corpus: Corpus | None = None
    progress: Progress = field(default_factory=SilentProgress)
    models: ModelSource | None = None
    """The run's models (a `ModelSource`: the run gives `core.models.loading.Models`), each loaded by name once
    (None only where no model is needed)."""

    @property
    def loaded(self) -> ModelSource:
        """The run's models, for an engine that embeds (an error where the caller gave none)."""
        if self.models is None:
            raise PluginError(f"target {self.target_name} was opened without the run's models, which it needs")
        return self.models


@runtime_checkable
class EngineHandle(Protocol):
    """An opened engine on one collection: what it can do, what it holds, and one search at a time."""

    def capabilities(self) -> frozenset[str]:
        """Capability names setups compose over: ``keyword``, later ``dense:<model>`` and others."""
        ...

    def describe(self) -> TargetDescription | Mapping[str, Any]:
        """What the report says of this collection (see `TargetDescription`): ``collection``, ``documents``
        (count), ``models``, ``version``, ``location``; engine-specific facts in ``details``."""
        ...

    def search(self, query: Query) -> list[Hit]:
        """Results in the engine's order, at most ``query.k``."""
        ...

    # Optional: ``keyword_ranking``, a str naming what the ``keyword`` capability ranks by ("BM25", or
    # "ts_rank_cd: PostgreSQL full text, not BM25"), for the keyword setup's label (default BM25).

    def missing(self, doc_ids: Iterable[str]) -> set[str]:
        """The ids among `doc_ids` that this collection does not hold."""
        ...

    def document_ids(self) -> list[str]:
        """Every document id, sorted."""
        ...

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        """The documents with these ids (those held), in the order asked."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class PassageHandle(EngineHandle, Protocol):
    """A handle with the ``passages`` capability: each hit's text, for the rerankers that read it."""

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        """The text of each hit's chunk (or page), in the order of `hits` ("" where there is none)."""
        ...


class TargetDescription(BaseModel):
    """What `EngineHandle.describe` says of an opened collection, for the report and the page. Engine-
    specific facts go in `details`; a plain mapping with these keys (and others) is read too (`of`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    collection: str | None = None
    documents: int | None = None
    chunks: int | None = None
    models: list[str] = Field(default_factory=list)
    version: str | None = None
    location: str | None = None
    """Where the engine answers: a URL without credentials, or a path."""
    mode: str | None = None
    indexed_at: str | None = None
    corpus_sha256: str | None = None
    fingerprint: str | None = None
    settings: dict[str, Any] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)

    @classmethod
    def of(cls, value: TargetDescription | Mapping[str, Any]) -> TargetDescription:
        if isinstance(value, TargetDescription):
            return value
        known = {k: v for k, v in value.items() if k in cls.model_fields and k != "details"}
        extra = {k: v for k, v in value.items() if k not in cls.model_fields}
        return cls(**known, details={**dict(value.get("details") or {}), **extra})


class EngineOptions(BaseModel):
    """Base for an engine's nested ``Options``: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Discovered:
    """What an engine read from an index it was pointed at (``vx-eval run --target ENGINE:WHERE``): the
    options that search it as it is, and what it found, in words, for the person reading the run."""

    options: EngineOptions
    name: str
    """A name for the collection (the index file's, the collection's)."""
    found: tuple[str, ...] = ()


OptionsT = TypeVar("OptionsT", bound=EngineOptions)


class Engine(Generic[OptionsT]):
    """Base class for engine plugins: a ``name``, an ``Options`` model and ``open``; optionally
    ``discover``. Typed by its options (``class MyEngine(Engine[MyOptions])``), which `open` is given
    validated."""

    name: ClassVar[str]
    Options: ClassVar[type[EngineOptions]] = EngineOptions

    def open(self, options: OptionsT, context: OpenContext) -> EngineHandle:
        raise NotImplementedError

    def discover(self, where: str) -> Discovered | None:
        """Options for the index at `where` (what follows ``ENGINE:`` in ``--target``), filled from what the
        index says of itself: its fields, vectors and models. None: this engine cannot (write a config)."""
        return None

    def embeds(self, options: OptionsT, context: OpenContext) -> dict[str, str] | None:
        """What `open` would embed the corpus with, before it is called: each model's name and kind
        (``dense``, ``late``); empty where it would build nothing (its index is up to date). None: this
        engine cannot tell, and the run's plan assumes it embeds for every ``dense_models`` it names."""
        return None


def slug(name: str) -> str:
    """A stable key fragment from a name people read: ``"Azure AI Search"`` -> ``"azure-ai-search"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "target"


@dataclass
class Target:
    """One opened engine handle on one collection, with the name people read."""

    name: str
    engine: str
    handle: EngineHandle
    options: EngineOptions | None
    """The engine's options as validated from the config (None for a retriever given from Python)."""
    models: ModelSource
    """The run's models (a `ModelSource`: the run gives `core.models.loading.Models`), for setups that run a
    model themselves (rerankers)."""
    search: SearchConfig
    """The run's `SearchConfig`: candidate and rerank depths, fusion, RRF's k."""

    @property
    def key(self) -> str:
        return slug(self.name)

    @property
    def capabilities(self) -> frozenset[str]:
        return self.handle.capabilities()


@dataclass(frozen=True)
class Setup:
    """One way of searching one target: method x model(s) x ranker, with a stable key."""

    key: str
    target: str
    engine: str
    method: str
    label: str
    run: Callable[[str, int], list[Hit]] = field(compare=False, repr=False)
    models: tuple[str, ...] = ()
    ranker: str | None = None

    def search(self, text: str, k: int) -> list[Hit]:
        return self.run(text, k)


class Adapter(Protocol):
    """An adapter plugin: turns something that searches, given from Python (a function, an object with a
    ``search`` method, a LangChain or LlamaIndex retriever), into an `EngineHandle` the run searches."""

    name: ClassVar[str]

    def accepts(self, obj: Any) -> bool:
        """Whether this adapter knows `obj` (checked without importing the library it may come from)."""
        ...

    def handle(self, obj: Any, name: str, options: Mapping[str, Any]) -> EngineHandle:
        """The handle searching through `obj`; `options` as the caller gave them (``id_field``, …)."""
        ...


class SetupProvider(Protocol):
    """A setup plugin: the setups it can compose over one target's capabilities."""

    name: ClassVar[str]

    def setups(self, target: Target) -> Iterable[Setup]: ...


class SetupResults(Protocol):
    """One setup's searches as judging reads them (the run gives `core.run.search.SetupRun`): per question
    its (finest unit, score) results best first and its failure (or None), and `error` where the setup
    searched nothing at all."""

    setup: Setup
    error: str | None
    results: list[list[tuple[str | None, float]]]
    errors: list[str | None]
