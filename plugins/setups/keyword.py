"""Keyword search as a setup: offered by every target whose engine has the ``keyword`` capability."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from vx_eval import hookimpl
from vx_eval.core.engine import KEYWORD, Query, Setup, Target


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
            label="Keyword (BM25)",
            run=run,
        )


@hookimpl
def vx_eval_register_setups(register):
    register.add(KeywordSetups)
