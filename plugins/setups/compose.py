"""What composed setups share: reciprocal-rank fusion, and a cross-encoder that reorders candidates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vx_eval.core.engine import Hit, Setup, Target, reuse_allowed
from vx_eval.core.models import RERANKER, PairScores


def _key(hit: Hit) -> str:
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
            key = _key(hit)
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
            key = _key(hit)
            share = (hit.score - low) / (high - low) if high > low else 1.0
            scores[key] = scores.get(key, 0.0) + weight * share
            first.setdefault(key, hit)
    return _ordered(scores, first, k)


def _ordered(scores: dict[str, float], first: dict[str, Hit], k: int) -> list[Hit]:
    order = sorted(scores, key=lambda key: (-scores[key], key))[:k]
    return [
        Hit(first[key].doc_id, scores[key], first[key].page, first[key].chunk_id, first[key].fields) for key in order
    ]


def fuse(rankings: Sequence[Sequence[Hit]], k: int, settings: Any, weights: Sequence[float] | None = None) -> list[Hit]:
    """The fusion the run's `search.fusion` names: ``convex`` (default) or ``rrf``."""
    if settings.fusion == "rrf":
        return rrf(rankings, k, settings.rrf_k, weights)
    return convex(rankings, k, weights)


class Reranker:
    """A target's cross-encoder over its passages. Scores are remembered per (question, chunk), and reused
    only for searches whose time is not recorded (`reuse_allowed`)."""

    def __init__(self, target: Any, model: str) -> None:
        self.target = target
        self.model = model
        self.scores: dict[tuple[str, str], float] = {}

    def rerank(self, question: str, candidates: Sequence[Hit], depth: int, k: int) -> list[Hit]:
        """The first `depth` candidates reordered by the cross-encoder; the rest follow in their order."""
        head, tail = list(candidates[:depth]), list(candidates[depth:])
        reuse = reuse_allowed.get()
        todo = [h for h in head if not reuse or (question, _key(h)) not in self.scores]
        if todo:
            passages = self.target.handle.passages(todo)
            stored = self.target.models.pair_scores
            keys = [PairScores.key(question, p) for p in passages]
            known = stored.scores(self.model, keys) if stored and reuse else {}
            missing = [i for i, key in enumerate(keys) if key not in known]
            if missing:
                fresh = self.target.models.get(self.model, RERANKER).score(question, [passages[i] for i in missing])
                computed = {keys[i]: float(s) for i, s in zip(missing, fresh, strict=True)}
                if stored:
                    stored.keep(self.model, computed)
                known.update(computed)
            for hit, key in zip(todo, keys, strict=True):
                self.scores[(question, _key(hit))] = known[key]
        scored = sorted(head, key=lambda h: (-self.scores[(question, _key(h))], _key(h)))
        ordered = scored + tail
        # scores that keep the new order: rank-based, so reranked and trailing hits never tie
        return [Hit(h.doc_id, float(len(ordered) - i), h.page, h.chunk_id, h.fields) for i, h in enumerate(ordered[:k])]


def target_setup(
    target: Target, key: str, method: str, label: str, run: Any, models: Sequence[str] = (), ranker: str | None = None
) -> Setup:
    """A setup of `target`, its key prefixed with the target's key: ``local.hybrid.minilm``."""
    return Setup(f"{target.key}.{key}", target.name, target.engine, method, label, run, tuple(models), ranker)
