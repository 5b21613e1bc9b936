"""Qdrant's own engine in process (`qdrant-edge-py`): the Rust segment engine (HNSW, sparse vectors with
IDF, MaxSim multivectors, prefetch + fusion) behind the few qdrant-client calls the `qdrant` plugin makes.

`EdgeClient` answers those calls (``collection_exists``, ``create_collection``, ``upsert``,
``query_points``, ``retrieve``, ``scroll``, …) with an `EdgeShard` per collection, in a folder of its own
under the target's ``path`` (a temporary folder for ``location: ":memory:"``), so the plugin's building and
searching code is the same for a server, qdrant-client's local mode and this engine. What a shard has no
place for (the collection's metadata: the fingerprint; the vector layout, to describe it) is kept in
``<collection>.json`` beside it, written last.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from vx_eval.plugin import EngineError

HNSW_M, EF_CONSTRUCT = 16, 100
QDRANT_RRF_K = 2
"""The constant Qdrant's RRF uses when a query names none (its server's and qdrant-client's default)."""
FULL_SCAN_BELOW = 1
"""Points (in KB of vectors) under which a segment is scanned rather than searched through its graph: 1, so
HNSW serves every collection that is not exact."""


def _edge() -> Any:
    try:
        # lazy: an optional dependency (vx-eval[qdrant]), loaded only where it is used
        import qdrant_edge
    except ImportError:
        raise EngineError("Qdrant's embedded engine needs qdrant-edge-py: pip install 'vx-eval[qdrant]'") from None
    return qdrant_edge


class EdgeClient:
    """The qdrant-client calls the `qdrant` plugin makes, answered by Qdrant's engine in process."""

    def __init__(self, path: Path | None) -> None:
        self.temporary = path is None
        self.root = Path(tempfile.mkdtemp(prefix="vx-eval-qdrant-")) if path is None else Path(path)
        self.root.mkdir(parents=True, exist_ok=True)
        self.shards: dict[str, Any] = {}
        self.lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ collections

    def _meta_path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def _meta(self, name: str) -> dict[str, Any]:
        return json.loads(self._meta_path(name).read_text(encoding="utf-8"))

    def _write_meta(self, name: str, meta: dict[str, Any]) -> None:
        partial = self._meta_path(name).with_suffix(".json.partial")
        partial.write_text(json.dumps(meta), encoding="utf-8")
        partial.replace(self._meta_path(name))

    def _shard(self, name: str) -> Any:
        with self.lock:
            if name not in self.shards:
                self.shards[name] = _edge().EdgeShard.load(str(self.root / name))
            return self.shards[name]

    def collection_exists(self, name: str) -> bool:
        return self._meta_path(name).is_file() and (self.root / name).is_dir()

    def delete_collection(self, name: str) -> None:
        with self.lock:
            shard = self.shards.pop(name, None)
            if shard is not None:
                shard.close()
        self._meta_path(name).unlink(missing_ok=True)
        shutil.rmtree(self.root / name, ignore_errors=True)

    def create_collection(
        self, name: str, vectors_config: dict[str, Any], sparse_vectors_config: dict[str, Any] | None, metadata: Any
    ) -> None:
        q = _edge()
        dense, layout = {}, {}
        for vector, params in vectors_config.items():
            multi = params.multivector_config is not None
            graph = q.HnswIndexConfig(
                m=0 if multi else HNSW_M, ef_construct=EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_BELOW
            )
            dense[vector] = q.EdgeVectorParams(
                size=params.size,
                distance=q.Distance.Cosine,
                multivector_config=q.MultiVectorConfig(q.MultiVectorComparator.MaxSim) if multi else None,
                hnsw_config=graph,
            )
            layout[vector] = {"size": params.size, "multivector": multi}
        sparse = {n: q.EdgeSparseVectorParams(modifier=q.Modifier.Idf) for n in sparse_vectors_config or {}}
        config = q.EdgeConfig(
            vectors=dense,
            sparse_vectors=sparse or None,
            hnsw_config=q.HnswIndexConfig(m=HNSW_M, ef_construct=EF_CONSTRUCT, full_scan_threshold=FULL_SCAN_BELOW),
        )
        shard = q.EdgeShard.create(str(self.root / name), config)
        with self.lock:
            self.shards[name] = shard
        self._write_meta(name, {"vectors": layout, "sparse": sorted(sparse), "metadata": metadata or {}})

    def create_payload_index(self, name: str, **_: Any) -> None:
        return None  # filters here scan the payload; the collections are small enough

    def update_collection(self, name: str, metadata: dict[str, Any]) -> None:
        shard = self._shard(name)
        shard.optimize()  # the HNSW graphs built before the fingerprint says the collection is ready
        shard.flush()
        self._write_meta(name, {**self._meta(name), "metadata": metadata})

    def get_collection(self, name: str) -> Any:
        meta = self._meta(name)
        vectors = {
            n: SimpleNamespace(size=v["size"], multivector_config=True if v["multivector"] else None)
            for n, v in meta["vectors"].items()
        }
        params = SimpleNamespace(vectors=vectors, sparse_vectors={n: SimpleNamespace() for n in meta["sparse"]})
        points = self._shard(name).info().points_count
        return SimpleNamespace(points_count=points, config=SimpleNamespace(params=params, metadata=meta["metadata"]))

    # ------------------------------------------------------------------------------------------ points

    def upsert(self, name: str, points: list[Any], wait: bool = True) -> None:
        q = _edge()
        made = [q.Point(id=p.id, vector=_vectors(p.vector), payload=p.payload) for p in points]
        self._shard(name).update(q.UpdateOperation.upsert_points(made))

    def query_points(
        self,
        name: str,
        *,
        limit: int,
        query: Any = None,
        using: str | None = None,
        prefetch: list[Any] | None = None,
        query_filter: Any = None,
        with_payload: Any = True,
        search_params: Any = None,
    ) -> Any:
        q = _edge()
        params = q.SearchParams(exact=True) if search_params is not None and search_params.exact else None
        request = q.QueryRequest(
            limit=limit,
            query=_scoring(query, using),
            prefetches=[q.Prefetch(limit=p.limit, query=_scoring(p.query, p.using), params=params) for p in prefetch]
            if prefetch
            else None,
            filter=_filter(query_filter),
            with_payload=with_payload,
            params=params,
        )
        found = self._shard(name).query(request)
        return SimpleNamespace(points=[SimpleNamespace(id=p.id, score=p.score, payload=p.payload) for p in found])

    def retrieve(self, name: str, ids: list[str], with_payload: Any = True) -> list[Any]:
        return list(self._shard(name).retrieve(ids, with_payload, False))

    def scroll(
        self,
        name: str,
        limit: int,
        offset: Any = None,
        with_payload: Any = True,
        with_vectors: bool = False,
        scroll_filter: Any = None,
    ) -> tuple[list[Any], Any]:
        q = _edge()
        edge_filter, checks = _split(scroll_filter)
        if not checks:
            request = q.ScrollRequest(offset=offset, limit=limit, filter=edge_filter, with_payload=with_payload)
            return self._shard(name).scroll(request)
        kept: list[Any] = []  # a condition on a boolean is checked here (see `_split`), page by page
        while len(kept) < limit:
            request = q.ScrollRequest(offset=offset, limit=1000, filter=edge_filter, with_payload=True)
            records, offset = self._shard(name).scroll(request)
            kept += [r for r in records if all((r.payload or {}).get(k) == v for k, v in checks)]
            if offset is None:
                break
        return kept[:limit], offset

    def close(self) -> None:
        with self.lock:
            for shard in self.shards.values():
                shard.close()
            self.shards.clear()
        if self.temporary:
            shutil.rmtree(self.root, ignore_errors=True)


