"""Everything a plugin author needs, in one import: ``from vx_eval.plugin import …``.

A plugin is a module with hook implementations (`hookimpl`) registered under the ``vx_eval`` entry-point
group; each hook receives a `Registry` and adds classes with a stable ``name``. The roles, and what a class
of each role has (the Protocols below are the ones the core itself annotates with):

- **engine** (`Engine`): ``Options`` (an `EngineOptions` model for the target's ``options:`` block) and
  ``open(options, context) -> EngineHandle``. A handle says what it can do (`capabilities`: `KEYWORD`,
  ``DENSE_PREFIX + model``, `PASSAGES`, `HYBRID`, ``RERANKER_PREFIX + model``, `FUSION`, …), holds
  documents (`missing`, `document_ids`, `documents`), runs one `Query` at a time (`search` -> `Hit` list)
  and, with `PASSAGES`, gives each hit's text (`PassageHandle.passages`) to the shared rerankers. The
  built-in setup providers compose every setup from those capabilities: offer ``dense:minilm``,
  ``passages`` and ``hybrid`` and you get dense, hybrid (fused here) and cross-encoder-reranked setups
  with no further code. An engine built from the config's corpus gets the same chunks and cached
  vectors every other engine gets from `prepare` (and `IndexOptions` for its options). Optionally
  ``discover(where) -> Discovered``: options that search an existing index as it is, read from the index
  itself, for ``vx-eval run --target ENGINE:WHERE`` with no config.
- **setup provider** (`SetupProvider`): ``setups(target) -> Iterable[Setup]``.
- **store** (`Store`): ``Options``, ``handles``, ``read``/``write``/``exists``/``list`` (and optionally
  ``delete`` and ``inside``); `StoreNotFound`, `StoreDenied` and `StoreFull` tell the failures apart.
- **model** (`ModelPlugin`): ``name``, ``kind`` (`DENSE`, `RERANKER`, `LATE`), ``label``,
  ``load(settings)`` giving a `DenseEncoder`, `CrossEncoder` or `LateEncoder`.
- **model provider** (`Provider`): speaks a served model's wire format for the endpoints a config declares
  under ``models.endpoints`` (`ModelEndpoint`): ``embed(texts, input_type) -> Embedded``, ``rerank(query,
  documents) -> Reranked`` and ``failure(exc) -> Failure``; vx-eval batches, rate-limits, retries,
  caches and counts its calls.
- **judge** (`Judge`): ``Options``, ``__init__(options, models)``, ``fingerprint``, ``describe``,
  ``grade(pairs) -> list[Verdict]``.
- **question writer** (`QuestionWriter`): ``Options``, ``writes_questions``, ``describe`` and
  ``write(units, request) -> WriteOutcome`` with `GoldenRow` rows.

A client library an engine needs only once it is used is declared at the module's top with `on_first_use`
(``sql = on_first_use("psycopg.sql", "pgvector")``): it is imported when first read, so loading plugins costs
nothing, and where it is not installed the error names the extra to install. Remote engines call their
service through `RemotePolicy` (timeouts, bounded retries with backoff, one
clear error for refused credentials). `vx_eval.testing.conformance.EngineConformance` is the test suite
every engine should pass.
"""

from __future__ import annotations

