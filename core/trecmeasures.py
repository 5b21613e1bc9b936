"""trec_eval's measures beyond the common ones, written from its definitions (its ``m_*.c`` files in
trec_eval 10.0) over the same `Batch` as every other measure: vectorised where the definition allows, a loop
per question where trec_eval walks down gain levels (G, Rndcg) or counts as it goes (infAP). Each one's
docstring says what it computes; ``gm_map`` and ``gm_bpref`` average geometrically, ``num_nonrel_judged_ret``
sums, and `relevance_strings` gives trec_eval's relstring, which is text, not a number."""

from __future__ import annotations

from typing import Any

import numpy as np

from vx_eval.core.batch import Batch
from vx_eval.core.metrics import _count, _filled, _safe_div, average_precision, bpref, register

IPREC_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""trec_eval's recall levels for iprec_at_recall when none are named (its standard 11-point graph)."""


@register("gm_map", cutoff="none", trec=("gm_map",), average="geometric")
def gm_map(batch: Batch, k: Any) -> np.ndarray:
    """Average precision per question; over the questions, its geometric mean (each value at least 0.00001),
    which a single question near zero pulls down far more than the arithmetic mean map (trec_eval gm_map)."""
    return average_precision(batch, None)


@register("iprec", cutoff="none", aliases=("iprec_at_recall",), param=("recall", 0.0), span="closed")
def interpolated_precision(batch: Batch, k: Any, level: float) -> np.ndarray:
    """Interpolated precision at a recall level (trec_eval iprec_at_recall): the best precision at any rank
    from the one where round(level x R) relevant units have been found (the first relevant for level 0) to
    the end of the list; 0 where the list finds fewer relevant units than that."""
    width = batch.grade.shape[1]
    if width == 0:
        return np.zeros(len(batch.n_rel))
    ranks = np.arange(1, width + 1)[None, :]
    inside = _filled(batch, None)
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
    return batch.length.astype(float), _count(batch, None).astype(float)


@register("set_p", cutoff="none", trec=("set_p",))
def set_precision(batch: Batch, k: Any) -> np.ndarray:
    """Precision over the whole list: relevant retrieved / retrieved (trec_eval set_P)."""
    ret, rel_ret = _retrieved(batch)
    return _safe_div(rel_ret, ret)


@register("set_recall", cutoff="none", trec=("set_recall",))
def set_recall(batch: Batch, k: Any) -> np.ndarray:
    """Recall over the whole list: relevant retrieved / relevant (trec_eval set_recall)."""
    _, rel_ret = _retrieved(batch)
    return _safe_div(rel_ret, batch.n_rel.astype(float))


@register("set_relative_p", cutoff="none", trec=("set_relative_p",))
def set_relative_precision(batch: Batch, k: Any) -> np.ndarray:
    """Set precision over the best it could be for a list this long: relevant retrieved / min(retrieved, R)
    (trec_eval set_relative_P)."""
    ret, rel_ret = _retrieved(batch)
    return _safe_div(rel_ret, np.minimum(ret, batch.n_rel)) * ((ret > 0) & (batch.n_rel > 0))


@register("set_map", cutoff="none", trec=("set_map",))
def set_map(batch: Batch, k: Any) -> np.ndarray:
    """Unranked average precision: set precision x set recall (trec_eval set_map)."""
    ret, rel_ret = _retrieved(batch)
    return _safe_div(rel_ret * rel_ret, ret * batch.n_rel)


@register("set_f", cutoff="none", trec=("set_f",))
def set_f(batch: Batch, k: Any) -> np.ndarray:
    """The harmonic mean of set precision and set recall, 2PR / (P + R) (trec_eval set_F, beta 1)."""
    ret, rel_ret = _retrieved(batch)
    p, r = _safe_div(rel_ret, ret), _safe_div(rel_ret, batch.n_rel.astype(float))
    return np.where(rel_ret > 0, _safe_div(2 * p * r, p + r), 0.0)


