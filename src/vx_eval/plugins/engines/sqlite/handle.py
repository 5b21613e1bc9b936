"""An opened embedded index: keyword, dense, late-interaction and graph search over its chunks."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vx_eval.plugin import (
    DENSE,
    DENSE_PREFIX,
    GRAPH,
    HYBRID,
    KEYWORD,
    LATE,
    LATE_PREFIX,
    PASSAGES,
    RERANKER_PREFIX,
    Document,
    EngineError,
    Hit,
    Query,
    dequantize,
    maxsim,
    one_blas_thread,
)
from vx_eval.plugins.engines.sqlite.build import FORMAT
from vx_eval.plugins.engines.sqlite.graph import EntityGraph
from vx_eval.plugins.engines.words import fts_search


class SqliteHandle:
    """An opened SQLite index. Dense matrices are held in memory; token vectors are read per question."""

    def __init__(self, path: Path, options: Any, models: Any) -> None:

        self.path = path
        self.options = options
        self.models = models
        try:
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self.meta = dict(self.db.execute("SELECT key, value FROM meta"))
        except sqlite3.DatabaseError as exc:
            raise EngineError(f"{path} is not a vx-eval SQLite index ({exc}); delete it or name another path") from None
        if self.meta.get("format") != str(FORMAT):
            raise EngineError(
                f"{path} was built by another version of vx-eval (index format {self.meta.get('format')}, "
                f"this one reads {FORMAT}); declare its corpus in the config so it is indexed again"
            )
        self.settings = json.loads(self.meta.get("settings", "{}"))
        self._documents = int(self.meta.get("documents", 0))
        rows = self.db.execute("SELECT id, chunk_id, doc_id, page FROM chunks ORDER BY id").fetchall()
        self.chunk_ids = [r[1] for r in rows]
        self.chunk_docs = [r[2] for r in rows]
        self.chunk_pages = [r[3] for r in rows]
        self.row_of = {r[1]: r[0] for r in rows}
        self.dense = {
            name: np.frombuffer(data, dtype=np.float32).reshape(len(rows), dim)
            for name, dim, data in self.db.execute("SELECT model, dim, data FROM dense")
        }
        self._graph: EntityGraph | None = None

    # ------------------------------------------------------------------------------------------ describe

    def capabilities(self) -> frozenset[str]:
        if not self._documents:
            return frozenset()
        caps = {KEYWORD, PASSAGES} | {DENSE_PREFIX + m for m in self.dense}
        level = self.options.level()  # the mode's place in dense < hybrid < ultimate < graph
        if level >= 1:
            caps.add(HYBRID)
            if self.options.reranker:
                caps.add(RERANKER_PREFIX + self.options.reranker)
        if level >= 2 and self.settings.get("late_model"):
            caps.add(LATE_PREFIX + self.settings["late_model"])
        if self.settings.get("graph"):
            caps.add(GRAPH)
        return frozenset(caps)

    def describe(self) -> dict[str, Any]:
        models = json.loads(self.meta.get("models", "{}"))
        return {
            "collection": self.options.collection or self.path.stem,
            "documents": self._documents,
            "chunks": len(self.chunk_ids),
            "models": sorted(models) + [m for m in (self.settings.get("late_model"),) if m],
            "version": f"SQLite {sqlite3.sqlite_version} FTS5",
            "indexed_at": self.meta.get("indexed_at"),
            "corpus_sha256": self.meta.get("corpus_sha256"),
            "settings": self.settings,
            "mode": self.options.mode,
        }

    # ------------------------------------------------------------------------------------------ search

    def _hit(self, row: int, score: float) -> Hit:
        i = row - 1
        return Hit(self.chunk_docs[i], score, self.chunk_pages[i], self.chunk_ids[i])

    def search(self, query: Query) -> list[Hit]:
        capability = query.capability
        if capability == KEYWORD:
            return self._keyword(query.text, query.k)
        if capability.startswith(DENSE_PREFIX) and capability.removeprefix(DENSE_PREFIX) in self.dense:
            return self._dense(capability.removeprefix(DENSE_PREFIX), query.text, query.k)
        if capability.startswith(LATE_PREFIX) and capability in self.capabilities():
            return self._late(capability.removeprefix(LATE_PREFIX), query.text, query.candidates, query.k)
        if capability == GRAPH and self.settings.get("graph"):
            return self._graph_search(query.text, query.k)
        raise EngineError(
            f"the sqlite target has no capability '{capability}' (it has: {', '.join(sorted(self.capabilities()))})"
        )

    def _keyword(self, text: str, k: int) -> list[Hit]:
        return [self._hit(row, score) for row, score in fts_search(self.db, text, k, stopwords=self.options.stopwords)]

    def _dense(self, model: str, text: str, k: int) -> list[Hit]:
        vector = self.models.get(model, DENSE).encode_queries([text])[0]
        with one_blas_thread():  # the model's threads may still spin: two BLAS threads would fight them
            scores = self.dense[model] @ vector
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.lexsort((top, -scores[top]))]
        return [self._hit(int(i) + 1, float(scores[i])) for i in top]

    def _late(self, model: str, text: str, candidates: Sequence[Hit], k: int) -> list[Hit]:
        rows = [self.row_of[h.chunk_id] for h in candidates if h.chunk_id in self.row_of]
        if not rows:
            return []
        query = self.models.get(model, LATE).encode_query(text)
        marks = ",".join("?" * len(rows))
        blobs = dict(self.db.execute(f"SELECT chunk, data FROM late WHERE chunk IN ({marks})", rows))
        dim = query.shape[1]
        scores = maxsim(query, [dequantize(blobs[r], dim) for r in rows])
        order = sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i]))[:k]
        return [self._hit(rows[i], float(scores[i])) for i in order]

    def _graph_search(self, text: str, k: int) -> list[Hit]:
        if self._graph is None:
            df = dict(self.db.execute("SELECT name, df FROM entities"))
            edges = self.db.execute("SELECT chunk, entity FROM chunk_entities").fetchall()
            self._graph = EntityGraph(df, edges, len(self.chunk_ids))
        return [self._hit(row, score) for row, score in self._graph.search(text, k)]

    def passages(self, hits: Sequence[Hit]) -> list[str]:
        """The text of each hit's chunk (its title first), for cross-encoders."""
        rows = [self.row_of.get(h.chunk_id or "", 0) for h in hits]
        marks = ",".join("?" * len(rows))
        bodies = dict(self.db.execute(f"SELECT id, body FROM chunks WHERE id IN ({marks})", rows)) if rows else {}
        return [bodies.get(r, "") for r in rows]

    # ------------------------------------------------------------------------------------------ documents

    def missing(self, doc_ids: Iterable[str]) -> set[str]:
        wanted = set(doc_ids)
        found: set[str] = set()
        ids = sorted(wanted)
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.update(r[0] for r in self.db.execute(f"SELECT id FROM documents WHERE id IN ({marks})", batch))
        return wanted - found

    def document_ids(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM documents ORDER BY id")]

    def documents(self, doc_ids: Iterable[str]) -> list[Document]:
        out = []
        for doc_id in doc_ids:
            row = self.db.execute("SELECT title, text, metadata FROM documents WHERE id = ?", (doc_id,)).fetchone()
            if row:
                out.append(Document(id=doc_id, title=row[0], text=row[1], metadata=json.loads(row[2])))
        return out

    def close(self) -> None:
        self.db.close()
