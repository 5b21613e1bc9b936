"""LanceDB, embedded (a folder of Lance tables), as teams prototype RAG on it.

Built from the config's corpus with the same chunks and the same cached vectors as every other engine
(`prepare`): one row per chunk, a vector column per dense model (``vector_<model>``), and LanceDB's own
full-text index (BM25) over the chunk's text. What it offers is what LanceDB does:

- ``keyword``: LanceDB's full-text search (its native inverted index, BM25; stemmed, stop words removed);
- ``dense:<model>``: vector search by cosine distance, exact (flat) unless ``vector_index`` builds an
  IVF-HNSW index;
- ``fusion``: LanceDB's own hybrid search (full text + one vector column) fused by its RRF reranker, or by its
  linear-combination reranker under ``search.fusion: convex``; several vector columns are fused here;
- the cross-encoder setups over its passages, where a ``reranker`` is configured.

A fingerprint of the corpus and every indexing setting is written beside the table last: a table without
it (a build that crashed) or with another one is built again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    Built,
    ConfigPath,
    Discovered,
    Document,
    Engine,
    EngineError,
    EngineOptions,
    Hit,
    OpenContext,
    Query,
    fuse,
    on_first_use,
    owned_by_this_process,
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

_lance_index = on_first_use("lancedb.index", "lancedb")
_lance_rerankers = on_first_use("lancedb.rerankers", "lancedb")
_pyarrow = on_first_use("pyarrow")

if TYPE_CHECKING:
    import pyarrow as pa

FORMAT = 1
COLUMNS = ["doc_id", "chunk_id", "page"]
UPSERT_BATCH = 1000


class LanceOptions(CorpusOptions):
    path: ConfigPath | None = None
    """The database folder; default ``.vx/<target>.lance`` beside the config."""
    collection: str | None = None
    """The table; default: the target's name as a slug."""
    mode: Literal["dense", "hybrid"] = "hybrid"
    """dense: keyword + dense; hybrid: + LanceDB's fused hybrid and the reranked setups."""
    vector_index: bool = False
    """Build an IVF-HNSW index per vector column (approximate); default: exact (flat) search."""

    def indexing(self) -> dict[str, Any]:
        return {**super().indexing(), "vector_index": self.vector_index}


def _lancedb() -> Any:
    os.environ.setdefault("LANCEDB_LOG", "error")  # its Rust log writes warnings about future defaults to stderr
    return need("lancedb", "lancedb")


def _column(model: str) -> str:
    return "vector_" + slug(model).replace("-", "_")


