"""Dense and hybrid setups: each dense model alone, the models fused, and keyword + dense fused."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.core.engine import DENSE_PREFIX, HYBRID, KEYWORD, Query, Setup, Target, capability_models
from vx_eval.plugins.setups.compose import fuse, target_setup


def model_label(target: Target, models: list[str]) -> str:
    return " + ".join(target.models.label(m) if target.models else m for m in models)


def model_combinations(models: list[str]) -> list[list[str]]:
    """Each model alone, then all of them together (when there are several)."""
    return [[m] for m in models] + ([models] if len(models) > 1 else [])


def dense_search(target: Target, models: list[str], text: str, k: int) -> list:
    depth = max(k, target.search.candidates) if len(models) > 1 else k
    lists = [target.handle.search(Query(text, depth, DENSE_PREFIX + m)) for m in models]
    return lists[0][:k] if len(lists) == 1 else fuse(lists, k, target.search)


class DenseSetups:
    """Dense search per model; with several models, also every model fused by reciprocal rank."""

    name: ClassVar[str] = "dense"

    def setups(self, target: Target) -> Iterator[Setup]:
        models = capability_models(target.capabilities, DENSE_PREFIX)
        for combo in model_combinations(models):
            label = f"Dense{', fused' if len(combo) > 1 else ''} — {model_label(target, combo)}"
            run = partial(dense_search, target, combo)
            yield target_setup(target, f"dense.{'+'.join(combo)}", "dense", label, run, combo)


def hybrid_search(target: Target, models: list[str], text: str, k: int) -> list:
    depth = max(k, target.search.candidates)
    lists = [target.handle.search(Query(text, depth, KEYWORD))]
    lists += [target.handle.search(Query(text, depth, DENSE_PREFIX + m)) for m in models]
    alpha = target.search.alpha  # keyword gets 1 - alpha; the dense models share alpha
    return fuse(lists, k, target.search, [1 - alpha] + [alpha / len(models)] * len(models))


class HybridSetups:
    """Keyword and dense fused by reciprocal rank, per model and with every model, on hybrid targets."""

    name: ClassVar[str] = "hybrid"

    def setups(self, target: Target) -> Iterator[Setup]:
        caps = target.capabilities
        if HYBRID not in caps or KEYWORD not in caps:
            return
        for combo in model_combinations(capability_models(caps, DENSE_PREFIX)):
            run = partial(hybrid_search, target, combo)
            yield target_setup(
                target, f"hybrid.{'+'.join(combo)}", "hybrid", f"Hybrid — {model_label(target, combo)}", run, combo
            )


@hookimpl
def vx_eval_register_setups(register):
    register.add(DenseSetups)
    register.add(HybridSetups)