@register("relative_p", cutoff="required", trec=("relative_p",))
def relative_precision(batch: Batch, k: Any) -> np.ndarray:
    """Relevant in the first k over the most there could be, min(k, R) (trec_eval relative_P)."""
    return _safe_div(_count(batch, k), np.minimum(k, batch.n_rel))


@register("gm_bpref", cutoff="none", trec=("gm_bpref",), average="geometric")
def gm_bpref(batch: Batch, k: Any) -> np.ndarray:
    """bpref per question; over the questions, its geometric mean (each value at least 0.00001), as
    trec_eval's gm_bpref."""
    return bpref(batch, None)


@register("iprec_avg", cutoff="none", aliases=("11pt_avg",))
def eleven_point_average(batch: Batch, k: Any) -> np.ndarray:
    """The mean of the interpolated precision at the eleven recall levels 0, 0.1, ..., 1 (trec_eval 11pt_avg)."""
    return np.mean([interpolated_precision(batch, None, level) for level in IPREC_LEVELS], axis=0)


RPREC_MULTIPLES = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)
"""trec_eval's multiples of R for Rprec_mult when none are named."""


@register("rprec_mult", cutoff="none", param=("m", 1.0), span="positive")
def r_precision_multiple(batch: Batch, k: Any, m: float) -> np.ndarray:
    """Precision at m x R results (R: the question's relevant units; m x R + 0.9 cut to a whole number, as
    trec_eval's Rprec_mult computes it); 0 where that is no result at all."""
    cut = np.floor(m * batch.n_rel + 0.9).astype(int)
    return _safe_div(_count(batch, cut), cut)


@register("unj", cutoff="required", trec=("unj",))
def unjudged(batch: Batch, k: Any) -> np.ndarray:
    """The share of the first k places that hold an unjudged result, over k (a list shorter than k counts
    its missing places as judged: trec_eval unj)."""
    return (_filled(batch, k) & ~batch.judged).sum(axis=1) / np.asarray(k, dtype=float)


@register("utility", cutoff="none", trec=("utility",))
def utility(batch: Batch, k: Any) -> np.ndarray:
    """Relevant results retrieved minus non-relevant ones (trec_eval utility with its default coefficients
    1, -1, 0, 0)."""
    ret, rel_ret = _retrieved(batch)
    return rel_ret - (ret - rel_ret)


@register("num_nonrel_judged_ret", cutoff="none", trec=("num_nonrel_judged_ret",), average="sum")
def nonrelevant_judged_retrieved(batch: Batch, k: Any) -> np.ndarray:
    """Judged non-relevant results retrieved, a count; summed over the questions (trec_eval's)."""
    return (_filled(batch, None) & batch.judged & ~batch.rel).sum(axis=1).astype(float)


@register("bin_g", cutoff="none", aliases=("bing",), trec=("bing",))
def binary_g(batch: Batch, k: Any) -> np.ndarray:
    """trec_eval's binG: over the relevant units, 1 / log2(2 + the non-relevant results ranked above each one
    found), summed and divided by R; 0 when none is found."""
    found = batch.rel & _filled(batch, None)
    nonrel_above = np.arange(1, batch.grade.shape[1] + 1)[None, :] - batch.rel_cum
    terms = np.where(found, 1.0 / np.log2(2.0 + nonrel_above), 0.0)
    return _safe_div(terms.sum(axis=1), batch.n_rel.astype(float))


@register("rbp_trec", cutoff="none", param=("p", 0.9))
def rbp_trec(batch: Batch, k: Any, p: float) -> np.ndarray:
    """trec_eval's rbp, which differs from vx-eval's ``rbp``: persistence 0.9 by default, and graded gains,
    each result's grade over the question's highest judged grade where that is above 1 (trec_eval scales
    gains into [0, 1]); an unjudged result gains nothing. ``vx-eval eval --trec-format -m rbp`` gives this."""
    top = batch.ideal[:, 0] if batch.ideal.shape[1] else np.zeros(len(batch.n_rel))
    scale = np.where(top > 1, top, 1.0)
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    return (weights * np.where(_filled(batch, None), batch.grade, 0.0) / scale[:, None]).sum(axis=1)


