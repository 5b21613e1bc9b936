"""Dense and hybrid setups: each dense model alone, the models fused, and keyword + dense fused.

Where the engine fuses its own searches (the ``fusion`` capability: Qdrant's prefetch + RRF, an
OpenSearch search pipeline, Azure AI Search's hybrid query), the fused setups ask it to; elsewhere they
fuse here, as `search.fusion` says. Either way the setup's key, method and models are the same, so the
same search on two engines are neighbours.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from functools import partial
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE_PREFIX,
    FUSION,
    HYBRID,
    KEYWORD,
    SPARSE_PREFIX,
    EngineError,
    Query,
    Setup,
    Target,
    capability_models,
)
from vx_eval.plugins.setups.compose import fuse, target_setup


def model_label(target: Target, models: list[str]) -> str:
    return " + ".join(target.models.label(m) if target.models else m for m in models)


def model_combinations(models: list[str]) -> list[list[str]]:
    """Each model alone, then all of them together (when there are several)."""
    return [[m] for m in models] + ([models] if len(models) > 1 else [])


def lexical(target: Target) -> str | None:
    """What a hybrid search fuses with the vectors: the engine's sparse vectors where it fuses them itself,
    else its keyword search."""
    caps = target.capabilities
    sparse = capability_models(caps, SPARSE_PREFIX)
    if FUSION in caps and sparse:
        return SPARSE_PREFIX + sparse[0]
    return KEYWORD if KEYWORD in caps else None


def fused_by(target: Target) -> str:
    """Who fused, for a label: `` by <target>`` where the engine fuses, nothing where it is done here."""
    return f" by {target.name}" if FUSION in target.capabilities else ""


def native_or_local(target: Target, parts: list[str], text: str, k: int, weights: list[float] | None = None) -> list:
    """`parts` fused by the engine where it can, else searched one by one and fused here."""
    depth = max(k, target.search.candidates)
    if FUSION in target.capabilities:
        search = target.search
        query = Query(text, depth, FUSION, parts=tuple(parts), fusion=search.fusion, rrf_k=search.rrf_k)
        return target.handle.search(dataclasses.replace(query, weights=tuple(weights or ())))[:k]
    lists = [target.handle.search(Query(text, depth, part)) for part in parts]
    return fuse(lists, k, target.search, weights)


def dense_search(target: Target, models: list[str], text: str, k: int) -> list:
    if len(models) == 1:
        return target.handle.search(Query(text, k, DENSE_PREFIX + models[0]))[:k]
    return native_or_local(target, [DENSE_PREFIX + m for m in models], text, k)


class DenseSetups:
    """Dense search per model; with several models, also every model fused."""

    name: ClassVar[str] = "dense"

    def setups(self, target: Target) -> Iterator[Setup]:
        models = capability_models(target.capabilities, DENSE_PREFIX)
        for combo in model_combinations(models):
            label = f"Dense{', fused' + fused_by(target) if len(combo) > 1 else ''} — {model_label(target, combo)}"
            run = partial(dense_search, target, combo)
            yield target_setup(target, f"dense.{'+'.join(combo)}", "dense", label, run, combo)


def hybrid_search(target: Target, models: list[str], text: str, k: int) -> list:
    word = lexical(target)
    if word is None:
        raise EngineError(f"target {target.name} has no keyword or sparse search to fuse with its vectors")
    alpha = target.search.alpha  # keyword gets 1 - alpha; the dense models share alpha (fusion done here)
    weights = [1 - alpha] + [alpha / len(models)] * len(models)
    return native_or_local(target, [word, *(DENSE_PREFIX + m for m in models)], text, k, weights)


class HybridSetups:
    """Keyword (or the engine's sparse vectors) and dense fused, per model and with every model."""

    name: ClassVar[str] = "hybrid"

    def setups(self, target: Target) -> Iterator[Setup]:
        caps = target.capabilities
        if HYBRID not in caps or lexical(target) is None:
            return
        for combo in model_combinations(capability_models(caps, DENSE_PREFIX)):
            run = partial(hybrid_search, target, combo)
            label = f"Hybrid{', fused' + fused_by(target) if fused_by(target) else ''} — {model_label(target, combo)}"
            yield target_setup(target, f"hybrid.{'+'.join(combo)}", "hybrid", label, run, combo)


@hookimpl
def vx_eval_register_setups(register):
    register.add(DenseSetups)
    register.add(HybridSetups)
