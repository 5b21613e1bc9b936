"""The registry of measures: each measure's definition (its name, aliases, trec_eval spellings, cut-off and
parameter) added by the `register` decorator where the measure is written (`core.measures.standard`,
`core.measures.trec_only`), and read by `core.measures.metrics.parse`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from vx_eval.core.errors import MetricError

Cutoff = int | np.ndarray | None
MetricFn = Callable[..., np.ndarray]
"""``fn(batch, k)``, or ``fn(batch, k, param)`` for a measure with a parameter of its own (or a list of
values, where one is given)."""
F = TypeVar("F", bound=MetricFn)


@dataclass(frozen=True)
class MetricDef:
    """A registered measure: its canonical name, whether it takes a cut-off, its function and aliases."""

    name: str
    fn: MetricFn
    cutoff: str  # "required", "optional" or "none"
    aliases: tuple[str, ...] = ()
    trec: tuple[str, ...] = ()  # trec_eval spellings: "ndcg_cut" for ndcg_cut_10, "recip_rank" alone
    param: tuple[str, float] | None = None
    """A measure's own parameter, its name and default (RBP's persistence ``p``: ``rbp(p=0.95)``); the
    function then takes it as a third argument."""
    span: str = "open"
    """Where the parameter may lie: ``open`` strictly between 0 and 1 (a persistence), ``closed`` from 0 to
    1 (a recall level), ``positive`` above 0 (a multiple of R)."""
    average: str = "mean"
    """How questions' values make the run's: ``mean``; ``geometric`` (trec_eval's gm_map: the mean of
    log(max(value, 0.00001)), exponentiated); ``sum`` (a count, as trec_eval's num_nonrel_judged_ret)."""
    values: Callable[[str], Any] | None = None
    """Reads a measure's list of values as written (utility's coefficients ``utility(2,-1,0,0)``, nDCG's
    gains ``ndcg(1=3,2=9)``), refusing what it cannot read; the function then takes what it returns."""

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


REGISTRY: dict[str, MetricDef] = {}
ALIASES: dict[str, str] = {}
TREC_SPELLINGS: dict[str, str] = {}


def register(
    name: str,
    *,
    cutoff: str,
    aliases: Iterable[str] = (),
    trec: Iterable[str] = (),
    param: tuple[str, float] | None = None,
    span: str = "open",
    average: str = "mean",
    values: Callable[[str], Any] | None = None,
) -> Callable[[F], F]:
    """Register a measure function under `name`; aliases and trec_eval spellings parse to it too."""

    def add(fn: F) -> F:
        definition = MetricDef(name, fn, cutoff, tuple(aliases), tuple(trec), param, span, average, values)
        for spelling in (name, *definition.aliases):
            if spelling in ALIASES:
                raise MetricError(f"measure name '{spelling}' is registered twice")
            ALIASES[spelling] = name
        for spelling in definition.trec:
            TREC_SPELLINGS[spelling] = name
        REGISTRY[name] = definition
        return fn

    return add
