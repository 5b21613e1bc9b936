"""Building the embedded engine's index: chunks and FTS5, dense matrices, token vectors, the entity graph."""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np

from vx_eval.core.engine import Corpus, OpenContext
from vx_eval.core.errors import EngineError
from vx_eval.core.models import DENSE, LATE
from vx_eval.plugins.engines.sqlite import graph
from vx_eval.plugins.engines.sqlite.cache import EmbeddingCache, content_key, quantize
from vx_eval.plugins.engines.text import chunk_words

FORMAT = 3
EMBED_SLICE = 256  # texts handed to a model at a time (the progress bar moves per slice)

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
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.building")
    tmp.unlink(missing_ok=True)
    settings = options.indexing()
    cache = EmbeddingCache(cache_path) if settings["dense_models"] or settings["late_model"] else None
    try:
        db = sqlite3.connect(tmp)
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        try:
            db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(body, content='', tokenize='{options.tokenizer}')")
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
            df, edges = graph.build((row + 1, body) for row, body in enumerate(bodies))
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
        db.commit()
        db.close()
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    finally:
        if cache is not None:
            cache.close()


def _chunks(db: sqlite3.Connection, corpus: Corpus, options: Any, context: OpenContext) -> tuple[int, list[str]]:
    advance = context.progress.start(f"Indexing {context.target_name}", len(corpus))
    documents, bodies = 0, []
    for doc in corpus:
        pages = doc.pages or (doc.text,)
        db.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?)",
            (doc.id, doc.title, doc.text, len(doc.pages), json.dumps(doc.metadata, ensure_ascii=False)),
        )
        rows = []
        for page_no, page in enumerate(pages, start=1):
            for ord_, piece in enumerate(chunk_words(page, options.chunk_words, options.chunk_overlap)):
                page_id = page_no if doc.pages else None
                body = f"{doc.title}\n{piece}" if doc.title else piece
                rows.append((f"{doc.id}::{page_id or 0}::{ord_}", doc.id, page_id, ord_, body))
        db.executemany("INSERT INTO chunks (chunk_id, doc_id, page, ord, body) VALUES (?, ?, ?, ?, ?)", rows)
        bodies += [r[4] for r in rows]
        documents += 1
        advance(1)
    return documents, bodies


def _embed_missing(cache, table, name, bodies, context, encode, serialise, label) -> list[str]:
    """Encode the bodies the cache lacks (each distinct text once) into the cache; every body's cache key."""
    keys = [content_key(b) for b in bodies]
    known = set()
    for start in range(0, len(keys), 2000):  # ask in slices: token matrices are large
        known |= set(cache.get(table, name, keys[start : start + 2000], keys_only=True))
    todo = list(dict.fromkeys(k for k in keys if k not in known))
    text_of = dict(zip(keys, bodies, strict=True))
    if todo:
        advance = context.progress.start(f"Embedding {context.target_name} · {label}", len(todo))
        for start in range(0, len(todo), EMBED_SLICE):
            batch = todo[start : start + EMBED_SLICE]
            cache.put(
                table, name, {k: serialise(v) for k, v in zip(batch, encode([text_of[k] for k in batch]), strict=True)}
            )
            advance(len(batch))
    return keys


def _dense(db, cache, name, bodies, context) -> dict[str, Any]:
    encoder = context.models.get(name, DENSE)
    label = context.models.label(name)
    to_bytes = lambda v: np.asarray(v, np.float32).tobytes()  # noqa: E731
    keys = _embed_missing(cache, "dense", name, bodies, context, encoder.encode_documents, to_bytes, label)
    found = cache.get("dense", name, keys)
    matrix = np.frombuffer(b"".join(found[k] for k in keys), dtype=np.float32).reshape(len(bodies), encoder.dim)
    db.execute("INSERT INTO dense VALUES (?, ?, ?)", (name, encoder.dim, matrix.tobytes()))
    return {"dim": encoder.dim, "label": label}


def _late(db, cache, name, bodies, context) -> None:
    """Token matrices into the index, a slice at a time (they are about 100 KB a chunk)."""
    encoder = context.models.get(name, LATE)
    keys = _embed_missing(
        cache, "late", name, bodies, context, encoder.encode_documents, quantize, context.models.label(name)
    )
    for start in range(0, len(keys), 500):
        found = cache.get("late", name, keys[start : start + 500])
        db.executemany(
            "INSERT INTO late VALUES (?, ?)",
            ((start + i + 1, found[k]) for i, k in enumerate(keys[start : start + 500])),
        )
