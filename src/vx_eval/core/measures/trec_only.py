"""trec_eval's measures beyond the common ones, written from its definitions (its ``m_*.c`` files in
trec_eval 10.0) over the same `Batch` as every other measure: vectorised where the definition allows, a loop
per question where trec_eval walks down gain levels (G, Rndcg) or counts as it goes (infAP). Each one's
docstring says what it computes; ``gm_map`` and ``gm_bpref`` average geometrically, ``num_nonrel_judged_ret``
sums, and `relevance_strings` gives trec_eval's relstring, which is text, not a number."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from vx_eval.core.errors import MetricError, quoted
from vx_eval.core.measures.batch import Batch, in_order, powers
from vx_eval.core.measures.registry import Cutoff, register
from vx_eval.core.measures.standard import average_precision, bpref, filled_places, relevant_within, safe_div

IPREC_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""trec_eval's recall levels for iprec_at_recall when none are named (its standard 11-point graph)."""


@register("gm_map", cutoff="none", trec=("gm_map",), average="geometric")
def gm_map(batch: Batch, k: Cutoff) -> np.ndarray:
    """Average precision per question; over the questions, its geometric mean (each value at least 0.00001),
    which a single question near zero pulls down far more than the arithmetic mean map (trec_eval gm_map)."""
    return average_precision(batch, None)


@register("iprec", cutoff="none", aliases=("iprec_at_recall",), param=("recall", 0.0), span="closed")
def interpolated_precision(batch: Batch, k: Cutoff, level: float) -> np.ndarray:
    """Interpolated precision at a recall level (trec_eval iprec_at_recall): the best precision at any rank
    from the one where round(level x R) relevant units have been found (the first relevant for level 0) to
    the end of the list; 0 where the list finds fewer relevant units than that."""
    width = batch.grade.shape[1]
    if width == 0:
        return np.zeros(len(batch.n_rel))
    ranks = np.arange(1, width + 1)[None, :]
    inside = filled_places(batch, None)
    precision = np.where(inside, batch.rel_cum / ranks, -np.inf)
    best_from = np.maximum.accumulate(precision[:, ::-1], axis=1)[:, ::-1]  # the best at this rank or below
    found = (batch.rel & inside).sum(axis=1)
    needed = np.floor(level * batch.n_rel + 0.5).astype(int)  # C's lround: halves away from zero
    nth = np.maximum(needed, 1)
    reached = (batch.rel_cum >= nth[:, None]) & inside
    where = np.argmax(reached, axis=1)  # the place of the nth relevant unit (its first reaching place)
    value = best_from[np.arange(len(where)), where]
    ok = (found > 0) & (needed <= found) & reached.any(axis=1)
    return np.where(ok, np.maximum(value, 0.0), 0.0)


def _retrieved(batch: Batch) -> tuple[np.ndarray, np.ndarray]:
    """Each question's results and relevant results retrieved (its whole list)."""
    return batch.length.astype(float), relevant_within(batch, None).astype(float)


@register("set_p", cutoff="none", trec=("set_p",))
def set_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Precision over the whole list: relevant retrieved / retrieved (trec_eval set_P)."""
    ret, rel_ret = _retrieved(batch)
    return safe_div(rel_ret, ret)


@register("set_recall", cutoff="none", trec=("set_recall",))
def set_recall(batch: Batch, k: Cutoff) -> np.ndarray:
    """Recall over the whole list: relevant retrieved / relevant (trec_eval set_recall)."""
    _, rel_ret = _retrieved(batch)
    return safe_div(rel_ret, batch.n_rel.astype(float))


@register("set_relative_p", cutoff="none", trec=("set_relative_p",))
def set_relative_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Set precision over the best it could be for a list this long: relevant retrieved / min(retrieved, R)
    (trec_eval set_relative_P)."""
    ret, rel_ret = _retrieved(batch)
    return safe_div(rel_ret, np.minimum(ret, batch.n_rel)) * ((ret > 0) & (batch.n_rel > 0))