def _quoted(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


class LanceEngine(Engine[LanceOptions]):
    """LanceDB embedded: full-text (BM25), vectors, and its own RRF hybrid."""

    name: ClassVar[str] = "lancedb"
    Options: ClassVar[type[EngineOptions]] = LanceOptions

    def open(self, options: LanceOptions, context: OpenContext) -> LanceHandle:
        folder = options.path or context.config_dir / ".vx" / f"{slug(context.target_name)}.lance"
        table = options.collection or slug(context.target_name)
        db = _lancedb().connect(str(folder))
        meta = folder / f"{table}.vx.json"
        stored = _read_meta(meta)

        def build(built: Built, wanted: str) -> None:
            nonlocal stored
            meta.unlink(missing_ok=True)
            _build(db, table, options, built)
            stored = {"fingerprint": wanted, "format": FORMAT, "settings": options.indexing()}
            _write_meta(meta, stored)

        ensure_built(
            options,
            context,
            engine_format=FORMAT,
            stored=lambda: stored.get("fingerprint") or None,
            build=build,
            exists=lambda: table in _tables(db),
            absent=f"LanceDB at {folder} has no table '{table}'",
        )
        return LanceHandle(db.open_table(table), table, options, context.models, str(folder), stored)

    def discover(self, where: str) -> Discovered:
        """``FOLDER/TABLE``: a table of the shape this engine builds, searched as it is."""
        base, _, table = where.rstrip("/").rpartition("/")
        folder = Path(base or ".").expanduser().resolve()
        db = _lancedb().connect(str(folder))
        if table not in _tables(db):
            raise EngineError(f"--target lancedb:{where}: {folder} has no table '{table}'")
        schema = db.open_table(table).schema
        vectors = [f.name for f in schema if f.name.startswith("vector_")]
        stored = _read_meta(folder / f"{table}.vx.json")
        models = list(stored.get("settings", {}).get("dense_models") or [v.removeprefix("vector_") for v in vectors])
        options = LanceOptions(path=folder, collection=table, build="never", dense_models=models)
        return Discovered(options, table, (f"vector columns: {', '.join(vectors) or 'none'}",))


def _tables(db: Any) -> list[str]:
    listed = db.list_tables()
    return list(getattr(listed, "tables", listed))


def _write_meta(path: Path, data: dict[str, Any]) -> None:
    """The fingerprint beside the table, renamed into place whole (never half-written)."""
    tmp = owned_by_this_process(path, "tmp")
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _build(db: Any, table: str, options: LanceOptions, built: Built) -> None:
    """The table written again from the chunks, in batches, with its full-text index (and vector indexes)."""

    def rows(start: int) -> pa.Table:
        batch = built.chunks[start : start + UPSERT_BATCH]
        columns: dict[str, Any] = {
            "chunk_id": [c.chunk_id for c in batch],
            "doc_id": [c.doc_id for c in batch],
            "page": _pyarrow.array([c.page for c in batch], _pyarrow.int32()),
            "body": [c.body for c in batch],
            "first": [is_first_chunk(c) for c in batch],
        }
        for key in ("title", "text"):
            columns[key] = [built.documents[c.doc_id][key] if is_first_chunk(c) else None for c in batch]
        columns["metadata"] = [
            json.dumps(built.documents[c.doc_id]["metadata"]) if is_first_chunk(c) else None for c in batch
        ]
        for model in options.dense_models:
            matrix = built.dense[model][start : start + UPSERT_BATCH]
            flat = _pyarrow.array(matrix.reshape(-1), _pyarrow.float32())
            columns[_column(model)] = _pyarrow.FixedSizeListArray.from_arrays(flat, matrix.shape[1])
        return _pyarrow.table(columns)

    advance = built.context.progress.start(f"Writing {built.context.target_name} · {table}", len(built.chunks))
    handle = db.create_table(table, data=rows(0), mode="overwrite")
    advance(min(UPSERT_BATCH, len(built.chunks)))
    for start in range(UPSERT_BATCH, len(built.chunks), UPSERT_BATCH):
        handle.add(rows(start))
        advance(min(UPSERT_BATCH, len(built.chunks) - start))
    handle.create_index("body", config=_lance_index.FTS(), replace=True)
    if options.vector_index and len(built.chunks) >= 256:
        for model in options.dense_models:
            handle.create_index(metric="cosine", vector_column_name=_column(model), index_type="IVF_HNSW_SQ")


class LanceHandle(RemoteHandle[LanceOptions]):
    """An opened LanceDB table."""

    def __init__(
        self, table: Any, name: str, options: LanceOptions, models: Any, where: str, meta: dict[str, Any]
    ) -> None:
        self.table, self.name, self.options, self.models = table, name, options, models
        self.where, self.meta = where, meta
        fields = {f.name for f in table.schema}
        self.dense = {m: _column(m) for m in options.dense_models if _column(m) in fields}
        self.rows = table.count_rows()
        self.keyword_ranking = "BM25: LanceDB's full-text index"

    def held(self) -> int:
        return int(self.rows)

    def dense_models(self) -> list[str]:
        return list(self.dense)

    def own_capabilities(self) -> set[str]:
        return {KEYWORD, FUSION} if self.options.level() >= 1 else {KEYWORD}

    def describe(self) -> dict[str, Any]:

        return {
            "collection": self.name,
            "documents": len(self.document_ids()),
            "chunks": self.rows,
            "models": sorted(self.dense),
            "version": f"LanceDB {version('lancedb')} (embedded)",
            "location": self.where,
            "fingerprint": self.meta.get("fingerprint"),
            "mode": self.options.mode,
            "settings": self.meta.get("settings") or {},
            "search": "exact (flat)" if not self.options.vector_index else "IVF-HNSW (approximate)",
        }

    # ------------------------------------------------------------------------------------------ search

    def _vector(self, model: str, text: str) -> list[float]:
        if model not in self.dense:
            raise EngineError(self._unknown(DENSE_PREFIX + model))
        return [float(x) for x in self.models.get(model, DENSE).encode_queries([text])[0]]

    def _unknown(self, capability: str) -> str:
        return f"the LanceDB target has no capability '{capability}' (it has: {', '.join(sorted(self.capabilities()))})"

    @staticmethod
    def _hits(rows: list[dict[str, Any]], score: Any) -> list[Hit]:
        hits = [Hit(str(r["doc_id"]), float(score(r)), r.get("page"), r["chunk_id"]) for r in rows]
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id or ""))  # ties in chunk order, run after run

    def _keyword(self, text: str, k: int) -> list[Hit]:
        if not text.strip():
            return []
        request = self.table.search(text, query_type="fts", fts_columns="body")
        found = request.select([*COLUMNS, "_score"]).limit(k).to_list()
        return self._hits(found, lambda r: r["_score"])

    def _dense(self, model: str, text: str, k: int) -> list[Hit]:
        request = self.table.search(self._vector(model, text), vector_column_name=self.dense[model])
        found = request.distance_type("cosine").select([*COLUMNS, "_distance"]).limit(k).to_list()
        return self._hits(found, lambda r: 1.0 - r["_distance"])

    def _hybrid(self, model: str, query: Query) -> list[Hit]:

        if not query.text.strip():
            return self._dense(model, query.text, query.k)
        if query.fusion == "rrf":
            reranker: Any = _lance_rerankers.RRFReranker(K=query.rrf_k)
        else:
            dense_share = query.weights[1] / sum(query.weights) if query.weights and sum(query.weights) else 0.5
            reranker = _lance_rerankers.LinearCombinationReranker(weight=dense_share)
        request = self.table.search(query_type="hybrid", vector_column_name=self.dense[model], fts_columns="body")
        request = request.vector(self._vector(model, query.text)).text(query.text).distance_type("cosine")
        found = request.rerank(reranker).select(COLUMNS).limit(query.k).to_list()
        return self._hits(found, lambda r: r["_relevance_score"])

    def search(self, query: Query) -> list[Hit]:
        capability, text, k = query.capability, query.text, query.k
        if capability == KEYWORD:
            return self._keyword(text, k)
        if capability.startswith(DENSE_PREFIX):
            return self._dense(capability.removeprefix(DENSE_PREFIX), text, k)
        if capability == FUSION and FUSION in self.capabilities():
            parts = list(query.parts)
            if not parts:
                raise EngineError("a fusion query names no parts to fuse")
            dense = [p.removeprefix(DENSE_PREFIX) for p in parts if p.startswith(DENSE_PREFIX)]
            if dense and parts == [KEYWORD, DENSE_PREFIX + dense[0]]:
                return self._hybrid(dense[0], query)
            lists = [self.search(Query(text, k, part)) for part in parts]  # several vector columns: fused here
            return fuse(lists, k, query, list(query.weights) or None)
        raise EngineError(self._unknown(capability))

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        ids = [h.chunk_id or "" for h in hits]
        if not ids:
            return []
        rows = self.table.search().where(f"chunk_id IN ({_quoted(set(ids))})").select(["chunk_id", "body"])
        body = {r["chunk_id"]: r["body"] for r in rows.limit(len(ids)).to_list()}
        return [body.get(i, "") for i in ids]

    # ------------------------------------------------------------------------------------------ documents

    def _read_document_ids(self) -> list[str]:
        rows = self.table.search().select(["doc_id"]).limit(max(self.rows, 1)).to_arrow()
        return sorted(set(rows.column("doc_id").to_pylist()))

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        wanted = list(doc_ids)
        if not wanted:
            return []
        request = self.table.search().where(f"first AND doc_id IN ({_quoted(set(wanted))})")
        rows = request.select(["doc_id", "title", "text", "metadata"]).limit(len(wanted)).to_list()
        return stored_documents(wanted, {str(r["doc_id"]): r for r in rows})

    def close(self) -> None:
        return None


@hookimpl
def vx_eval_register_engines(register):
    register.add(LanceEngine)
