"""What every engine builds from: the corpus cut into chunks, and each chunk embedded once per model.

The embedded engine and the remote ones (Qdrant, OpenSearch, Azure AI Search) all call these, so the same
documents sit on every target as the same chunks with the same ids and the same vectors: rankings can be
compared engine against engine, and vectors made for one target are read from the cache by the next.
"""

from __future__ import annotations

import glob
import itertools
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from vx_eval.core.contracts.engine import Corpus, Document, EngineOptions, OpenContext
from vx_eval.core.contracts.fields import ConfigPath
from vx_eval.core.contracts.models import DENSE, LATE
from vx_eval.core.corpus.embeddings import EmbeddingCache, content_key, dequantize, quantize
from vx_eval.core.corpus.leftovers import owned_by_this_process, sweep
from vx_eval.core.corpus.text import chunk_words
from vx_eval.core.models.loading import DenseModel, own_models

EMBED_SLICE = 256  # texts handed to a model at a time (the progress bar moves per slice)


class IndexOptions(EngineOptions):
    """Options of every engine that builds from the corpus: models, chunking, the embedding cache."""

    dense_models: list[DenseModel] = Field(default_factory=lambda: ["minilm"])
    """Models to embed with when building; when opening an existing index, the vectors it must hold."""
    chunk_words: int = Field(300, ge=0, le=100_000)
    """Words per chunk (0: one chunk per document or page)."""
    chunk_overlap: int = Field(50, ge=0)
    cache: ConfigPath | None = None
    """The embedding cache; default: the run's ``models.embeddings``, shared with every other target."""

    @model_validator(mode="after")
    def _consistent_chunks(self) -> IndexOptions:
        if self.chunk_words and self.chunk_overlap >= self.chunk_words:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be below chunk_words ({self.chunk_words})")
        if len(set(self.dense_models)) != len(self.dense_models):
            raise ValueError("dense_models names a model twice")
        return self


def sweep_building(path: Path) -> list[Path]:
    """Remove what killed builds of `path` left beside it (not a build still going)."""
    return sweep(path.parent, f".{glob.escape(path.name)}.*.building")


@contextmanager
def building(path: Path) -> Iterator[sqlite3.Connection]:
    """A new SQLite file written beside `path` and renamed into place when the block ends without an
    error; on any error (or interrupt) the partial file is removed and `path` is left as it was."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_building(path)
    tmp = owned_by_this_process(path, "building")
    tmp.unlink(missing_ok=True)
    db = sqlite3.connect(tmp)
    try:
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;")
        yield db
        db.commit()
        db.close()
        os.replace(tmp, path)
    except BaseException:
        db.close()
        tmp.unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Chunk:
    """One searchable piece of a document: ``<doc>::<page or 0>::<n>``; its body starts with the title."""

    chunk_id: str
    doc_id: str
    page: int | None
    ord: int
    body: str


def chunks_of(doc: Document, size: int, overlap: int) -> list[Chunk]:
    """A document's chunks: each page (or the whole text) cut into windows of `size` words."""
    out = []
    for page_no, page in enumerate(doc.pages or (doc.text,), start=1):
        page_id = page_no if doc.pages else None
        for ord_, piece in enumerate(chunk_words(page, size, overlap)):
            body = f"{doc.title}\n{piece}" if doc.title else piece
            out.append(Chunk(f"{doc.id}::{page_id or 0}::{ord_}", doc.id, page_id, ord_, body))
    return out


def chunk_corpus(
    corpus: Corpus, size: int, overlap: int, context: OpenContext
) -> Iterator[tuple[Document, list[Chunk]]]:
    """Each document with its chunks, the progress bar moving per document."""
    advance = context.progress.start(f"Indexing {context.target_name}", len(corpus))
    for doc in corpus:
        yield doc, chunks_of(doc, size, overlap)
        advance(1)


def default_cache(context: OpenContext) -> Path:
    """Where embeddings are kept unless a target names a cache: the run's `models.embeddings`."""
    configured = getattr(context.models, "embeddings", None)
    return configured or context.config_dir / ".vx" / "embeddings.db"


@dataclass(frozen=True)
class Encoding:
    """How one model's vectors are made and kept: the cache's `table` (``dense`` or ``late``) and `space`
    (the model's name, or a served model's `cache_space`), `encode` and `serialise`; `on_cached` is told how
    many distinct texts the cache held (a served model counts what it did not send); `concurrency` slices of
    `slice_size` texts are encoded at once (above 1 for a served model)."""

    table: str
    name: str
    encode: Callable[[list[str]], Iterable[Any]]
    serialise: Callable[[Any], bytes]
    space: str
    on_cached: Callable[[int], None] | None = None
    concurrency: int = 1
    slice_size: int = EMBED_SLICE