@register("set_map", cutoff="none", trec=("set_map",))
def set_map(batch: Batch, k: Cutoff) -> np.ndarray:
    """Unranked average precision: set precision x set recall (trec_eval set_map)."""
    ret, rel_ret = _retrieved(batch)
    return safe_div(rel_ret * rel_ret, ret * batch.n_rel)


def read_weight(text: str) -> tuple[float]:
    """set_F's weight of recall against precision as written (``0.5``): one number, trec_eval's x."""
    values = _numbers(text, "set_F's weight", "0.5")
    if len(values) != 1:
        raise MetricError(f"set_F's weight {quoted(text)}: give one number (recall's weight against precision)")
    return (values[0],)


@register("set_f", cutoff="none", trec=("set_f",), values=read_weight)
def set_f(batch: Batch, k: Cutoff, weights: tuple[float, ...] = (1.0,)) -> np.ndarray:
    """The weighted harmonic mean of set precision and set recall, (x + 1)PR / (xP + R), x recall's weight
    (trec_eval set_F; x = 1 by default: 2PR / (P + R); ``set_f(0.5)`` or trec_eval's ``set_F.0.5`` for another)."""
    ret, rel_ret = _retrieved(batch)
    p, r = safe_div(rel_ret, ret), safe_div(rel_ret, batch.n_rel.astype(float))
    x = weights[0]
    return np.where(rel_ret > 0, safe_div((x + 1.0) * p * r, x * p + r), 0.0)


@register("relative_p", cutoff="required", trec=("relative_p",))
def relative_precision(batch: Batch, k: Cutoff) -> np.ndarray:
    """Relevant in the first k over the most there could be, min(k, R) (trec_eval relative_P)."""
    assert k is not None  # a cut-off is required
    return safe_div(relevant_within(batch, k), np.minimum(k, batch.n_rel))


@register("gm_bpref", cutoff="none", trec=("gm_bpref",), average="geometric")
def gm_bpref(batch: Batch, k: Cutoff) -> np.ndarray:
    """bpref per question; over the questions, its geometric mean (each value at least 0.00001), as
    trec_eval's gm_bpref."""
    return bpref(batch, None)


def _numbers(text: str, what: str, example: str) -> list[float]:
    """A list of values as written (``2,-1,0,0``), each a number."""
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise MetricError(f"{what} {quoted(text)} is not a list of numbers (write e.g. {example})") from None


def read_levels(text: str) -> tuple[float, ...]:
    """Recall levels as written (``.25,.5,.75``), each from 0 to 1."""
    levels = tuple(_numbers(text, "recall levels", ".2,.5,.8"))
    if any(not 0 <= v <= 1 for v in levels):
        raise MetricError(f"recall levels {quoted(text)}: each must lie between 0 and 1")
    return levels


@register("iprec_avg", cutoff="none", aliases=("11pt_avg",), values=read_levels)
def eleven_point_average(batch: Batch, k: Cutoff, levels: tuple[float, ...] = IPREC_LEVELS) -> np.ndarray:
    """The mean of the interpolated precision at the eleven recall levels 0, 0.1, ..., 1 (trec_eval 11pt_avg),
    or at the levels given: ``iprec_avg(.2,.5,.8)`` is trec_eval's ``11pt_avg.0.2,0.5,0.8``, the old 3-point
    average."""
    each = np.column_stack([interpolated_precision(batch, None, level) for level in reversed(levels)])
    return in_order(each) / len(levels)  # added from the last level down, as trec_eval adds them


RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
"""trec_eval's multiples of R for Rprec_mult when none are named."""


@register("rprec_mult", cutoff="none", param=("m", 1.0), span="positive")
def r_precision_multiple(batch: Batch, k: Cutoff, m: float) -> np.ndarray:
    """Precision at m x R results (R: the question's relevant units; m x R + 0.9 cut to a whole number, as
    trec_eval's Rprec_mult computes it); 0 where that is no result at all."""
    cut = np.floor(m * batch.n_rel + 0.9).astype(int)
    return safe_div(relevant_within(batch, cut), cut)


