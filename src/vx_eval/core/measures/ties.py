"""Tie-aware measures: how much of a score depends on how results with equal scores are ordered.

trec_eval orders tied results by id (descending), which is arbitrary: a relevant document that happens to sort
last among ten tied ones scores as if the engine had put it tenth. Following McSherry & Najork ("Computing
information retrieval performance measures efficiently in the presence of tied scores", ECIR 2008), each
measure is also given over every ordering of the tied results:

- **optimistic** and **pessimistic**: within each tie, the better-graded results first (last); every measure
  here is monotone in that, so the two bound the score any tie order could give;
- **expected**: the mean over all orderings, exactly. A measure that sums a weight per place times what sits
  there (precision, recall, F, DCG and nDCG, R-precision, RBP and its residual, mean relevance, judged share)
  is evaluated on the list whose tied places each hold the tie's mean grade and relevance; reciprocal rank
  and average precision have closed forms (the first relevant place of a tie, and each relevant result's
  expected precision, given how many relevant results share its tie); the others (ERR, bpref, the condensed
  measures) are averaged over `SAMPLES` seeded orderings, and say so.

found@k reads the results as the engine returned them, in its own order, so ties do not change it.
"""

from __future__ import annotations

import numpy as np

from vx_eval.core.measures.metrics import Batch, Measure

ORDERS = ("trec", "expected", "optimistic", "pessimistic")
LINEAR = frozenset({"p", "recall", "f1", "f2", "dcg", "ndcg", "rprec", "mean_rel", "judged", "rbp", "rbp_residual"})
"""Measures that add up a weight per place times what the place holds: exact on mean-filled ties."""
CLOSED = frozenset({"mrr", "map"})
JUDGED_FIRST = frozenset({"judged", "rbp_residual"})
"""Measures better with judged results first among equal grades (bpref, the others, the other way round);
for the residual "optimistic" is its smallest: the score most settled."""
UNTOUCHED = frozenset({"found"})
"""Measures that read results as they came back: no tie order applies."""
SAMPLES = 1000


def tie_groups(batch: Batch) -> np.ndarray:
    """For every place, the index of its tie within its row (0, 1, 2, …); places past a list's end get one
    group each after the last. Without scores every place is its own group."""
    n, width = batch.grade.shape
    places = np.arange(width)[None, :].repeat(n, axis=0)
    if batch.score is None:
        return places
    filled = places < batch.length[:, None]
    same = np.zeros((n, width), dtype=bool)
    same[:, 1:] = (batch.score[:, 1:] == batch.score[:, :-1]) & filled[:, 1:]
    return np.cumsum(~same, axis=1) - 1


def has_ties(batch: Batch) -> np.ndarray:
    """Which rows hold a tie of two or more results."""
    groups = tie_groups(batch)
    return (groups[:, -1] + 1 < batch.grade.shape[1]) if batch.grade.shape[1] else np.zeros(len(groups), bool)


def _rebuilt(batch: Batch, order: np.ndarray) -> Batch:
    """The batch with each row's places taken in `order` (a permutation within ties only)."""

    def take(values: np.ndarray) -> np.ndarray:
        return np.take_along_axis(values, order, axis=1)

    return Batch(
        take(batch.grade), take(batch.judged), batch.hit, batch.ideal, batch.n_rel, batch.length, batch.returned,
        batch.threshold, batch.depth, batch.n_judged, None if batch.score is None else take(batch.score),
    )  # fmt: skip


def bound(batch: Batch, optimistic: bool, judged_first: bool = False) -> Batch:
    """Each tie ordered best first (optimistic: higher grade first, and among equal grades the unjudged
    before the judged, which bpref counts against; `judged_first` for the measures that want it the other
    way round) or worst first."""
    groups = tie_groups(batch)
    sign = -1 if optimistic else 1
    rows = np.arange(len(groups))[:, None].repeat(groups.shape[1], axis=1)
    judged_key = batch.judged * (sign if judged_first else -sign)
    keys = (judged_key, batch.grade * sign, groups, rows)
    flat = np.lexsort(tuple(k.ravel() for k in keys))
    order = (flat % groups.shape[1]).reshape(groups.shape) if groups.size else np.zeros_like(groups)
    return _rebuilt(batch, order)


def shuffled(batch: Batch, rng: np.random.Generator) -> Batch:
    """Each tie in a random order."""
    groups = tie_groups(batch)
    rows = np.arange(len(groups))[:, None].repeat(groups.shape[1], axis=1)
    flat = np.lexsort((rng.random(groups.shape).ravel(), groups.ravel(), rows.ravel()))
    order = (flat % groups.shape[1]).reshape(groups.shape) if groups.size else np.zeros_like(groups)
    return _rebuilt(batch, order)


def _group_mean(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    width = values.shape[1]
    codes = (np.arange(len(values))[:, None] * (width + 1) + groups).ravel()
    _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=values.astype(float).ravel())
    return (sums / counts)[inverse].reshape(values.shape)


def mean_filled(batch: Batch) -> Batch:
    """Every tied place holding the tie's mean grade, relevance and judged share (see the module)."""
    groups = tie_groups(batch)
    filled = Batch(
        _group_mean(batch.grade, groups), _group_mean(batch.judged, groups), batch.hit, batch.ideal, batch.n_rel,
        batch.length, batch.returned, batch.threshold, batch.depth, batch.n_judged, batch.score,
    )  # fmt: skip
    filled.__dict__["rel"] = _group_mean(batch.rel, groups)  # relevance spread too (a cached property)
    return filled


