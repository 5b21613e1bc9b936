"""A local words index: the chunks an engine was built with, in SQLite FTS5 (BM25) beside it.

Qdrant has no keyword search of its own; when vx-eval builds a collection it also writes this small file,
so the target offers keyword search "through the local words index while it holds anything", as the seed
puts it. The embedded engine runs its keyword search through the same `fts_search`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from vx_eval.plugin import Chunk, EngineError, Hit, building, fts_match, query_terms


def fts_search(db: sqlite3.Connection, text: str, k: int, *, stopwords: bool = True) -> list[tuple[int, float]]:
    """(rowid, BM25 score, higher better) of the best `k` rows of ``chunks_fts`` for a bag-of-words question."""
    terms = query_terms(text, stopwords=stopwords)
    if not terms:
        return []
    rows = db.execute(
        "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT ?",
        (fts_match(terms), k),
    ).fetchall()
    return [(row, -score) for row, score in rows]


def build_words(path: Path, chunks: Sequence[Chunk], fingerprint: str, tokenizer: str) -> None:
    """Write the words index for `chunks` into a temporary file, then rename it into place."""
    with building(path) as db:
        db.executescript(
            """CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE chunks (id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, doc_id TEXT NOT NULL, page INTEGER);"""
        )
        db.execute(f"CREATE VIRTUAL TABLE chunks_fts USING fts5(body, content='', tokenize='{tokenizer}')")
        db.executemany(
            "INSERT INTO chunks VALUES (?, ?, ?, ?)",
            [(i, c.chunk_id, c.doc_id, c.page) for i, c in enumerate(chunks, 1)],
        )
        db.executemany(
            "INSERT INTO chunks_fts (rowid, body) VALUES (?, ?)", [(i, c.body) for i, c in enumerate(chunks, 1)]
        )
        db.execute("INSERT INTO meta VALUES ('fingerprint', ?)", (fingerprint,))


class WordsIndex:
    """An opened words index: keyword search that names chunks and documents."""

    def __init__(self, path: Path, *, stopwords: bool = True) -> None:
        self.path = path
        self.stopwords = stopwords
        try:
            self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            self.fingerprint = self.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()[0]
            rows = self.db.execute("SELECT id, chunk_id, doc_id, page FROM chunks").fetchall()
        except (sqlite3.DatabaseError, TypeError) as exc:
            raise EngineError(f"{path} is not a vx-eval words index ({exc}); delete it so it is built again") from None
        self.chunks = {r[0]: (r[1], r[2], r[3]) for r in rows}

    def __len__(self) -> int:
        return len(self.chunks)

    def search(self, text: str, k: int) -> list[Hit]:
        out = []
        for row, score in fts_search(self.db, text, k, stopwords=self.stopwords):
            chunk_id, doc_id, page = self.chunks[row]
            out.append(Hit(doc_id, score, page, chunk_id))
        return out

    def close(self) -> None:
        self.db.close()


def read_fingerprint(path: Path) -> str | None:
    """The fingerprint a words index was built for, or None when there is none (or it is unreadable)."""
    if not path.exists():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    except sqlite3.DatabaseError:
        return None
    return row[0] if row else None
