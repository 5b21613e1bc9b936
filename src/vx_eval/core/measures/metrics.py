"""Measures as a config or a command line names them: parsed from text (``ndcg@10``, ``rbp(p=0.8)``,
``ndcg_cut_10``) into a registered definition (`core.measures.registry`) with its cut-off, checked against
a config's depth, averaged over questions as trec_eval averages them.

The measures themselves are functions over a `Batch` of questions at once (numpy arrays, one row a question:
`core.measures.standard` and `core.measures.trec_only`), so scoring ten thousand questions costs what
scoring one costs in Python, times a few array operations.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vx_eval.core.errors import MetricError, did_you_mean, quoted
from vx_eval.core.measures import standard, trec_only  # the measures: imported for their registrations
from vx_eval.core.measures.batch import Batch, Judged, in_order
from vx_eval.core.measures.registry import ALIASES, REGISTRY, TREC_SPELLINGS, Cutoff, MetricDef, register
from vx_eval.core.measures.standard import condensed, within

__all__ = [
    "REGISTRY",
    "Batch",
    "Cutoff",
    "Judged",
    "Measure",
    "MetricDef",
    "check_metrics",
    "condensed",
    "parse",
    "register",
    "standard",
    "trec_only",
]


@dataclass(frozen=True)
class Measure:
    """A parsed measure: a registered definition with its cut-off: ``ndcg@10``, or ``recall@2r`` (k = 2 x R)."""

    definition: MetricDef
    k: int | None = None
    per_relevant: bool = False
    param: float | None = None
    """The definition's own parameter (None: its default)."""
    values: str | None = None
    """The definition's list of values as written (``2,-1,0,0``; None: its default)."""
    name: str = field(init=False)

    def __post_init__(self) -> None:
        suffix = "" if self.k is None else f"@{self.k}{'r' * self.per_relevant}"
        own = self.definition.param
        shown = own and self.param is not None and (self.param != own[1] or self.definition.span != "open")
        spelled = f"({own[0]}={self.param:g})" if shown and own else ""
        listed = "" if self.values is None else f"({self.values})"
        object.__setattr__(self, "name", f"{self.definition.name}{spelled}{listed}{suffix}")

    def _fn(self, batch: Batch, k: Cutoff) -> np.ndarray:
        own, read = self.definition.param, self.definition.values
        if read is not None and self.values is not None:
            return np.asarray(self.definition.fn(batch, k, read(self.values)), dtype=float)
        if own is None:
            return np.asarray(self.definition.fn(batch, k), dtype=float)
        value = own[1] if self.param is None else self.param
        return np.asarray(self.definition.fn(batch, k, value), dtype=float)

    def compute(self, batch: Batch) -> np.ndarray:
        """One value per question; NaN where a per-R cut-off reaches past the depth searched."""
        if not self.per_relevant:
            return self._fn(batch, self.k)
        k = np.maximum(self.k * batch.n_rel, 1).astype(int)
        values = self._fn(batch, k)
        return np.where(k > batch.depth, np.nan, values)

    def __call__(self, judged: Judged, depth: float = float("inf")) -> float:
        return float(self.compute(Batch.of([judged], depth))[0])

    def unscorable(self, judged: Judged, depth: float) -> str | None:
        """Why this measure cannot score a question at this depth, or None."""
        if self.per_relevant and self.k is not None and self.k * max(len(judged.relevant), 1) > depth:
            need = self.k * max(len(judged.relevant), 1)
            return f"{self.name} needs {need} results ({self.k} x {len(judged.relevant)} relevant); depth is {depth:g}"
        return None

    @property
    def depth(self) -> int:
        """How many results a search must return for this measure to be exact (0: any number, or per R)."""
        return 0 if self.per_relevant else (self.k or 0)


_WITH_AT = re.compile(r"^([a-z\d][a-z\d_+-]*?)(?:\(([a-z]+)=([\d.]{1,12})\)|\(([-+\d.,=e]{1,200})\))?(?:@(\d+)(r?))?$")
"""``name``, ``name(p=0.9)`` or ``name(2,-1,0,0)`` (a list of values), then ``@k`` or ``@kr``."""
_TREC_FORM = re.compile(r"^([a-z][a-z0-9_]*?)_(\d+)$")


MAX_CUTOFF = 10_000_000


def _cutoff(text: str, digits: str) -> int:
    """A cut-off's digits as a number; one past any search depth is refused before it is read as one."""
    if len(digits.lstrip("0")) > len(str(MAX_CUTOFF)) or int(digits) > MAX_CUTOFF:
        raise MetricError(f"measure {quoted(text)}: the cut-off is beyond any search depth (at most {MAX_CUTOFF:,})")
    return int(digits)


