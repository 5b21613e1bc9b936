"""What composed setups share: the fusions (`core.run.fusion`), and a cross-encoder that reorders candidates."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vx_eval.plugin import RERANKER, Hit, PairScores, Setup, Target, convex, fuse, hit_key, reuse_allowed, rrf

__all__ = ["Reranker", "convex", "fuse", "rrf", "target_setup"]


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
        todo = [h for h in head if not reuse or (question, hit_key(h)) not in self.scores]
        if todo:
            passages = self.target.handle.passages(todo)
            stored = self.target.models.pair_scores
            keys = [PairScores.key(question, p) for p in passages]
            space = self.target.models.cache_space(self.model)
            known = stored.scores(space, keys) if stored and reuse else {}
            missing = [i for i, key in enumerate(keys) if key not in known]
            if missing:
                fresh = self.target.models.get(self.model, RERANKER).score(question, [passages[i] for i in missing])
                computed = {keys[i]: float(s) for i, s in zip(missing, fresh, strict=True)}
                if stored:
                    stored.keep(space, computed)
                known.update(computed)
            for hit, key in zip(todo, keys, strict=True):
                self.scores[(question, hit_key(hit))] = known[key]
        scored = sorted(head, key=lambda h: (-self.scores[(question, hit_key(h))], hit_key(h)))
        ordered = scored + tail
        # scores that keep the new order: rank-based, so reranked and trailing hits never tie
        return [Hit(h.doc_id, float(len(ordered) - i), h.page, h.chunk_id, h.fields) for i, h in enumerate(ordered[:k])]


def target_setup(
    target: Target, key: str, method: str, label: str, run: Any, models: Sequence[str] = (), ranker: str | None = None
) -> Setup:
    """A setup of `target`, its key prefixed with the target's key: ``local.hybrid.minilm``."""
    return Setup(f"{target.key}.{key}", target.name, target.engine, method, label, run, tuple(models), ranker)
