"""Embeddings kept by content: a vector (or token matrix) per (model, text), so nothing is embedded twice.

The cache is a `core.models.cache.KeyedCache` file shared by every target of a run: rebuilding an index, or adding a
setup over a model already used, reads the vectors back instead of running the model again.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vx_eval.core.models.cache import KeyedCache, content_key

__all__ = ["EmbeddingCache", "content_key", "dequantize", "quantize"]


def quantize(tokens: np.ndarray) -> bytes:
    """Unit token vectors as int8 (x 127): a quarter of the bytes, cosines within about 1%."""
    codes: np.ndarray = np.clip(np.rint(tokens * 127), -127, 127).astype(np.int8)
    return codes.tobytes()


def dequantize(blob: bytes, dim: int) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.int8).reshape(-1, dim).astype(np.float32) / 127.0


class EmbeddingCache(KeyedCache):
    """Vectors by content: a dense vector or an int8 token matrix per (model, text), as bytes."""

    def vectors(self, table: str, model: str, keys: Sequence[str], *, keys_only: bool = False) -> dict[str, bytes]:
        """The stored vectors of these keys (with `keys_only`, which keys are stored, values left empty)."""
        found = self.get(f"{table}:{model}", keys, keys_only=keys_only)
        return {k: (b"" if keys_only else v) for k, (v, _) in found.items()}

    def keep(self, table: str, model: str, items: dict[str, bytes]) -> None:
        self.put(f"{table}:{model}", items)
