"""One small keyed cache in SQLite, for everything vx-eval computes once and keeps: embeddings by content,
cross-encoder scores and judge grades by (question, passage), model answers by request.

Values live under a `space` (a model, a judge's fingerprint): ``get(space, keys)`` reads many keys in one
pass, ``put(space, items)`` writes many in one transaction. The file is in WAL mode with a long busy timeout
(several processes, a Dask cluster's workers, share it) and every call holds a lock (threads share it).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

LOOKUP_BATCH = 500  # keys per IN (...) query, under SQLite's limit on bound parameters

Value = tuple[Any, str | None]
"""A stored value and an optional note beside it (a judge's raw answer beside its grade)."""


def pair_key(question: str, passage: str) -> str:
    """The key of a (question, passage) pair: scores and grades of the same pair share it."""
    return hashlib.sha256(f"{question}\x00{passage}".encode()).hexdigest()[:32]


def content_key(text: str) -> str:
    """The key of a text by its content (embeddings)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


class KeyedCache:
    """Values by (space, key) in one SQLite file."""

    SCHEMA = (
        "CREATE TABLE IF NOT EXISTS kept (space TEXT NOT NULL, key TEXT NOT NULL, value, note TEXT, "
        "PRIMARY KEY (space, key)) WITHOUT ROWID"
    )

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(str(path), timeout=60, check_same_thread=False)
        self._db.executescript(f"PRAGMA journal_mode=WAL; {self.SCHEMA};")
        self._lock = threading.Lock()

    def get(self, space: str, keys: Iterable[str], *, keys_only: bool = False) -> dict[str, Value]:
        """The stored values of these keys that are there (with `keys_only`: which are, values left None)."""
        unique = sorted(set(keys))
        column = "NULL, NULL" if keys_only else "value, note"
        found: dict[str, Value] = {}
        with self._lock:
            for start in range(0, len(unique), LOOKUP_BATCH):
                batch = unique[start : start + LOOKUP_BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._db.execute(
                    f"SELECT key, {column} FROM kept WHERE space = ? AND key IN ({marks})", [space, *batch]
                )
                found.update((key, (value, note)) for key, value, note in rows)
        return found

    def values(self, space: str, keys: Iterable[str]) -> dict[str, Any]:
        """`get` without the notes."""
        return {k: v for k, (v, _) in self.get(space, keys).items()}

    def put(self, space: str, items: Mapping[str, Any | Value]) -> None:
        """Store values (or (value, note) pairs) under `space`; a key already there is replaced."""
        rows = [(space, k, *(v if isinstance(v, tuple) else (v, None))) for k, v in items.items()]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO kept VALUES (?, ?, ?, ?)", rows)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
