"""The measures: one pure function each, registered by name with aliases, parsed from text (``ndcg@10``).

Every ranking measure follows trec_eval (``-c``): it reads the list reduced to each unit's first occurrence,
ties in score ordered by unit id descending, and a question with no results scores 0. Only ``found@k``
counts positions as results came back, so a document that fills three of the top ten takes three places.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from vx_eval.core.errors import MetricError, did_you_mean


@dataclass(frozen=True)
class Judged:
    """One question's results read against its judgements.

    `returned`: units in the order results came back (a unit may repeat). `ranked`: each unit once, in
    trec_eval order. `grades`: judged units and their grades (0 = judged not relevant). A unit counts as
    relevant for binary measures when its grade is at least `threshold`.
    """

    returned: tuple[str, ...]
    ranked: tuple[str, ...]
    grades: Mapping[str, int]
    threshold: int = 1

    @cached_property
    def relevant(self) -> frozenset[str]:
        return frozenset(u for u, g in self.grades.items() if g >= self.threshold)


MetricFn = Callable[[Judged, "int | None"], float]


@dataclass(frozen=True)
class MetricDef:
    """A registered measure: its canonical name, whether it takes a cut-off, its function and aliases."""

    name: str
    fn: MetricFn
    cutoff: str  # "required", "optional" or "none"
    aliases: tuple[str, ...] = ()
    trec: tuple[str, ...] = ()  # trec_eval spellings: "ndcg_cut" for ndcg_cut_10, "recip_rank" alone

    @property
    def doc(self) -> str:
        return (self.fn.__doc__ or "").strip()


REGISTRY: dict[str, MetricDef] = {}
_ALIASES: dict[str, str] = {}
_TREC_CUT: dict[str, str] = {}


def register(
    name: str, *, cutoff: str, aliases: Iterable[str] = (), trec: Iterable[str] = ()
) -> Callable[[MetricFn], MetricFn]:
    """Register a measure function under `name`; aliases and trec_eval spellings parse to it too."""

    def add(fn: MetricFn) -> MetricFn:
        definition = MetricDef(name, fn, cutoff, tuple(aliases), tuple(trec))
        for spelling in (name, *definition.aliases):
            if spelling in _ALIASES:
                raise MetricError(f"measure name '{spelling}' is registered twice")
            _ALIASES[spelling] = name
        for spelling in definition.trec:
            _TREC_CUT[spelling] = name
        REGISTRY[name] = definition
        return fn

    return add


@dataclass(frozen=True)
class Measure:
    """A parsed measure: a registered definition with its cut-off, e.g. ``ndcg@10``."""

    definition: MetricDef
    k: int | None = None
    name: str = field(init=False)

    def __post_init__(self) -> None:
        suffix = f"@{self.k}" if self.k is not None else ""
        object.__setattr__(self, "name", f"{self.definition.name}{suffix}")

    def __call__(self, judged: Judged) -> float:
        return self.definition.fn(judged, self.k)

    @property
    def depth(self) -> int:
        """How many results a search must return for this measure to be exact (0: any number)."""
        return self.k or 0


_WITH_AT = re.compile(r"^([a-z][a-z0-9_-]*?)(?:@(\d+))?$")
_TREC_FORM = re.compile(r"^([a-z][a-z0-9_]*?)_(\d+)$")


def parse(text: str) -> Measure:
    """Parse ``ndcg@10``, ``hit@5``, ``mrr``, or trec_eval's ``ndcg_cut_10``, ``P_5``, ``recip_rank``."""
    spelled = text.strip().lower()
    name, k = None, None
    if match := _WITH_AT.match(spelled):
        name = _ALIASES.get(match[1]) or _TREC_CUT.get(match[1])
        k = int(match[2]) if match[2] else None
    if name is None and (match := _TREC_FORM.match(spelled)) and match[1] in _TREC_CUT:
        name, k = _TREC_CUT[match[1]], int(match[2])
    if name is None:
        known = sorted(set(_ALIASES) | set(_TREC_CUT))
        base = spelled.split("@")[0]
        raise MetricError(
            f"unknown measure '{text}'{did_you_mean(base, known)} (known: {', '.join(sorted(REGISTRY))}; "
            "write a cut-off as name@k, e.g. ndcg@10)"
        )
    definition = REGISTRY[name]
    if definition.cutoff == "required" and k is None:
        raise MetricError(f"measure '{text}' needs a cut-off: write {name}@10 (or another k)")
    if definition.cutoff == "none" and k is not None:
        raise MetricError(f"measure '{name}' takes no cut-off: write {name}")
    if k is not None and k < 1:
        raise MetricError(f"measure '{text}': the cut-off must be at least 1")
    return Measure(definition, k)


