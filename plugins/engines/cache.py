"""Embeddings kept by content: a vector (or token matrix) per (model, text), so nothing is embedded twice.

The cache is its own SQLite file beside the index: rebuilding an index, or adding a setup over a model
already used, reads the vectors back instead of running the model again.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SCHEMA = """
CREATE TABLE IF NOT EXISTS dense (model TEXT NOT NULL, sha TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, sha));
CREATE TABLE IF NOT EXISTS late (model TEXT NOT NULL, sha TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (model, sha));
"""


def content_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def quantize(tokens: np.ndarray) -> bytes:
    """Unit token vectors as int8 (x 127): a quarter of the bytes, cosines within about 1%."""
    return np.clip(np.rint(tokens * 127), -127, 127).astype(np.int8).tobytes()


def dequantize(blob: bytes, dim: int) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32) / 127.0


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, timeout=60)
        self.db.executescript("PRAGMA journal_mode=WAL;" + SCHEMA)

    def get(self, table: str, model: str, keys: Sequence[str], *, keys_only: bool = False) -> dict[str, bytes]:
        """The stored vectors of these keys (with `keys_only`, which keys are stored, values left empty)."""
        found: dict[str, bytes] = {}
        unique = sorted(set(keys))
        column = "NULL" if keys_only else "vec"
        for start in range(0, len(unique), 500):
            batch = unique[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self.db.execute(
                f"SELECT sha, {column} FROM {table} WHERE model = ? AND sha IN ({marks})", [model, *batch]
            )
            found.update(rows)
        return found

    def put(self, table: str, model: str, items: dict[str, bytes]) -> None:
        with self.db:
            self.db.executemany(
                f"INSERT OR REPLACE INTO {table} (model, sha, vec) VALUES (?, ?, ?)",
                [(model, key, blob) for key, blob in items.items()],
            )

    def close(self) -> None:
        self.db.close()
