"""The embedded engine: documents and chunks in one SQLite file; keyword (FTS5 BM25), dense vectors per
model (exact cosine), ColBERT-style token vectors and an entity graph.

What a target offers follows its `mode`, as the seed describes: ``dense`` (the default) offers keyword and
dense search; ``hybrid`` adds fused and reranked setups; ``ultimate`` adds ColBERT-style late interaction;
``graph`` adds the entity graph. The index is built into a temporary file and renamed into place, so a
crash never leaves half an index; its fingerprint (the corpus's sha256, every indexing setting and what the
mode needs) decides whether a declared corpus is reused or indexed again. Embeddings are kept by content
in a cache beside the index, so nothing is embedded twice.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from vx_eval import hookimpl
from vx_eval.plugin import (
    ConfigPath,
    Corpus,
    Discovered,
    Engine,
    EngineError,
    EngineOptions,
    IndexOptions,
    LateModel,
    OpenContext,
    RerankerModel,
    default_cache,
    slug,
    sweep_building,
)
from vx_eval.plugins.engines.sqlite.build import FORMAT, build_index
from vx_eval.plugins.engines.sqlite.handle import SqliteHandle

MODES = ("dense", "hybrid", "ultimate", "graph")


class SqliteOptions(IndexOptions):
    path: ConfigPath | None = None
    """The index file; default ``.vx/<target>.db`` beside the config."""
    collection: str | None = None
    mode: Literal["dense", "hybrid", "ultimate", "graph"] = "dense"
    """dense: keyword + dense; hybrid: + fused and reranked; ultimate: + ColBERT-style; graph: + the entity graph."""
    reranker: RerankerModel | None = "ms-marco-minilm"
    late_model: LateModel | None = "colbert-small"
    tokenizer: str = Field("porter unicode61 remove_diacritics 2", pattern=r"^[a-z0-9_ ]+$")
    stopwords: bool = True
    build: Literal["auto", "always", "never"] = "auto"
    """auto: index when the corpus or a setting changed; always: every run; never: use the index as it is
    (the same word, and values, as every other engine's; ``reindex:`` is read as the older spelling)."""

    @model_validator(mode="before")
    @classmethod
    def _older_spelling(cls, data: Any) -> Any:
        if isinstance(data, dict) and "reindex" in data:
            data = dict(data)
            if "build" in data:
                raise ValueError("give build or its older spelling reindex, not both")
            data["build"] = data.pop("reindex")
        return data

    def level(self) -> int:
        return MODES.index(self.mode)

    def indexing(self) -> dict:
        """Everything the index's contents depend on."""
        return {
            "chunk_words": self.chunk_words,
            "chunk_overlap": self.chunk_overlap,
            "tokenizer": self.tokenizer,
            "dense_models": sorted(self.dense_models),
            "late_model": self.late_model if self.level() >= MODES.index("ultimate") else None,
            "graph": self.mode == "graph",
        }


class SqliteEngine(Engine[SqliteOptions]):
    """SQLite with FTS5 and numpy: keyword, dense, late-interaction and graph search over chunks."""

    name: ClassVar[str] = "sqlite"
    Options: ClassVar[type[EngineOptions]] = SqliteOptions

    def open(self, options: SqliteOptions, context: OpenContext) -> SqliteHandle:
        path = self._path(options, context)
        sweep_building(path)  # a build killed earlier leaves its partial file; a fresh index needs no build
        cache = options.cache or default_cache(context)
        corpus = context.corpus
        if corpus is None or options.build == "never":
            if not path.exists():
                raise EngineError(
                    f"target {context.target_name}: no index at {path} and the config declares no corpus; "
                    "add `corpus: docs.jsonl` to the config or point options.path at an existing index"
                )
            return SqliteHandle(path, options, context.models)
        fingerprint = self._fingerprint(corpus, options)
        if options.build == "auto" and path.exists():
            stored = _read_meta(path).get("fingerprint")
            if stored == fingerprint:
                return SqliteHandle(path, options, context.models)
            if stored is not None:
                context.progress.note(
                    f"{context.target_name}: the corpus or an indexing setting changed since {path.name} was "
                    "built; indexing again"
                )
        build_index(path, cache, corpus, options, fingerprint, context)
        return SqliteHandle(path, options, context.models)

    def embeds(self, options: SqliteOptions, context: OpenContext) -> dict[str, str]:
        """What `open` would embed: nothing where the index at the path is up to date or is never built."""
        path = self._path(options, context)
        corpus = context.corpus
        if corpus is None or options.build == "never":
            return {}
        if (
            options.build == "auto"
            and path.exists()
            and _read_meta(path).get("fingerprint") == self._fingerprint(corpus, options)
        ):
            return {}
        settings = options.indexing()
        wanted = dict.fromkeys(settings["dense_models"], "dense")
        if settings["late_model"]:
            wanted[settings["late_model"]] = "late"
        return wanted

    def discover(self, where: str) -> Discovered:
        """An index this engine built, searched as it is (``build: never``) with every method its contents
        allow: the dense models it embedded, ColBERT-style where it kept late vectors, the graph where it
        built one; fused and reranked setups need nothing more."""
        path = Path(where).expanduser()
        meta = _read_meta(path) if path.is_file() else {}
        if "settings" not in meta:
            raise EngineError(f"--target sqlite:{where}: no index built by vx-eval's sqlite engine there")
        settings = json.loads(meta["settings"])
        mode = "graph" if settings.get("graph") else "ultimate" if settings.get("late_model") else "hybrid"
        options = SqliteOptions(
            path=path,
            mode=mode,
            dense_models=settings.get("dense_models") or [],
            late_model=settings.get("late_model") or "colbert-small",
            tokenizer=settings.get("tokenizer") or SqliteOptions.model_fields["tokenizer"].default,
            chunk_words=settings.get("chunk_words", 300),
            chunk_overlap=settings.get("chunk_overlap", 50),
            build="never",
        )
        found = (
            f"{meta.get('documents', '?')} documents in {meta.get('chunks', '?')} chunks, indexed "
            f"{meta.get('indexed_at', 'at an unknown time')} from {meta.get('corpus_source') or 'a corpus'}",
            "dense models: " + (", ".join(options.dense_models) or "none"),
            f"late-interaction vectors: {settings.get('late_model') or 'none'}; entity graph: "
            + ("yes" if settings.get("graph") else "no"),
        )
        return Discovered(options, path.stem, found)

    @staticmethod
    def _path(options: SqliteOptions, context: OpenContext) -> Path:
        return options.path or context.config_dir / ".vx" / f"{slug(context.target_name)}.db"

    @staticmethod
    def _fingerprint(corpus: Corpus, options: SqliteOptions) -> str:
        blob = json.dumps({"format": FORMAT, "corpus": corpus.fingerprint, **options.indexing()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


def _read_meta(path: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return dict(db.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError:
        return {}


@hookimpl
def vx_eval_register_engines(register):
    register.add(SqliteEngine)
