"""The embedded engine: documents and chunks in one SQLite file, keyword search with FTS5 BM25.

The index is built into a temporary file and renamed into place, so a crash never leaves half an index.
Its fingerprint (the corpus's sha256 plus every indexing setting) decides whether a declared corpus is
reused or indexed again.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from vx_eval import hookimpl
from vx_eval.core.config import ConfigPath
from vx_eval.core.engine import KEYWORD, Corpus, Document, Engine, EngineOptions, Hit, OpenContext, Query
from vx_eval.core.errors import EngineError
from vx_eval.plugins.engines.text import chunk_words, fts_match, query_terms

FORMAT = 2


class SqliteOptions(EngineOptions):
    path: ConfigPath | None = None
    """The index file; default ``.vx/<target>.db`` beside the config."""
    collection: str | None = None
    chunk_words: int = Field(300, ge=0, le=100_000)
    """Words per chunk (0: one chunk per document or page)."""
    chunk_overlap: int = Field(50, ge=0)
    tokenizer: str = Field("porter unicode61 remove_diacritics 2", pattern=r"^[a-z0-9_ ]+$")
    stopwords: bool = True
    reindex: Literal["auto", "always", "never"] = "auto"
    """auto: index when the corpus or a setting changed; always: every run; never: use the index as it is."""

    @model_validator(mode="after")
    def _overlap_below_size(self) -> SqliteOptions:
        if self.chunk_words and self.chunk_overlap >= self.chunk_words:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be below chunk_words ({self.chunk_words})")
        return self


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
"""


class SqliteHandle:
    """An opened SQLite index."""

    def __init__(self, path: Path, options: SqliteOptions) -> None:
        self.path = path
        self.options = options
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
        self._documents = int(self.meta.get("documents", 0))

    def capabilities(self) -> frozenset[str]:
        return frozenset({KEYWORD}) if self._documents else frozenset()

    def describe(self) -> dict[str, Any]:
        return {
            "collection": self.options.collection or self.path.stem,
            "documents": self._documents,
            "chunks": int(self.meta.get("chunks", 0)),
            "models": [],
            "version": f"SQLite {sqlite3.sqlite_version} FTS5",
            "indexed_at": self.meta.get("indexed_at"),
            "corpus_sha256": self.meta.get("corpus_sha256"),
            "settings": json.loads(self.meta.get("settings", "{}")),
        }

    def search(self, query: Query) -> list[Hit]:
        if query.capability != KEYWORD:
            raise EngineError(f"the sqlite engine has no capability '{query.capability}'")
        terms = query_terms(query.text, stopwords=self.options.stopwords)
        if not terms:
            return []
        rows = self.db.execute(
            """WITH top AS (SELECT rowid, bm25(chunks_fts) AS s FROM chunks_fts WHERE chunks_fts MATCH ?
                            ORDER BY rank LIMIT ?)
               SELECT c.doc_id, c.page, c.chunk_id, top.s FROM top JOIN chunks c ON c.id = top.rowid
               ORDER BY top.s, c.doc_id DESC""",
            (fts_match(terms), query.k),
        ).fetchall()
        return [Hit(doc_id, -score, page, chunk_id) for doc_id, page, chunk_id, score in rows]

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


class SqliteEngine(Engine):
    """SQLite with FTS5: keyword (BM25) search over chunks, mapped back to documents and pages."""

    name: ClassVar[str] = "sqlite"
    Options: ClassVar[type[EngineOptions]] = SqliteOptions

    def open(self, options: SqliteOptions, context: OpenContext) -> SqliteHandle:
        from vx_eval.core.engine import slug

        path = options.path or context.config_dir / ".vx" / f"{slug(context.target_name)}.db"
        corpus = context.corpus
        if corpus is None or options.reindex == "never":
            if not path.exists():
                raise EngineError(
                    f"target {context.target_name}: no index at {path} and the config declares no corpus; "
                    "add `corpus: docs.jsonl` to the config or point options.path at an existing index"
                )
            return SqliteHandle(path, options)
        fingerprint = self._fingerprint(corpus, options)
        if options.reindex == "auto" and path.exists():
            stored = _read_meta(path).get("fingerprint")
            if stored == fingerprint:
                return SqliteHandle(path, options)
            if stored is not None:
                context.progress.note(
                    f"{context.target_name}: the corpus or an indexing setting changed since {path.name} was "
                    "built; indexing again"
                )
        self._build(path, corpus, options, fingerprint, context)
        return SqliteHandle(path, options)

    @staticmethod
    def _fingerprint(corpus: Corpus, options: SqliteOptions) -> str:
        settings = options.model_dump(include={"chunk_words", "chunk_overlap", "tokenizer"})
        blob = json.dumps({"format": FORMAT, "corpus": corpus.fingerprint, **settings}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()

    def _build(
        self, path: Path, corpus: Corpus, options: SqliteOptions, fingerprint: str, context: OpenContext
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.building")
        tmp.unlink(missing_ok=True)
        advance = context.progress.start(f"Indexing {context.target_name}", len(corpus))
        try:
            db = sqlite3.connect(tmp)
            db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
            try:
                fts = f"fts5(body, content='', tokenize='{options.tokenizer}')"
                db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING {fts}")
            except sqlite3.OperationalError as exc:
                raise EngineError(f"tokenizer '{options.tokenizer}' is not one FTS5 knows: {exc}") from None
            documents = chunks = 0
            for doc in corpus:
                pages = doc.pages or (doc.text,)
                db.execute(
                    "INSERT INTO documents VALUES (?, ?, ?, ?, ?)",
                    (
                        doc.id,
                        doc.title,
                        doc.text,
                        len(doc.pages),
                        json.dumps(doc.metadata, ensure_ascii=False),
                    ),
                )
                rows = []
                for page_no, page in enumerate(pages, start=1):
                    for ord_, piece in enumerate(chunk_words(page, options.chunk_words, options.chunk_overlap)):
                        page_id = page_no if doc.pages else None
                        body = f"{doc.title}\n{piece}" if doc.title else piece
                        rows.append((f"{doc.id}::{page_id or 0}::{ord_}", doc.id, page_id, ord_, body))
                db.executemany("INSERT INTO chunks (chunk_id, doc_id, page, ord, body) VALUES (?, ?, ?, ?, ?)", rows)
                documents += 1
                chunks += len(rows)
                advance(1)
            db.execute("INSERT INTO chunks_fts (rowid, body) SELECT id, body FROM chunks")
            meta = {
                "format": str(FORMAT),
                "fingerprint": fingerprint,
                "corpus_sha256": corpus.fingerprint,
                "corpus_source": corpus.source,
                "documents": str(documents),
                "chunks": str(chunks),
                "indexed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "settings": json.dumps(options.model_dump(include={"chunk_words", "chunk_overlap", "tokenizer"})),
            }
            db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
            db.commit()
            db.execute("VACUUM")
            db.close()
            os.replace(tmp, path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise


def _read_meta(path: Path) -> dict[str, str]:
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            return dict(db.execute("SELECT key, value FROM meta"))
    except sqlite3.DatabaseError:
        return {}


@hookimpl
def vx_eval_register_engines(register):
    register.add(SqliteEngine)