@register("rbp_trec_resid", cutoff="none", param=("p", 0.9))
def rbp_trec_residual(batch: Batch, k: Any, p: float) -> np.ndarray:
    """trec_eval's rbp_resid: where the list holds an unjudged result, p^n (n results) plus (1 - p) times the
    sum of p^(r-1) over the unjudged results' ranks r; 0 where every result is judged."""
    unjudged = _filled(batch, None) & ~batch.judged
    weights = p ** np.arange(batch.grade.shape[1])[None, :]
    value = p ** batch.length.astype(float) + (1 - p) * (weights * unjudged).sum(axis=1)
    return np.where(unjudged.any(axis=1), value, 0.0)


def _gain_sums(batch: Batch) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each question's gains as retrieved (grades; 0 past the list and where unjudged), the running DCG of
    the list and of the ideal list (every positive grade, best first), and how many positive grades there
    are: what trec_eval's gain-level measures walk."""
    width = max(batch.grade.shape[1], batch.ideal.shape[1])
    gains = np.zeros((len(batch.n_rel), width))
    gains[:, : batch.grade.shape[1]] = np.where(_filled(batch, None), np.maximum(batch.grade, 0.0), 0.0)
    ideal = np.zeros_like(gains)
    ideal[:, : batch.ideal.shape[1]] = batch.ideal
    discount = 1.0 / np.log2(np.arange(width) + 2.0)[None, :]
    return gains, np.cumsum(gains * discount, axis=1), np.cumsum(ideal * discount, axis=1), (ideal > 0).sum(axis=1)


@register("ndcg_rel", cutoff="none", trec=("ndcg_rel",))
def ndcg_rel(batch: Batch, k: Any) -> np.ndarray:
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
        along = np.where(found, dcg / ideal_here, 0.0).sum(axis=1)
        last = np.maximum(batch.length - 1, 0)
        full = ideal[rows, np.maximum(positive - 1, 0)]
        rest = (positive - found.sum(axis=1)) * np.where(batch.length > 0, dcg[rows, last], 0.0) / full
        total = along + rest
    return np.where((positive > 0) & (total > 0), total / np.maximum(positive, 1), 0.0)


class _IdealWalk:
    """trec_eval's walk down the ideal list, level by level (gains ascending in `levels`, each with how many
    judged units hold it), one place at a time: `step` moves to the next place and gives its ideal gain."""

    def __init__(self, levels: list[tuple[float, int]]) -> None:
        self.levels, self.level, self.count = levels, len(levels) - 1, 0
        self.gain = levels[-1][0] if levels else 0.0

    def step(self) -> float:
        self.count += 1
        while self.level >= 0 and self.count > self.levels[self.level][1]:
            self.count, self.level = 1, self.level - 1
            self.gain = self.levels[self.level][0] if self.level >= 0 else 0.0
        return self.gain


def _rows(batch: Batch) -> Any:
    """Each question's retrieved gains (0 where unjudged) and its gain levels with their counts."""
    n_judged = batch.n_judged if batch.n_judged is not None else batch.n_rel
    for i in range(len(batch.n_rel)):
        got = [float(g) if j else 0.0 for g, j in zip(batch.grade[i, : batch.length[i]], batch.judged[i], strict=False)]
        positive = [int(g) for g in batch.ideal[i] if g > 0]
        top = max(positive, default=0)
        counts = [int(n_judged[i]) - len(positive)] + [positive.count(level) for level in range(1, top + 1)]
        yield i, got, [(float(level), count) for level, count in enumerate(counts)]


