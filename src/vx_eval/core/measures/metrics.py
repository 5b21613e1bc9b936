"""The measures: one function each, registered by name with aliases, parsed from text (``ndcg@10``).

Every ranking measure follows trec_eval (``-c``): it reads the list reduced to each unit's first occurrence,
ties in score ordered by unit id descending, and a question with no results scores 0. Only ``found@k``
counts positions as results came back, so a document that fills three of the top ten takes three places.

Measures run over a `Batch` of questions at once (numpy arrays, one row a question), so scoring ten
thousand questions costs what scoring one costs in Python, times a few array operations.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from vx_eval.core.errors import MetricError, did_you_mean, quoted
from vx_eval.core.measures.batch import Batch, Judged, in_order

__all__ = ["REGISTRY", "Batch", "Judged", "Measure", "MetricDef", "check_metrics", "parse", "register"]


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
_ALIASES: dict[str, str] = {}
_TREC_CUT: dict[str, str] = {}


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
        name = _ALIASES.get(match[1]) or _TREC_CUT.get(match[1])
        k = _cutoff(text, match[5]) if match[5] else None
        per_r = bool(match[6])
        given, listed = ((match[2], match[3]) if match[2] else None), match[4]
    if name is None and (match := _TREC_FORM.match(spelled)) and match[1] in _TREC_CUT:
        name, k = _TREC_CUT[match[1]], _cutoff(text, match[2])
    if name is None:
        known = sorted(set(_ALIASES) | set(_TREC_CUT))
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


# ---------------------------------------------------------------------------------------------- measures


def _mask(batch: Batch, k: Cutoff, width: int | None = None) -> np.ndarray:
    """Ranks within each row's cut-off (k: None for the whole list, an int, or one k per row)."""
    width = batch.grade.shape[1] if width is None else width
    ranks = np.arange(width)[None, :]
    if k is None:
        return np.ones((len(batch.n_rel), width), dtype=bool)
    return ranks < (np.asarray(k)[:, None] if np.ndim(k) else k)