def check_metrics(names: Any, primary: Any, depth: int | None) -> list[tuple[tuple[Any, ...], str]]:
    """Problems with an ``evaluation:`` block's measures, each with its YAML location.

    `names` and `primary` are read raw (None when absent); the depth check runs when `depth` is known.
    """
    problems: list[tuple[tuple[Any, ...], str]] = []
    spelled = [(("evaluation", "metrics", i), m) for i, m in enumerate(names or []) if isinstance(m, str)]
    if isinstance(primary, str):
        spelled.append((("evaluation", "primary"), primary))
    for loc, text in spelled:
        try:
            measure = parse(text)
        except MetricError as exc:
            problems.append((loc, str(exc)))
            continue
        if depth is not None and measure.depth > depth:
            problems.append(
                (
                    loc,
                    f"{measure.name} reads {measure.depth} results but evaluation.depth is {depth}; "
                    f"set depth: {measure.depth} or more",
                )
            )
    return problems


# ---------------------------------------------------------------------------------------------- measures


def _cut(ranked: tuple[str, ...], k: int | None) -> tuple[str, ...]:
    return ranked if k is None else ranked[:k]


@register("found", cutoff="required", aliases=("hit", "success", "hit_rate"), trec=("success",))
def found(j: Judged, k: int | None) -> float:
    """1 if a relevant unit is among the first k results as they came back (repeats take places), else 0."""
    return float(any(u in j.relevant for u in _cut(j.returned, k)))


@register("mrr", cutoff="optional", aliases=("recip_rank", "rr"), trec=("recip_rank",))
def mrr(j: Judged, k: int | None) -> float:
    """1 / rank of the first relevant unit in the reduced list (0 if none within k); trec_eval recip_rank."""
    for rank, unit in enumerate(_cut(j.ranked, k), start=1):
        if unit in j.relevant:
            return 1.0 / rank
    return 0.0


@register("recall", cutoff="required", aliases=("r",), trec=("recall",))
def recall(j: Judged, k: int | None) -> float:
    """Relevant units in the top k / all relevant units (0 when none is relevant)."""
    if not j.relevant:
        return 0.0
    return sum(u in j.relevant for u in _cut(j.ranked, k)) / len(j.relevant)


@register("p", cutoff="required", aliases=("precision",), trec=("p",))
def precision(j: Judged, k: int | None) -> float:
    """Relevant units in the top k / k (trec_eval P: k, not the number returned, is the denominator)."""
    k = k or max(len(j.ranked), 1)  # the parser always gives p a cut-off
    return sum(u in j.relevant for u in j.ranked[:k]) / k


@register("map", cutoff="optional", aliases=("ap",), trec=("map_cut",))
def average_precision(j: Judged, k: int | None) -> float:
    """Sum of precision at each relevant unit's rank within k, divided by the number of relevant units."""
    if not j.relevant:
        return 0.0
    hits, total = 0, 0.0
    for rank, unit in enumerate(_cut(j.ranked, k), start=1):
        if unit in j.relevant:
            hits += 1
            total += hits / rank
    return total / len(j.relevant)


def _dcg(gains: Iterable[float]) -> float:
    return sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1) if g > 0)


@register("dcg", cutoff="optional", trec=())
def dcg(j: Judged, k: int | None) -> float:
    """Sum over the top k of grade / log2(rank + 1), linear gain as trec_eval and BEIR."""
    return _dcg(j.grades.get(u, 0) for u in _cut(j.ranked, k))


@register("ndcg", cutoff="optional", trec=("ndcg_cut",))
def ndcg(j: Judged, k: int | None) -> float:
    """DCG@k over the ideal DCG@k of the judged grades (0 when nothing is graded above 0)."""
    ideal = _dcg(_cut(tuple(sorted(j.grades.values(), reverse=True)), k))
    return dcg(j, k) / ideal if ideal > 0 else 0.0