@register("rndcg", cutoff="none", trec=("rndcg",))
def r_ndcg(batch: Batch, k: Any) -> np.ndarray:
    """trec_eval's Rndcg: nDCG averaged over the places where the ideal list's gain changes (with 5 units at
    grade 3, 3 at 2 and 10 at 1: nDCG at 5, 8 and 18), and at the list's end where it is longer; 0 where
    nothing is relevant."""
    out = np.zeros(len(batch.n_rel))
    for i, got, levels in _rows(batch):
        if batch.n_rel[i] == 0:
            continue
        walk, total, changes, dcg, ideal = _IdealWalk(levels), 0.0, 0, 0.0, 0.0
        old, place = walk.gain, 0
        while place < len(got) and walk.gain > 0:
            gain = walk.step()
            if gain != old:
                if ideal > 0:
                    total, changes = total + dcg / ideal, changes + 1
                old = gain
            dcg += got[place] / np.log2(place + 2)
            ideal += gain / np.log2(place + 2) if gain > 0 else 0.0
            place += 1
        if place < len(got):
            dcg += sum(g / np.log2(r + 2) for r, g in enumerate(got) if r >= place)
            place = len(got)
            if ideal > 0:
                total, changes = total + dcg / ideal, changes + 1
        while walk.gain > 0:
            gain = walk.step()
            if gain != old:
                if ideal > 0:
                    total, changes = total + dcg / ideal, changes + 1
                old = gain
            ideal += gain / np.log2(place + 2) if gain > 0 else 0.0
            place += 1
        out[i] = total / changes if changes else 0.0
    return out


@register("g", cutoff="none", aliases=("normalized_gain",), trec=("g",))
def normalized_gain(batch: Batch, k: Any) -> np.ndarray:
    """trec_eval's G: each retrieved unit's gain over log2(2 + what the ideal list had gained by then (at least
    1 a place) - what this list had gained), summed, over the ideal list's total gain."""
    out = np.zeros(len(batch.n_rel))
    for i, got, levels in _rows(batch):
        walk, g, gained, ideal_total, cost = _IdealWalk(levels), 0.0, 0.0, 0.0, 0.0
        for gain in got:
            if walk.gain > 0:
                ideal = walk.step()
                ideal_total += ideal if ideal > 0 else 0.0
                cost += ideal if ideal >= 1.0 else 1.0
            else:
                cost += 1.0
            gained += gain
            if gain:
                g += gain / np.log2(2 + cost - gained)
        while walk.gain > 0:
            ideal = walk.step()
            ideal_total += ideal if ideal > 0 else 0.0
        out[i] = g / ideal_total if ideal_total > 0 else 0.0
    return out


INFAP_EPSILON = 0.00001


@register("infap", cutoff="none", aliases=("inferred_ap",), trec=("infap",))
def inferred_ap(batch: Batch, k: Any) -> np.ndarray:
    """Inferred AP (Yilmaz & Aslam, 2006) as trec_eval computes it: precision at each relevant unit estimated
    from the judged results above it, results never pooled counting as non-relevant and those pooled but
    judged by nobody (graded below 0 in TREC qrels) left out as sampled; divided by R."""
    pooled = batch.pooled if batch.pooled is not None else np.zeros_like(batch.judged)
    out = np.zeros(len(batch.n_rel))
    for i in range(len(out)):
        rel = nonrel = unjudged = 0
        total = 0.0
        for j in range(int(batch.length[i])):
            if not batch.judged[i, j]:
                unjudged += bool(pooled[i, j])
                continue
            if not batch.rel[i, j]:
                nonrel += 1
                continue
            rel += 1
            if j == 0:
                total += 1.0
            else:
                seen = (rel - 1 + nonrel + unjudged) / j
                total += 1.0 / (j + 1) + (j / (j + 1)) * seen * (
                    (rel - 1 + INFAP_EPSILON) / (rel - 1 + nonrel + 2 * INFAP_EPSILON)
                )
        out[i] = total / batch.n_rel[i] if batch.n_rel[i] else total
    return out


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
