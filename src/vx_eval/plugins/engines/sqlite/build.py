"""Building the embedded engine's index: chunks and FTS5, dense matrices, token vectors, the entity graph."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from vx_eval.plugin import (
    Corpus,
    EmbeddingCache,
    EngineError,
    OpenContext,
    building,
    chunk_corpus,
    dense_matrix,
    token_matrices,
)
from vx_eval.plugins.engines.sqlite import graph

FORMAT = 3

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id TEXT PRIMARY KEY, title TEXT NOT NULL, text TEXT NOT NULL, pages INTEGER NOT NULL, metadata TEXT NOT NULL
);
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL REFERENCES documents(id),
    page INTEGER, ord INTEGER NOT NULL, body TEXT NOT NULL
);
CREATE INDEX chunks_doc ON chunks(doc_id);
CREATE TABLE dense (model TEXT PRIMARY KEY, dim INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE late (chunk INTEGER PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE entities (name TEXT PRIMARY KEY, df INTEGER NOT NULL);
CREATE TABLE chunk_entities (chunk INTEGER NOT NULL, entity TEXT NOT NULL);
"""


def build_index(
    path: Path, cache_path: Path, corpus: Corpus, options: Any, fingerprint: str, context: OpenContext
) -> None:
    """Index `corpus` into a temporary file beside `path`, then rename it into place."""
    settings = options.indexing()
    cache = EmbeddingCache(cache_path) if settings["dense_models"] or settings["late_model"] else None
    try:
        with building(path) as db:
            db.executescript(SCHEMA)
            try:
                db.execute(
                    f"CREATE VIRTUAL TABLE chunks_fts USING fts5(body, content='', tokenize='{options.tokenizer}')"
                )
            except sqlite3.OperationalError as exc:
                raise EngineError(f"tokenizer '{options.tokenizer}' is not one FTS5 knows: {exc}") from None
            documents, bodies = _chunks(db, corpus, options, context)
            db.execute("INSERT INTO chunks_fts (rowid, body) SELECT id, body FROM chunks")
            models_meta = {}
            for name in settings["dense_models"]:
                models_meta[name] = _dense(db, cache, name, bodies, context)
            if settings["late_model"]:
                _late(db, cache, settings["late_model"], bodies, context)
            if settings["graph"]:
                advance = context.progress.start(f"Graph {context.target_name} · entities", len(bodies))
                df, edges = graph.build(((row + 1, body) for row, body in enumerate(bodies)), advance)
                db.executemany("INSERT INTO entities VALUES (?, ?)", df.items())
                db.executemany("INSERT INTO chunk_entities VALUES (?, ?)", edges)
            meta = {
                "format": str(FORMAT),
                "fingerprint": fingerprint,
                "corpus_sha256": corpus.fingerprint,
                "corpus_source": corpus.source,
                "documents": str(documents),
                "chunks": str(len(bodies)),
                "indexed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "settings": json.dumps(settings),
                "models": json.dumps(models_meta),
            }
            db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
    finally:
        if cache is not None:
            cache.close()


def _chunks(db: sqlite3.Connection, corpus: Corpus, options: Any, context: OpenContext) -> tuple[int, list[str]]:
    documents, bodies = 0, []
    for doc, chunks in chunk_corpus(corpus, options.chunk_words, options.chunk_overlap, context):
        db.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?)",
            (doc.id, doc.title, doc.text, len(doc.pages), json.dumps(doc.metadata, ensure_ascii=False)),
        )
        db.executemany(
            "INSERT INTO chunks (chunk_id, doc_id, page, ord, body) VALUES (?, ?, ?, ?, ?)",
            [(c.chunk_id, c.doc_id, c.page, c.ord, c.body) for c in chunks],
        )
        bodies += [c.body for c in chunks]
        documents += 1
    return documents, bodies


def _dense(db, cache, name, bodies, context) -> dict[str, Any]:
    matrix = dense_matrix(cache, name, bodies, context)
    db.execute("INSERT INTO dense VALUES (?, ?, ?)", (name, matrix.shape[1], matrix.tobytes()))
    return {"dim": matrix.shape[1], "label": context.models.label(name)}


def _late(db, cache, name, bodies, context) -> None:
    """Token matrices into the index, a slice at a time."""
    row = 1
    for blobs in token_matrices(cache, name, bodies, context):
        db.executemany("INSERT INTO late VALUES (?, ?)", ((row + i, blob) for i, blob in enumerate(blobs)))
        row += len(blobs)