def _embed_missing(cache: EmbeddingCache, bodies: Sequence[str], context: OpenContext, how: Encoding) -> list[str]:
    """Encode the bodies the cache lacks (each distinct text once) into the cache, as `how` says; every body's
    cache key. Each slice is kept in the cache as it comes back, so a killed run keeps what was done."""
    keys = [content_key(b) for b in bodies]
    known: set[str] = set()
    table, space = how.table, how.space
    for start in range(0, len(keys), 2000):  # ask in slices: token matrices are large
        known |= set(cache.vectors(table, space, keys[start : start + 2000], keys_only=True))
    todo = list(dict.fromkeys(k for k in keys if k not in known))
    text_of = dict(zip(keys, bodies, strict=True))
    if how.on_cached is not None:
        how.on_cached(len(set(keys) & known))
    if todo:
        label = context.loaded.label(how.name)
        advance = context.progress.start(f"Embedding {context.target_name} · {label}", len(todo))
        size = how.slice_size
        batches = [todo[start : start + size] for start in range(0, len(todo), size)]
        models = own_models(context.loaded)
        work = models.work
        if work is None:
            done = _encoded(batches, lambda b: how.encode([text_of[k] for k in b]), how.concurrency)
        else:  # on the run's cluster: the workers encode, this process keeps what they send back
            slices = [[text_of[k] for k in b] for b in batches]
            sent = work.embed(models, how.name, table, slices, how.concurrency)
            done = ((batches[i], vectors) for i, vectors in sent)
        for batch, vectors in done:
            cache.keep(table, space, {k: how.serialise(v) for k, v in zip(batch, vectors, strict=True)})
            advance(len(batch))
    return keys


def _encoded(
    batches: list[list[str]], encode: Callable[[list[str]], Iterable[Any]], concurrency: int
) -> Iterator[tuple[list[str], Iterable[Any]]]:
    """Each batch with its vectors: one after another, or `concurrency` at once (as they finish), in threads
    that only encode (the caller keeps what comes back). A failure cancels what has not started and is
    raised once the started ones end."""
    if concurrency <= 1 or len(batches) <= 1:
        for batch in batches:
            yield batch, encode(batch)
        return
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vx-embed") as pool:
        waiting = iter(batches)
        # never more than `concurrency` submitted: none waits in the pool to start after a failure
        running = {pool.submit(encode, b): b for b in itertools.islice(waiting, concurrency)}
        try:
            while running:
                done, _ = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    batch = running.pop(future)
                    yield batch, future.result()
                    following = next(waiting, None)
                    if following is not None:
                        running[pool.submit(encode, following)] = following
        finally:
            for future in running:
                future.cancel()


def dense_matrix(cache: EmbeddingCache, name: str, bodies: Sequence[str], context: OpenContext) -> np.ndarray:
    """One unit vector per body for the dense model `name` (rows in the order of `bodies`), float32."""
    encoder = context.loaded.get(name, DENSE)
    space = context.loaded.cache_space(name)
    how = Encoding(
        "dense",
        name,
        encoder.encode_documents,
        lambda v: np.asarray(v, np.float32).tobytes(),
        space,
        on_cached=getattr(encoder, "note_cached", None),  # a served model counts what it did not send
        concurrency=int(getattr(encoder, "concurrency", 1)),  # a served model's requests in flight
        slice_size=min(EMBED_SLICE, int(getattr(encoder, "batch", EMBED_SLICE))),
    )
    keys = _embed_missing(cache, bodies, context, how)
    if not keys:
        return np.zeros((0, encoder.dim), dtype=np.float32)
    found = cache.vectors("dense", space, keys)
    return np.frombuffer(b"".join(found[k] for k in keys), dtype=np.float32).reshape(len(bodies), -1)


def token_matrices(
    cache: EmbeddingCache, name: str, bodies: Sequence[str], context: OpenContext, slice_size: int = 500
) -> Iterator[list[bytes]]:
    """Int8 token matrices (see `cache.quantize`) for the late-interaction model `name`, `slice_size` bodies
    at a time in the order of `bodies`: they are about 100 KB a chunk, so never all in memory at once."""
    encoder = context.loaded.get(name, LATE)
    keys = _embed_missing(cache, bodies, context, Encoding("late", name, encoder.encode_documents, quantize, name))
    for start in range(0, len(keys), slice_size):
        found = cache.vectors("late", name, keys[start : start + slice_size])
        yield [found[k] for k in keys[start : start + slice_size]]


@dataclass
class Built:
    """The corpus prepared for an engine: chunks, each document's own fields, and a vector matrix per model."""

    chunks: list[Chunk]
    documents: dict[str, dict[str, Any]]
    dense: dict[str, np.ndarray]
    cache_path: Path
    context: OpenContext

    def token_slices(self, model: str, size: int = 256) -> Iterator[list[np.ndarray]]:
        """Token matrices for the late model, `size` chunks at a time (embedded first where not cached)."""
        dim = self.context.loaded.get(model, LATE).dim
        cache = EmbeddingCache(self.cache_path)
        try:
            for blobs in token_matrices(cache, model, [c.body for c in self.chunks], self.context, size):
                yield [dequantize(b, dim) for b in blobs]
        finally:
            cache.close()


def prepare(corpus: Corpus, options: IndexOptions, context: OpenContext) -> Built:
    """Chunks and a vector per chunk for every dense model, embedded once (the cache keeps them by content)."""
    chunks: list[Chunk] = []
    documents: dict[str, dict[str, Any]] = {}
    for doc, pieces in chunk_corpus(corpus, options.chunk_words, options.chunk_overlap, context):
        documents[doc.id] = {"title": doc.title, "text": doc.text, "metadata": doc.metadata}
        chunks += pieces
    cache_path = options.cache or default_cache(context)
    cache = EmbeddingCache(cache_path)
    try:
        bodies = [c.body for c in chunks]
        dense = {name: dense_matrix(cache, name, bodies, context) for name in options.dense_models}
    finally:
        cache.close()
    return Built(chunks, documents, dense, cache_path, context)