def parse(text: str) -> Measure:
    """Parse ``ndcg@10``, ``hit@5``, ``recall@2r``, ``mrr``, or trec_eval's ``ndcg_cut_10``, ``P_5``, ``Rprec``."""
    spelled = text.strip().lower().replace("_at_", "@")  # Mixpeek's spelling: recall_at_10, f2_at_2r
    name, k, per_r, given, listed = None, None, False, None, None
    if match := _WITH_AT.match(spelled):
        name = ALIASES.get(match[1]) or TREC_SPELLINGS.get(match[1])
        k = _cutoff(text, match[5]) if match[5] else None
        per_r = bool(match[6])
        given, listed = ((match[2], match[3]) if match[2] else None), match[4]
    if name is None and (match := _TREC_FORM.match(spelled)) and match[1] in TREC_SPELLINGS:
        name, k = TREC_SPELLINGS[match[1]], _cutoff(text, match[2])
    if name is None:
        known = sorted(set(ALIASES) | set(TREC_SPELLINGS))
        base = spelled.split("@")[0]
        raise MetricError(
            f"unknown measure {quoted(text)}{did_you_mean(base, known)} (known: {', '.join(sorted(REGISTRY))}; "
            "write a cut-off as name@k, e.g. ndcg@10, or name@2r for twice the relevant count)"
        )
    definition = REGISTRY[name]
    if definition.cutoff == "required" and k is None:
        raise MetricError(f"measure '{text}' needs a cut-off: write {name}@10 (or another k)")
    if definition.cutoff == "none" and k is not None:
        raise MetricError(f"measure '{name}' takes no cut-off: write {name}")
    if k is not None and k < 1:
        raise MetricError(f"measure '{text}': the cut-off must be at least 1")
    if listed is not None:
        if definition.values is None:
            raise MetricError(f"measure {quoted(text)}: {definition.name} takes no list of values")
        definition.values(listed)  # refuses what it cannot read, before anything is scored
    return Measure(definition, k, per_r, _param(text, definition, given), listed)


def _param(text: str, definition: MetricDef, given: tuple[str, str] | None) -> float | None:
    """A measure's own parameter as written (``rbp(p=0.95)``), checked: a probability strictly inside (0, 1)."""
    if given is None:
        return None
    own = definition.param
    if own is None or given[0] != own[0]:
        takes = f"takes ({own[0]}=…)" if own else "takes no parameter"
        raise MetricError(f"measure {quoted(text)}: {definition.name} {takes}")
    try:
        value = float(given[1])
    except ValueError:
        raise MetricError(f"measure {quoted(text)}: {own[0]} must be a number, such as {own[1]:g}") from None
    allowed = {
        "open": (0 < value < 1, "strictly between 0 and 1"),
        "closed": (0 <= value <= 1, "between 0 and 1"),
        "positive": (0 < value < 1e6, "above 0"),
    }
    ok, where = allowed[definition.span]
    if not ok:
        raise MetricError(f"measure {quoted(text)}: {own[0]} must lie {where}")
    return value


MIN_GEO_MEAN = 0.00001
"""The least value a geometric average takes the log of (trec_eval's MIN_GEO_MEAN): one zero would make
the whole average zero."""


def average(measure: Measure, values: np.ndarray) -> float:
    """The run's value of `measure` over its questions' `values` (NaN left out): their mean, or for a
    geometric measure the mean of their logs (each at least `MIN_GEO_MEAN`), exponentiated; summed in the
    order given, as trec_eval sums them (`in_order`)."""
    kept = np.asarray(values, dtype=float)
    kept = kept[~np.isnan(kept)]
    if not len(kept):
        return float("nan")
    if measure.definition.average == "geometric":
        return float(np.exp(in_order(np.log(np.maximum(kept, MIN_GEO_MEAN))) / len(kept)))
    if measure.definition.average == "sum":
        return float(kept.sum())
    return float(in_order(kept) / len(kept))


def check_metrics(names: object, primary: object, depth: int | None) -> list[tuple[tuple[Any, ...], str]]:
    """Problems with an ``evaluation:`` block's measures, each with its YAML location.

    `names` and `primary` are read raw (None when absent); the depth check runs when `depth` is known.
    """
    problems: list[tuple[tuple[Any, ...], str]] = []
    listed = names if isinstance(names, list) else []  # another type is a type error pydantic names
    spelled: list[tuple[tuple[Any, ...], str]] = [
        (("evaluation", "metrics", i), m) for i, m in enumerate(listed) if isinstance(m, str)
    ]
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


def relevance_distribution(batch: Batch, k: int | None) -> dict[str, float]:
    """Share of all (question, result) pairs in the top k by grade: ``"3"``, ``"2"``, …, ``"unjudged"``."""
    mask = within(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    total = int(mask.sum())
    if not total:
        return {}
    grades, counts = np.unique(batch.grade[mask & batch.judged].astype(int), return_counts=True)
    shares = {str(g): int(c) / total for g, c in zip(grades, counts, strict=True)}
    shares["unjudged"] = int((mask & ~batch.judged).sum()) / total
    return shares


def expand_cutoffs(names: Sequence[str], k_values: Sequence[int]) -> list[str]:
    """Measures named without a cut-off taken at each of `k_values` (Mixpeek's ``k_values``): ``recall`` with
    [5, 10] is recall@5 and recall@10; a name with its cut-off (or with no k_values) is kept as it is."""
    out: list[str] = []
    for name in names:
        if k_values and "@" not in name and "_" not in name.strip("_"):
            out += [f"{name}@{k}" for k in k_values]
        else:
            out.append(name)
    return list(dict.fromkeys(out))