def _vectors(vector: dict[str, Any]) -> dict[str, Any]:
    q = _edge()
    return {
        n: q.SparseVector(indices=list(v.indices), values=list(v.values)) if hasattr(v, "indices") else v
        for n, v in vector.items()
    }


def _scoring(query: Any, using: str | None) -> Any:
    """qdrant-client's query (a vector, a sparse vector, token vectors or an RRF fusion) as the engine's."""
    q = _edge()
    if query is None:
        return None
    if hasattr(query, "fusion"):  # models.FusionQuery: RRF with Qdrant's own constant
        return q.Fusion.Rrf(k=QDRANT_RRF_K)
    if hasattr(query, "indices"):
        query = q.SparseVector(indices=list(query.indices), values=list(query.values))
    return q.Query.Nearest(query, using=using)


def _filter(given: Any) -> Any:
    edge_filter, checks = _split(given)
    if checks:
        raise EngineError("a search filter on a true/false field cannot run in Qdrant's embedded engine")
    return edge_filter


def _split(given: Any) -> tuple[Any, list[tuple[str, bool]]]:
    """qdrant-client's filters the plugin uses (ids, a field matching any of values or one value) as the
    engine's, and the conditions on booleans apart: qdrant-edge-py 0.9 reads True as the number 1 and so
    matches no boolean (checked on the records instead)."""
    if given is None:
        return None, []
    q = _edge()
    conditions, checks = [], []
    for c in given.must or []:
        if hasattr(c, "has_id"):
            conditions.append(q.HasIdCondition(point_ids=set(c.has_id)))
        elif hasattr(c.match, "any"):
            conditions.append(q.FieldCondition(key=c.key, match=q.MatchAny(any=list(c.match.any))))
        elif isinstance(c.match.value, bool):
            checks.append((c.key, c.match.value))
        else:
            conditions.append(q.FieldCondition(key=c.key, match=q.MatchValue(value=c.match.value)))
    return (q.Filter(must=conditions) if conditions else None), checks