@register("unj", cutoff="required", trec=("unj",))
def unjudged(batch: Batch, k: Cutoff) -> np.ndarray:
    """The share of the first k places that hold an unjudged result, over k (a list shorter than k counts
    its missing places as judged: trec_eval unj)."""
    result: np.ndarray = (filled_places(batch, k) & ~batch.judged).sum(axis=1) / np.asarray(k, dtype=float)
    return result


def read_coefficients(text: str) -> tuple[float, float, float, float]:
    """utility's four coefficients as written (``2,-1,0,0``)."""
    values = _numbers(text, "utility's coefficients", "2,-1,0,0")
    if len(values) != 4:
        raise MetricError(f"utility's coefficients {quoted(text)}: give four (relevant and non-relevant retrieved, "
                          "then relevant and non-relevant not retrieved), e.g. 2,-1,0,0")  # fmt: skip
    return values[0], values[1], values[2], values[3]


@register("utility", cutoff="none", trec=("utility",), values=read_coefficients)
def utility(batch: Batch, k: Cutoff, weights: tuple[float, ...] = (1.0, -1.0, 0.0, 0.0)) -> np.ndarray:
    """A weighted count of the contingency table (trec_eval utility): by default relevant results retrieved
    minus non-relevant ones; ``utility(2,-1,0,0)`` weighs relevant retrieved, non-relevant retrieved, relevant
    missed and non-relevant left out (which needs the collection's size, trec_eval -N), in that order."""
    ret, rel_ret = _retrieved(batch)
    rel = batch.n_rel.astype(float)
    left_out = batch.documents + rel_ret - ret - rel
    result: np.ndarray = (
        weights[0] * rel_ret + weights[1] * (ret - rel_ret) + weights[2] * (rel - rel_ret) + weights[3] * left_out
    )
    return result


@register("num_nonrel_judged_ret", cutoff="none", trec=("num_nonrel_judged_ret",), average="sum")
def nonrelevant_judged_retrieved(batch: Batch, k: Cutoff) -> np.ndarray:
    """Judged non-relevant results retrieved, a count; summed over the questions (trec_eval's)."""
    result: np.ndarray = (filled_places(batch, None) & batch.judged & ~batch.rel).sum(axis=1).astype(float)
    return result


@register("bin_g", cutoff="none", aliases=("bing",), trec=("bing",))
def binary_g(batch: Batch, k: Cutoff) -> np.ndarray:
    """trec_eval's binG: over the relevant units, 1 / log2(2 + the non-relevant results ranked above each one
    found), summed and divided by R; 0 when none is found."""
    found = batch.rel & filled_places(batch, None)
    nonrel_above = np.arange(1, batch.grade.shape[1] + 1)[None, :] - batch.rel_cum
    terms = np.where(found, 1.0 / np.log2(2.0 + nonrel_above), 0.0)
    return safe_div(in_order(terms), batch.n_rel.astype(float))


