"""A retriever given from Python as a setup: its own ranking, and the same reranked by a cross-encoder where
the caller names one (``rerank``: the results' text read from what the retriever returned)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import PASSAGES, RERANKER_PREFIX, RETRIEVER, Query, Setup, Target, capability_models
from vx_eval.plugins.setups.compose import Reranker, target_setup


class RetrieverSetups:
    """One setup per retriever target, and one reranked where the target names a cross-encoder."""

    name: ClassVar[str] = "retriever"

    def setups(self, target: Target) -> Iterator[Setup]:
        if RETRIEVER not in target.capabilities:
            return
        handle = target.handle

        def run(text: str, k: int) -> list:
            return handle.search(Query(text=text, k=k, capability=RETRIEVER))

        yield target_setup(target, "retriever", "retriever", target.name, run)
        rerankers = capability_models(target.capabilities, RERANKER_PREFIX)
        if not rerankers or PASSAGES not in target.capabilities:
            return
        model = rerankers[0]
        reranker, depth = Reranker(target, model), target.search.rerank_depth

        def reranked(text: str, k: int) -> list:
            return reranker.rerank(text, run(text, max(k, depth)), depth, k)

        label = f"{target.name}, reranked by {target.models.label(model)}"
        yield target_setup(target, "retriever_reranked", "retriever", label, reranked, (), model)


@hookimpl
def vx_eval_register_setups(register):
    register.add(RetrieverSetups)