def _count(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units within the cut-off (a share of one where `core.measures.ties` spreads a tie's relevance)."""
    result: np.ndarray = (batch.rel * _mask(batch, k)).sum(axis=1)
    return result


def _safe_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(b, dtype=float))
    result: np.ndarray = np.divide(a, b, out=np.zeros_like(a), where=b > 0)
    return result


@register("found", cutoff="required", aliases=("hit", "success", "hit_rate"), trec=("success",))
def found(batch: Batch, k: Cutoff) -> np.ndarray:
    """1 if a relevant unit is among the first k results as they came back (repeats take places), else 0."""
    result: np.ndarray = (batch.hit & _mask(batch, k, batch.hit.shape[1])).any(axis=1).astype(float)
    return result


@register("mrr", cutoff="optional", aliases=("recip_rank", "rr"), trec=("recip_rank",))
def mrr(batch: Batch, k: Cutoff) -> np.ndarray:
    """1 / rank of the first relevant unit in the reduced list (0 if none within k); trec_eval recip_rank."""
    rel = batch.rel & _mask(batch, k)
    first = rel.argmax(axis=1) + 1.0
    return np.where(rel.any(axis=1), 1.0 / first, 0.0)


@register("recall", cutoff="required", aliases=("r",), trec=("recall",))
def recall(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units in the top k / all relevant units (0 when none is relevant)."""
    return _safe_div(_count(batch, k), batch.n_rel)


@register("p", cutoff="required", aliases=("precision",), trec=("p",))
def precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant units in the top k / k (trec_eval P: k, not the number returned, is the denominator)."""
    result: np.ndarray = _count(batch, k) / np.asarray(k, dtype=float)
    return result


def _f_beta(batch: Batch, k: Cutoff, beta: float) -> np.ndarray:
    p, r = precision(batch, k), recall(batch, k)
    b2 = beta * beta
    return _safe_div((1 + b2) * p * r, b2 * p + r)


@register("f1", cutoff="required", aliases=("f",))
def f1(batch: Batch, k: Cutoff) -> np.ndarray:
    """Harmonic mean of precision@k and recall@k (0 when both are 0)."""
    return _f_beta(batch, k, 1.0)


@register("f2", cutoff="required")
def f2(batch: Batch, k: Cutoff) -> np.ndarray:
    """F-beta with beta = 2: 5PR / (4P + R) at k, weighing a missed relevant unit 4x a false positive."""
    return _f_beta(batch, k, 2.0)


@register("map", cutoff="optional", aliases=("ap",), trec=("map_cut",))
def average_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Sum of precision at each relevant unit's rank within k, divided by the number of relevant units."""
    ranks = np.arange(1, batch.grade.shape[1] + 1)[None, :]
    precision_at = batch.rel_cum / ranks
    return _safe_div(in_order(precision_at * (batch.rel & _mask(batch, k))), batch.n_rel)


@register("rprec", cutoff="none", aliases=("r-precision", "r_prec"), trec=("rprec",))
def r_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Precision at rank R, R being the question's number of relevant units (trec_eval Rprec)."""
    return _safe_div(_count(batch, batch.n_rel.astype(int)), batch.n_rel)


def _dcg(gains: np.ndarray, log_rank: np.ndarray, mask: np.ndarray) -> np.ndarray:
    return in_order(np.where(mask & (gains > 0), gains, 0.0) / log_rank[: gains.shape[1]])


@register("dcg", cutoff="optional")
def dcg(batch: Batch, k: Cutoff) -> np.ndarray:
    """Sum over the top k of grade / log2(rank + 1): linear gain, as trec_eval and BEIR."""
    return _dcg(batch.grade, batch.log_rank, _mask(batch, k))


@register("ndcg", cutoff="optional", trec=("ndcg_cut",))
def ndcg(batch: Batch, k: Cutoff) -> np.ndarray:
    """DCG@k over the ideal DCG@k of the question's judged grades (0 when nothing is graded above 0)."""
    ideal = _dcg(batch.ideal, batch.log_rank, _mask(batch, k, batch.ideal.shape[1]))
    return _safe_div(dcg(batch, k), ideal)


@register("mean_rel", cutoff="optional", aliases=("mean_relevance",))
def mean_relevance(batch: Batch, k: Cutoff) -> np.ndarray:
    """Mean grade over the k places of the top k (an empty place and an unjudged unit count 0), as
    ir_measures and ranx compute it; without a cut-off, over the units returned (0 when none came back)."""
    mask = _mask(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    total = np.where(mask, batch.grade, 0).sum(axis=1)
    if k is None:
        return _safe_div(total, mask.sum(axis=1))
    result: np.ndarray = total / np.broadcast_to(np.asarray(k, dtype=float), total.shape)
    return result


@register("judged", cutoff="required")
def judged(batch: Batch, k: Cutoff) -> np.ndarray:
    """Share of the top k units returned that carry a judgement (ir_measures Judged@k)."""
    mask = _mask(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    return _safe_div((batch.judged * mask).sum(axis=1), mask.sum(axis=1))


def _filled(batch: Batch, k: Cutoff) -> np.ndarray:
    """Places within the cut-off that a result fills."""
    return _mask(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])


ERR_MAX_GRADE = 4
"""The grade ERR's stopping probabilities are scaled to, as TREC's gdeval (and ir_measures' ERR) fix it."""


@register("err", cutoff="required", aliases=("expected_reciprocal_rank",))
def err(batch: Batch, k: Cutoff) -> np.ndarray:
    """Expected reciprocal rank (Chapelle et al., 2009): a reader goes down the list and stops at a result
    with probability R = (2^grade - 1) / 2^4, so ERR@k = sum over ranks r <= k of R_r / r times the chance
    of reaching r. Grades are capped at 4 (gdeval's scale), unjudged results count 0; a question with no
    graded unit scores 0. Not normalised: ERR never reaches 1 unless a result's grade is 4 or more."""
    grades = np.clip(np.where(_filled(batch, k), batch.grade, 0.0), 0, ERR_MAX_GRADE)
    stop = (2.0**grades - 1) / 2.0**ERR_MAX_GRADE
    reach = np.cumprod(np.concatenate([np.ones((len(stop), 1)), 1 - stop[:, :-1]], axis=1), axis=1)
    result: np.ndarray = (reach * stop / np.arange(1, stop.shape[1] + 1)[None, :]).sum(axis=1)
    return result


@register("rbp", cutoff="optional", aliases=("rank_biased_precision",), param=("p", 0.8))
def rbp(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """Rank-biased precision (Moffat & Zobel, 2008): (1 - p) times the sum of p^(r-1) over relevant units at
    ranks r (within k), for a reader who goes on to the next result with probability p (default 0.8; write
    ``rbp(p=0.95)``). Binary: relevant means grade >= the threshold. Its residual (`rbp_residual`) says how
    much more it could be if every unjudged result and everything past the list were relevant."""
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    result: np.ndarray = (weights * batch.rel * _mask(batch, k)).sum(axis=1)
    return result


@register("rbp_residual", cutoff="optional", param=("p", 0.8))
def rbp_residual(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """RBP's residual (Moffat & Zobel): the weight of the unjudged results within the list (or its first k)
    plus p^n for all that lies past its n evaluated places: RBP's value lies between itself and itself plus
    this. A run whose residual is large was judged too shallowly for RBP to settle."""
    filled = _filled(batch, k)
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    seen = filled.sum(axis=1)
    result: np.ndarray = (weights * filled * (1 - batch.judged)).sum(axis=1) + p**seen
    return result


@register("bpref", cutoff="none", trec=("bpref",))
def bpref(batch: Batch, k: Cutoff) -> np.ndarray:
    """Binary preference (Buckley & Voorhees, 2004), as trec_eval computes it: for each relevant unit
    retrieved, 1 - (judged non-relevant units ranked above it, at most R) / min(R, N), summed and divided by
    R (N: the question's judged non-relevant units). Unjudged results are ignored, so it holds up on
    incomplete judgements (a judge's pools); 0 when nothing is relevant."""
    n_judged = batch.n_judged if batch.n_judged is not None else batch.n_rel
    nonrel = batch.judged & ~batch.rel
    above = np.cumsum(nonrel, axis=1) - nonrel  # judged non-relevant units ranked above each place
    r = batch.n_rel[:, None]
    bound = np.minimum(r, (n_judged - batch.n_rel)[:, None])
    penalty = _safe_div(np.minimum(above, r), np.broadcast_to(bound, above.shape))
    score = np.where(above > 0, 1.0 - penalty, 1.0)
    return _safe_div(in_order(score * batch.rel), batch.n_rel)


def condensed(batch: Batch) -> Batch:
    """The batch with every unjudged result taken out of each list (Sakai's condensed lists, trec_eval -J)."""
    keep = batch.judged & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
    order = np.argsort(~keep, axis=1, kind="stable")  # judged places first, in their order
    grade = np.take_along_axis(np.where(keep, batch.grade, 0.0), order, axis=1)
    judged = np.take_along_axis(keep, order, axis=1)
    length = keep.sum(axis=1)
    score = None if batch.score is None else np.take_along_axis(np.where(keep, batch.score, -np.inf), order, axis=1)
    hit = (grade >= batch.threshold) & (grade > 0) & judged  # found@k reads the condensed list too (trec_eval -J)
    return Batch(
        grade, judged, hit, batch.ideal, batch.n_rel, length, length,
        batch.threshold, batch.depth, batch.n_judged, score, documents=batch.documents,
    )  # fmt: skip


@register("ndcg_condensed", cutoff="optional", aliases=("cndcg", "ndcg_prime"))
def ndcg_condensed(batch: Batch, k: Cutoff) -> np.ndarray:
    """nDCG′ (Sakai, 2007): nDCG@k over the list with its unjudged results removed, for incomplete judgements
    (trec_eval -J ndcg_cut)."""
    return ndcg(condensed(batch), k)


@register("map_condensed", cutoff="optional", aliases=("cmap", "ap_prime", "map_prime"))
def map_condensed(batch: Batch, k: Cutoff) -> np.ndarray:
    """AP′ (Sakai, 2007): average precision over the list with its unjudged results removed (trec_eval -J map)."""
    result: np.ndarray = average_precision(condensed(batch), k)
    return result


def relevance_distribution(batch: Batch, k: int | None) -> dict[str, float]:
    """Share of all (question, result) pairs in the top k by grade: ``"3"``, ``"2"``, …, ``"unjudged"``."""
    mask = _mask(batch, k) & (np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None])
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


# trec_eval's measures beyond the common ones register themselves here (they use this module's helpers)
from vx_eval.core.measures import trec_only as trecmeasures  # noqa: E402, F401