@register("rbp_trec", cutoff="none", param=("p", 0.9))
def rbp_trec(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """trec_eval's rbp, which differs from vx-eval's ``rbp``: persistence 0.9 by default, and graded gains,
    each result's grade over the question's highest judged grade where that is above 1 (trec_eval scales
    gains into [0, 1]); an unjudged result gains nothing. ``vx-eval eval --trec-format -m rbp`` gives this."""
    top = batch.ideal[:, 0] if batch.ideal.shape[1] else np.zeros(len(batch.n_rel))
    scale = np.where(top > 1, top, 1.0)
    gains = np.where(filled_places(batch, None), batch.grade, 0.0) / scale[:, None]
    return (1 - p) * in_order(gains * powers(p, batch.grade.shape[1])[None, :])


@register("rbp_trec_resid", cutoff="none", param=("p", 0.9))
def rbp_trec_residual(batch: Batch, k: Cutoff, p: float) -> np.ndarray:
    """trec_eval's rbp_resid: where the list holds an unjudged result, p^n (n results) plus (1 - p) times the
    sum of p^(r-1) over the unjudged results' ranks r; 0 where every result is judged."""
    unjudged = filled_places(batch, None) & ~batch.judged
    weights = powers(p, batch.grade.shape[1] + 1)
    value = weights[batch.length] + (1 - p) * in_order(weights[None, :-1] * unjudged)
    return np.where(unjudged.any(axis=1), value, 0.0)


def _walks(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """What trec_eval's gain-level measures walk, one row a question: the gains as retrieved (0 where
    unjudged or past the list), the ideal gains (every positive grade, best first, then 0), both one place
    longer than the longer of the two, and what a gain is divided by at each place, log2(place + 2)."""
    width = max(batch.grade.shape[1], batch.ideal.shape[1]) + 1
    got = np.zeros((len(batch.n_rel), width))
    got[:, : batch.grade.shape[1]] = np.where(filled_places(batch, None) & batch.judged, batch.grade, 0.0)
    ideal = np.zeros_like(got)
    ideal[:, : batch.ideal.shape[1]] = np.maximum(batch.ideal, 0.0)
    return got, ideal, np.log2(np.arange(width) + 2.0), (ideal > 0).sum(axis=1)


def _gain_sums(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_walks`' gains as retrieved, the running DCG of the list and of the ideal list, and how many positive
    grades there are."""
    got, ideal, log_place, positive = _walks(batch)
    return got, np.cumsum(got / log_place, axis=1), np.cumsum(ideal / log_place, axis=1), positive


@register("ndcg_rel", cutoff="none", trec=("ndcg_rel",))
def ndcg_rel(batch: Batch, k: Cutoff) -> np.ndarray:
    """trec_eval's ndcg_rel: nDCG averaged over the relevant units (grade above 0), taken at each one's place
    where it is retrieved (the ideal DCG over as many places, at most all the positive grades) and at the
    list's end for each one not retrieved."""
    gains, dcg, ideal, positive = _gain_sums(batch)
    rows = np.arange(len(positive))
    width = gains.shape[1]
    at = np.minimum(np.arange(width)[None, :], np.maximum(positive - 1, 0)[:, None])
    ideal_here = np.take_along_axis(ideal, at, axis=1)
    found = gains > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        along = in_order(np.where(found, dcg / ideal_here, 0.0))
        last = np.maximum(batch.length - 1, 0)
        full = ideal[rows, np.maximum(positive - 1, 0)]
        rest = (positive - found.sum(axis=1)) * np.where(batch.length > 0, dcg[rows, last], 0.0) / full
        total = along + rest
    return np.where((positive > 0) & (total > 0), total / np.maximum(positive, 1), 0.0)


def read_gains(text: str) -> dict[int, float]:
    """nDCG's gains by grade as written (``1=3,2=9,4=4.5``); a grade not named gains its own value."""
    gains: dict[int, float] = {}
    for pair in text.split(","):
        level, _, gain = pair.partition("=")
        try:
            gains[int(level)] = float(gain)
        except ValueError:
            raise MetricError(f"gains {quoted(text)}: write grade=gain pairs, e.g. 1=3,2=9") from None
    return gains


def _gained(batch: Batch, k: Cutoff, gains: dict[int, float] | None) -> tuple[np.ndarray, np.ndarray]:
    """The DCG of each list and of its ideal list with a gain for each grade (a grade not named gains its own
    value; a gain may be 0 or below, lowering the DCG); the ideal list holds every judged unit's gain above
    0, best first."""
    table = gains or {}
    filled = filled_places(batch, None)
    judged = filled & batch.judged
    got = np.where(judged, np.vectorize(lambda g: table.get(int(g), g), otypes=[float])(batch.grade), 0.0)
    if -1 in table or -2 in table:  # trec_eval's levels of the unjudged: -1 not in the qrels, -2 graded below 0
        pooled = batch.pooled if batch.pooled is not None else np.zeros_like(judged)
        unjudged = np.where(pooled, table.get(-2, 0.0), table.get(-1, 0.0))
        got = np.where(filled & ~batch.judged, unjudged, got)
    rows = []
    for counts in _level_counts(batch):
        gain = {**{level: float(level) for level in range(len(counts))}, **table}
        rows.append(sorted((gain[level] for level, n in enumerate(counts) for _ in range(n)), reverse=True))
    ideal = np.zeros((len(rows), max([len(r) for r in rows] + [1])))
    for i, row in enumerate(rows):
        ideal[i, : len(row)] = row

    def dcg(values: np.ndarray) -> np.ndarray:
        places = np.arange(values.shape[1])[None, :]
        inside = places < (values.shape[1] if k is None else np.reshape(k, (-1, 1)))
        return in_order(np.where(inside, values, 0.0) / np.log2(places + 2.0))

    return dcg(got), dcg(np.maximum(ideal, 0.0))


@register("ndcg_gains", cutoff="optional", values=read_gains)
def ndcg_gains(batch: Batch, k: Cutoff, gains: dict[int, float] | None = None) -> np.ndarray:
    """nDCG with a gain for each grade: ``ndcg_gains(1=3,2=9,4=4.5)`` is trec_eval's ``ndcg.1=3,2=9,4=4.5``
    (see `_gained`)."""
    dcg, ideal = _gained(batch, k, gains)
    return safe_div(dcg, ideal)


@register("dcg_gains", cutoff="optional", values=read_gains)
def dcg_gains(batch: Batch, k: Cutoff, gains: dict[int, float] | None = None) -> np.ndarray:
    """DCG with a gain for each grade (trec_eval's ``dcg.1=3,2=9``); without gains, as ``dcg``."""
    return _gained(batch, k, gains)[0]


@register("ideal_dcg", cutoff="optional", values=read_gains)
def ideal_dcg(batch: Batch, k: Cutoff, gains: dict[int, float] | None = None) -> np.ndarray:
    """The DCG of the ideal list, every judged unit's gain above 0 best first (trec_eval ideal_dcg); with a
    gain for each grade where given (``ideal_dcg(1=3,2=9)``)."""
    return _gained(batch, k, gains)[1]


@register("yaap", cutoff="none", trec=("yaap",))
def yaap(batch: Batch, k: Cutoff) -> np.ndarray:
    """Yet Another AP (Robertson, ECIR 2012; trec_eval yaap): log((1 + S) / (1 + R - S)), S the sum of the
    precisions at the relevant units found (AP x R): monotonic with AP on a question, better averaged."""
    found = average_precision(batch, None) * batch.n_rel
    result: np.ndarray = np.log((1.0 + found) / (1.0 + batch.n_rel - found))
    return result


def _level_counts(batch: Batch) -> Iterator[list[int]]:
    """Each question's judged units per grade: at index g, how many are graded g (at 0, those judged and not
    graded above 0)."""
    n_judged = batch.n_judged if batch.n_judged is not None else batch.n_rel
    for i in range(len(batch.n_rel)):
        positive = [int(g) for g in batch.ideal[i] if g > 0]
        above = [positive.count(level) for level in range(1, max(positive, default=0) + 1)]
        yield [int(n_judged[i]) - len(positive), *above]


@register("rndcg", cutoff="none", trec=("rndcg",))
def r_ndcg(batch: Batch, k: Cutoff) -> np.ndarray:
    """trec_eval's Rndcg: nDCG averaged over the places where the ideal list's gain changes (with 5 units at
    grade 3, 3 at 2 and 10 at 1: nDCG at 5, 8 and 18, the list's DCG taken at most to its end), and once
    more at the list's end where it runs on past the ideal list's end by more than one; 0 where nothing is
    relevant."""
    got, ideal, log_place, positive = _walks(batch)
    rows, width = np.arange(len(positive)), got.shape[1]
    dcg = np.concatenate([np.zeros((len(rows), 1)), np.cumsum(got / log_place, axis=1)], axis=1)  # dcg[:, p]: p places
    idcg = np.concatenate([np.zeros((len(rows), 1)), np.cumsum(ideal / log_place, axis=1)], axis=1)
    place = np.arange(1, width)[None, :]
    change = ideal[:, 1:] != ideal[:, :-1]  # at place p (1 ..): the ideal gain differs from the one before
    length = batch.length[:, None]
    seen = np.take_along_axis(dcg, np.minimum(place, length), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = in_order(np.where(change, seen / idcg[:, 1:width], 0.0))
        beyond = positive + 1 < batch.length  # the list goes on past the ideal list: once more at its end
        last = np.where(beyond, dcg[rows, batch.length.clip(max=width)] / idcg[rows, -1], 0.0)
        value = (terms + last) / (change.sum(axis=1) + beyond)
    return np.where((batch.n_rel > 0) & (positive > 0), np.nan_to_num(value), 0.0)


@register("g", cutoff="none", aliases=("normalized_gain",), trec=("g",))
def normalized_gain(batch: Batch, k: Cutoff) -> np.ndarray:
    """trec_eval's G: each retrieved unit's gain over log2(2 + what the ideal list had gained by then (at least
    1 a place) - what this list had gained), summed, over the ideal list's total gain."""
    got, ideal, _, _ = _walks(batch)
    cost = np.cumsum(np.maximum(ideal, 1.0), axis=1)
    gained = np.cumsum(got, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = in_order(np.where(got != 0, got / np.log2(2.0 + cost - gained), 0.0))
    total = ideal.sum(axis=1)
    result: np.ndarray = safe_div(g, total) * (total > 0)
    return result


INFAP_EPSILON = 0.00001


@register("infap", cutoff="none", aliases=("inferred_ap",), trec=("infap",))
def inferred_ap(batch: Batch, k: Cutoff) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam, 2006) as trec_eval computes it: precision at each relevant unit estimated
    from the judged results above it, results never pooled counting as non-relevant and those pooled but
    judged by nobody (graded below 0 in TREC qrels) left out as sampled; divided by R."""
    inside = filled_places(batch, None)
    pooled = (batch.pooled if batch.pooled is not None else np.zeros_like(batch.judged)) & inside
    judged = batch.judged & inside
    rel = judged & batch.rel
    nonrel = judged & ~batch.rel
    above = np.zeros((len(rel), 1), dtype=np.int64)

    def before(mask: np.ndarray) -> np.ndarray:  # how many above each place
        return np.concatenate([above, np.cumsum(mask, axis=1)[:, :-1]], axis=1)

    r, n, u = before(rel), before(nonrel), before(pooled & ~judged)
    j = np.arange(rel.shape[1])[None, :].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        seen = (r + n + u) / j
        estimate = 1.0 / (j + 1) + (j / (j + 1)) * seen * ((r + INFAP_EPSILON) / (r + n + 2 * INFAP_EPSILON))
    total = in_order(np.where(rel, np.where(j == 0, 1.0, estimate), 0.0))
    return np.where(batch.n_rel > 0, safe_div(total, batch.n_rel.astype(float)), total)


def relevance_strings(batch: Batch, length: int) -> list[str]:
    """trec_eval's relstring: each question's first `length` results as one character each, its grade (``>``
    above 9), ``.`` for a result pooled but judged by nobody, ``-`` for one never pooled."""
    pooled = batch.pooled if batch.pooled is not None else np.zeros_like(batch.judged)
    out = []
    for i in range(len(batch.n_rel)):
        chars = []
        for j in range(min(length, int(batch.length[i]))):
            if batch.judged[i, j]:
                grade = int(batch.grade[i, j])
                chars.append(">" if grade > 9 else str(grade))
            else:
                chars.append("." if pooled[i, j] else "-")
        out.append("".join(chars))
    return out
