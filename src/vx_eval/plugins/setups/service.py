"""Setups that end in a ranker the service runs itself (Azure AI Search's semantic ranker), chosen search
by search: keyword + the ranker, and each hybrid (fused by the service) + the ranker."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import (
    DENSE_PREFIX,
    FUSION,
    HYBRID,
    KEYWORD,
    SERVICE_RANKER_PREFIX,
    Query,
    Setup,
    Target,
    capability_models,
)
from vx_eval.plugins.setups.compose import target_setup
from vx_eval.plugins.setups.dense import model_combinations, model_label


class ServiceRankedSetups:
    """Keyword, and hybrid per model combination, each reordered by the service's own ranker."""

    name: ClassVar[str] = "service-ranked"

    def setups(self, target: Target) -> Iterator[Setup]:
        caps = target.capabilities
        handle = target.handle
        for ranker in capability_models(caps, SERVICE_RANKER_PREFIX):
            title = "the semantic ranker" if ranker == "semantic" else f"the {ranker} ranker"
            if KEYWORD in caps:

                def keyword(text: str, k: int, ranker: str = ranker) -> list:
                    return handle.search(Query(text, k, KEYWORD, ranker=ranker))

                yield target_setup(target, f"keyword_{ranker}", "keyword", f"Keyword + {title}", keyword, ranker=ranker)
            if HYBRID not in caps or FUSION not in caps or KEYWORD not in caps:
                continue
            for combo in model_combinations(capability_models(caps, DENSE_PREFIX)):
                parts = (KEYWORD, *(DENSE_PREFIX + m for m in combo))

                def hybrid(text: str, k: int, parts: tuple = parts, ranker: str = ranker) -> list:
                    return handle.search(Query(text, k, FUSION, parts=parts, ranker=ranker))

                label = f"Hybrid + {title} — {model_label(target, combo)}"
                yield target_setup(target, f"hybrid_{ranker}.{'+'.join(combo)}", "hybrid", label, hybrid, combo, ranker)


@hookimpl
def vx_eval_register_setups(register):
    register.add(ServiceRankedSetups)