from vx_eval.core.contracts.endpoints import Billed, Embedded, Failure, InputType, ModelEndpoint, Provider, Reranked
from vx_eval.core.contracts.engine import (
    DENSE_PREFIX,
    FUSION,
    GRAPH,
    HYBRID,
    KEYWORD,
    LATE_PREFIX,
    PASSAGES,
    RERANKER_PREFIX,
    RETRIEVER,
    SERVICE_RANKER_PREFIX,
    SPARSE_PREFIX,
    Corpus,
    Discovered,
    Document,
    Engine,
    EngineHandle,
    EngineOptions,
    Hit,
    OpenContext,
    PassageHandle,
    Progress,
    Query,
    Setup,
    SetupProvider,
    Target,
    TargetDescription,
    capability_models,
    record_server_time,
    reuse_allowed,
    slug,
)
from vx_eval.core.contracts.fields import ConfigPath, SecretRef, ServiceUrl, is_uri
from vx_eval.core.contracts.golden import GoldenRow
from vx_eval.core.contracts.judge import Judge, Verdict
from vx_eval.core.contracts.models import (
    DENSE,
    LATE,
    RERANKER,
    CrossEncoder,
    DenseEncoder,
    LateEncoder,
    ModelPlugin,
    ModelSettings,
    ModelSource,
)
from vx_eval.core.contracts.registry import Registry
from vx_eval.core.contracts.store import Change, Store, StoreBusy, StoreDenied, StoreFull, StoreNotFound
from vx_eval.core.contracts.writer import QuestionWriter, Unit, WriteOutcome, WriterDescription, WriteRequest
from vx_eval.core.corpus.embeddings import EmbeddingCache, dequantize
from vx_eval.core.corpus.leftovers import owned_by_this_process, sweep
from vx_eval.core.corpus.prepare import (
    Built,
    Chunk,
    IndexOptions,
    building,
    chunk_corpus,
    default_cache,
    dense_matrix,
    prepare,
    sweep_building,
    token_matrices,
)
from vx_eval.core.corpus.text import STOPWORDS, WORD, fts_match, query_terms
from vx_eval.core.errors import (
    ConfigError,
    EngineError,
    GoldenError,
    PluginError,
    StoreError,
    VxEvalError,
    did_you_mean,
    quoted,
    remember_secret,
)
from vx_eval.core.golden.template import hint
from vx_eval.core.hookspecs import hookimpl
from vx_eval.core.models.cache import KeyedCache
from vx_eval.core.models.loading import (
    GPU_BATCH,
    LateModel,
    ModelError,
    Models,
    PairScores,
    RerankerModel,
    maxsim,
    one_blas_thread,
    onnx_providers,
    torch_device,
)
from vx_eval.core.optional import on_first_use
from vx_eval.core.remote import RemotePolicy
from vx_eval.core.run.fusion import convex, fuse, hit_key, rrf
from vx_eval.core.stores import conditional_update, full_error, local_folder, rewrite

__all__ = [
    "DENSE",
    "DENSE_PREFIX",
    "FUSION",
    "GPU_BATCH",
    "GRAPH",
    "HYBRID",
    "KEYWORD",
    "LATE",
    "LATE_PREFIX",
    "PASSAGES",
    "RERANKER",
    "RERANKER_PREFIX",
    "RETRIEVER",
    "SERVICE_RANKER_PREFIX",
    "SPARSE_PREFIX",
    "STOPWORDS",
    "WORD",
    "Billed",
    "Built",
    "Change",
    "Chunk",
    "ConfigError",
    "ConfigPath",
    "Corpus",
    "CrossEncoder",
    "DenseEncoder",
    "Discovered",
    "Document",
    "Embedded",
    "EmbeddingCache",
    "Engine",
    "EngineError",
    "EngineHandle",
    "EngineOptions",
    "Failure",
    "GoldenError",
    "GoldenRow",
    "Hit",
    "IndexOptions",
    "InputType",
    "Judge",
    "KeyedCache",
    "LateEncoder",
    "LateModel",
    "ModelEndpoint",
    "ModelError",
    "ModelPlugin",
    "ModelSettings",
    "ModelSource",
    "Models",
    "OpenContext",
    "PairScores",
    "PassageHandle",
    "PluginError",
    "Progress",
    "Provider",
    "Query",
    "QuestionWriter",
    "Registry",
    "RemotePolicy",
    "Reranked",
    "RerankerModel",
    "SecretRef",
    "ServiceUrl",
    "Setup",
    "SetupProvider",
    "Store",
    "StoreBusy",
    "StoreDenied",
    "StoreError",
    "StoreFull",
    "StoreNotFound",
    "Target",
    "TargetDescription",
    "Unit",
    "Verdict",
    "VxEvalError",
    "WriteOutcome",
    "WriteRequest",
    "WriterDescription",
    "building",
    "capability_models",
    "chunk_corpus",
    "conditional_update",
    "convex",
    "default_cache",
    "dense_matrix",
    "dequantize",
    "did_you_mean",
    "fts_match",
    "full_error",
    "fuse",
    "hint",
    "hit_key",
    "hookimpl",
    "is_uri",
    "local_folder",
    "maxsim",
    "on_first_use",
    "one_blas_thread",
    "onnx_providers",
    "owned_by_this_process",
    "prepare",
    "query_terms",
    "quoted",
    "record_server_time",
    "remember_secret",
    "reuse_allowed",
    "rewrite",
    "rrf",
    "slug",
    "sweep",
    "sweep_building",
    "token_matrices",
    "torch_device",
]
