"""Keyword search as a setup: offered by every target whose engine has the ``keyword`` capability."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.plugin import KEYWORD, SPARSE_PREFIX, Query, Setup, Target, capability_models


class KeywordSetups:
    """One setup per target: the engine's own keyword ranking (BM25 on the embedded engine)."""

    name: ClassVar[str] = "keyword"

    def setups(self, target: Target) -> Iterator[Setup]:
        if KEYWORD not in target.capabilities:
            return
        handle = target.handle

        def run(text: str, k: int) -> list:
            return handle.search(Query(text=text, k=k, capability=KEYWORD))

        yield Setup(
            key=f"{target.key}.keyword",
            target=target.name,
            engine=target.engine,
            method="keyword",
            label=f"Keyword ({getattr(handle, 'keyword_ranking', None) or 'BM25'})",
            run=run,
        )


class SparseSetups:
    """One setup per sparse vector set the engine holds (Qdrant's ``bm25``: BM25 ranked by the engine)."""

    name: ClassVar[str] = "sparse"

    def setups(self, target: Target) -> Iterator[Setup]:
        handle = target.handle
        for name in capability_models(target.capabilities, SPARSE_PREFIX):

            def run(text: str, k: int, capability: str = SPARSE_PREFIX + name) -> list:
                return handle.search(Query(text=text, k=k, capability=capability))

            label = "Sparse BM25 vectors" if name == "bm25" else f"Sparse vectors — {name}"
            yield Setup(f"{target.key}.sparse.{name}", target.name, target.engine, "sparse", label, run)


@hookimpl
def vx_eval_register_setups(register):
    register.add(KeywordSetups)
    register.add(SparseSetups)
