"""How ranked lists are fused: a convex combination of min-max normalised scores (the default), or
reciprocal-rank fusion. The hybrid setups fuse with these, and fusion tuning (`core.run.tuning`) fuses the
rankings a run kept with them, so both mean the same thing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from vx_eval.core.contracts.engine import Hit


def hit_key(hit: Hit) -> str:
    return hit.chunk_id or hit.unit


def rrf(
    rankings: Sequence[Sequence[Hit]], k: int, constant: int = 60, weights: Sequence[float] | None = None
) -> list[Hit]:
    """Reciprocal-rank fusion: each list gives weight / (constant + rank) to its hits; best sum first."""
    weights = weights or [1.0] * len(rankings)
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            key = hit_key(hit)
            scores[key] = scores.get(key, 0.0) + weight / (constant + rank)
            first.setdefault(key, hit)
    return _ordered(scores, first, k)


def convex(rankings: Sequence[Sequence[Hit]], k: int, weights: Sequence[float] | None = None) -> list[Hit]:
    """Convex combination: each list's scores min-max normalised to 0-1 over the hits it returned, then
    summed with the list's weight (a hit a list did not return gets 0 from it). Bruch et al. (2023) found
    this beats reciprocal-rank fusion for lexical + dense retrieval; it is OpenSearch's default hybrid."""
    weights = weights or [1.0 / len(rankings)] * len(rankings)
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        if not ranking:
            continue
        values = [h.score for h in ranking]
        low, high = min(values), max(values)
        for hit in ranking:
            key = hit_key(hit)
            share = (hit.score - low) / (high - low) if high > low else 1.0
            scores[key] = scores.get(key, 0.0) + weight * share
            first.setdefault(key, hit)
    return _ordered(scores, first, k)


def _ordered(scores: dict[str, float], first: dict[str, Hit], k: int) -> list[Hit]:
    order = sorted(scores, key=lambda key: (-scores[key], key))[:k]
    return [
        Hit(first[key].doc_id, scores[key], first[key].page, first[key].chunk_id, first[key].fields) for key in order
    ]


class FusionSettings(Protocol):
    """Where `fuse` reads how to fuse: the config's `search` block, or a `Query`."""

    @property
    def fusion(self) -> str: ...

    @property
    def rrf_k(self) -> int: ...


def fuse(
    rankings: Sequence[Sequence[Hit]], k: int, settings: FusionSettings, weights: Sequence[float] | None = None
) -> list[Hit]:
    """The fusion the run's `search.fusion` names: ``convex`` (default) or ``rrf``."""
    if settings.fusion == "rrf":
        return rrf(rankings, k, settings.rrf_k, weights)
    return convex(rankings, k, weights)
