"""Setups that end in a cross-encoder: hybrid reranked, ColBERT-style "ultimate", and the entity graph."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE_PREFIX,
    GRAPH,
    HYBRID,
    KEYWORD,
    LATE_PREFIX,
    PASSAGES,
    RERANKER_PREFIX,
    Query,
    Setup,
    Target,
    capability_models,
)
from vx_eval.plugins.setups.compose import Reranker, fuse, target_setup
from vx_eval.plugins.setups.dense import hybrid_search, lexical, model_combinations, model_label


def _reranker(target: Target) -> str | None:
    caps = target.capabilities
    names = capability_models(caps, RERANKER_PREFIX)
    return names[0] if names and PASSAGES in caps else None


class RerankedSetups:
    """Each hybrid setup again, its top candidates reordered by the target's cross-encoder."""

    name: ClassVar[str] = "reranked"

    def setups(self, target: Target) -> Iterator[Setup]:
        model = _reranker(target)
        if model is None or HYBRID not in target.capabilities or lexical(target) is None:
            return
        reranker = Reranker(target, model)
        label = target.models.label(model)
        depth = target.search.rerank_depth

        def run(combo: list[str], text: str, k: int) -> list:
            candidates = hybrid_search(target, combo, text, max(k, depth))
            return reranker.rerank(text, candidates, depth, k)

        for combo in model_combinations(capability_models(target.capabilities, DENSE_PREFIX)):
            title = f"Hybrid, reranked by {label} — {model_label(target, combo)}"
            key = f"hybrid_reranked.{'+'.join(combo)}"
            yield target_setup(target, key, "hybrid", title, partial(run, combo), combo, model)


def ultimate_search(target: Target, reranker: Reranker | None, late: str | None, text: str, k: int) -> list:
    """Hybrid candidates (every model) -> late-interaction MaxSim -> the cross-encoder over MaxSim's top.

    With `late` None the MaxSim step is skipped (the cross-encoder reads the hybrid order): the switch that
    shows what late interaction changes.
    """
    settings = target.search
    models = capability_models(target.capabilities, DENSE_PREFIX)
    candidates = hybrid_search(target, models, text, max(k, settings.candidates))
    if late is not None:
        candidates = target.handle.search(Query(text, len(candidates), LATE_PREFIX + late, tuple(candidates)))
    return reranker.rerank(text, candidates, settings.rerank_depth, k) if reranker else candidates[:k]


class UltimateSetups:
    """The seed's "ultimate": hybrid, then ColBERT-style late interaction, then the cross-encoder."""

    name: ClassVar[str] = "ultimate"

    def setups(self, target: Target) -> Iterator[Setup]:
        caps = target.capabilities
        late = capability_models(caps, LATE_PREFIX)
        model = _reranker(target)
        models = capability_models(caps, DENSE_PREFIX)
        if not late or model is None or not models or lexical(target) is None:
            return
        title = f"Hybrid → ColBERT-style (approximate) → {target.models.label(model)} — {model_label(target, models)}"
        run = partial(ultimate_search, target, Reranker(target, model), late[0])
        yield target_setup(target, f"ultimate.{'+'.join(models)}", "ultimate", title, run, models, model)


class GraphSetups:
    """The entity graph's candidates fused with keyword search, then the cross-encoder."""

    name: ClassVar[str] = "graph"

    def setups(self, target: Target) -> Iterator[Setup]:
        caps = target.capabilities
        model = _reranker(target)
        if GRAPH not in caps or KEYWORD not in caps or model is None:
            return
        reranker = Reranker(target, model)
        settings = target.search

        def run(text: str, k: int) -> list:
            depth = max(k, settings.candidates)
            lists = [target.handle.search(Query(text, depth, GRAPH)), target.handle.search(Query(text, depth, KEYWORD))]
            return reranker.rerank(text, fuse(lists, depth, settings), settings.rerank_depth, k)

        title = f"Entity graph + keyword → {target.models.label(model)}"
        yield target_setup(target, "graph", "graph", title, run, ranker=model)


@hookimpl
def vx_eval_register_setups(register):
    register.add(RerankedSetups)
    register.add(UltimateSetups)
    register.add(GraphSetups)