def _cutoffs(measure: Measure, batch: Batch) -> np.ndarray:
    n = len(batch.n_rel)
    if measure.per_relevant and measure.k is not None:
        result: np.ndarray = np.maximum(measure.k * batch.n_rel, 1)
        return result
    return np.full(n, np.inf if measure.k is None else float(measure.k))


def _tie_table(batch: Batch) -> tuple[np.ndarray, ...]:
    """Per place: its tie's start, size and relevant count, the relevant results before the tie, its offset
    within the tie, and whether it holds a result (flat views over questions x places)."""
    n, width = batch.grade.shape
    groups = tie_groups(batch)
    filled = np.arange(width)[None, :] < batch.length[:, None]
    codes = (np.arange(n)[:, None] * (width + 1) + groups).ravel()
    _, inverse, size = np.unique(codes, return_inverse=True, return_counts=True)
    rel = np.where(filled, batch.rel, 0).astype(float).ravel()
    relevant = np.bincount(inverse, weights=rel)
    place = np.tile(np.arange(width), n)
    start = np.full(len(size), width, dtype=np.int64)
    np.minimum.at(start, inverse, place)
    row_total = np.cumsum(rel.reshape(n, width), axis=1)
    # relevant results before each tie: the row's running count just before the tie's first place
    running = np.concatenate([np.zeros((n, 1)), row_total[:, :-1]], axis=1).ravel()
    before = running[np.arange(n).repeat(width) * width + np.minimum(start[inverse], width - 1)]
    return (
        start[inverse].reshape(n, width),
        size[inverse].reshape(n, width).astype(float),
        relevant[inverse].reshape(n, width),
        before.reshape(n, width),
        (place - start[inverse]).reshape(n, width).astype(float),
        filled,
    )


def expected_rr(batch: Batch, cutoff: np.ndarray) -> np.ndarray:
    """Reciprocal rank over every order of the ties: within the first tie holding r of its n places
    relevant, the first relevant result is at offset o with probability (r / (n - o)) times the chance that
    the o places before it hold none: the product over j < o of (n - r - j) / (n - j)."""
    start, size, relevant, before, offset, filled = _tie_table(batch)
    width = batch.grade.shape[1]
    place = np.arange(width)[None, :]
    inside = filled & (place < cutoff[:, None])
    first_tie = (relevant > 0) & (before == 0) & inside  # places of the first tie that holds a relevant result
    with np.errstate(divide="ignore", invalid="ignore"):
        # every place before the first relevant tie has factor 1, so the running product is the tie's own
        stays = np.where(first_tie, np.maximum((size - relevant - offset) / (size - offset), 0.0), 1.0)
        reached = np.cumprod(stays, axis=1)
        reached_before = np.concatenate([np.ones((len(start), 1)), reached[:, :-1]], axis=1)
        first_here = np.where(first_tie & (offset <= size - relevant), relevant / (size - offset), 0.0)
        result: np.ndarray = np.nan_to_num(first_here * reached_before / (place + 1)).sum(axis=1)
        return result


def expected_ap(batch: Batch, cutoff: np.ndarray) -> np.ndarray:
    """Average precision over every order of the ties: a place at offset o of a tie (start s, size n, r
    relevant, c relevant before it) holds a relevant result with probability r/n, and then (the o places
    before it hold on average o(r-1)/(n-1) relevant) its precision is (c + 1 + o(r-1)/(n-1)) / (s + o + 1)."""
    _, size, relevant, before, offset, filled = _tie_table(batch)
    place = np.arange(batch.grade.shape[1])[None, :]
    inside = filled & (place < cutoff[:, None]) & (relevant > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(size > 1, (relevant - 1) / (size - 1), 0.0)
        term = relevant / size * (before + 1 + offset * share) / (place + 1)
    total = np.where(inside, term, 0.0).sum(axis=1)
    result: np.ndarray = np.divide(total, batch.n_rel, out=np.zeros_like(total), where=batch.n_rel > 0)
    return result


def expected(measure: Measure, batch: Batch, seed: int = 0) -> tuple[np.ndarray, bool]:
    """The measure's mean over every order of the ties, per row, and whether it was sampled (not exact)."""
    name = measure.definition.name
    if name in UNTOUCHED or batch.score is None:
        return measure.compute(batch), False
    if name in LINEAR:
        return measure.compute(mean_filled(batch)), False
    if name in CLOSED:
        cutoff = _cutoffs(measure, batch)
        values = expected_rr(batch, cutoff) if name == "mrr" else expected_ap(batch, cutoff)
        if measure.per_relevant:  # as `Measure.compute`: a per-R cut-off past the depth is not scored
            values = np.where(cutoff > batch.depth, np.nan, values)
        return values, False
    values = measure.compute(batch)
    tied = np.flatnonzero(has_ties(batch))
    if not len(tied):
        return values, False
    part = batch.take(tied)  # only the lists with ties are shuffled
    rng = np.random.default_rng(seed)
    total = np.zeros(len(tied))
    for _ in range(SAMPLES):
        total += measure.compute(shuffled(part, rng))
    values[tied] = total / SAMPLES
    return values, True


def scores(measure: Measure, batch: Batch, order: str, seed: int = 0) -> np.ndarray:
    """The measure per row under one of `ORDERS`: trec_eval's, the expected, the optimistic or the pessimistic."""
    if order == "trec" or measure.definition.name in UNTOUCHED:
        return measure.compute(batch)
    if order == "expected":
        return expected(measure, batch, seed)[0]
    name = measure.definition.name
    return measure.compute(bound(batch, order == "optimistic", judged_first=name in JUDGED_FIRST))
