"""trec_eval's measures beyond the common ones, written from its definitions (``m_gm_map.c``,
``m_iprec_at_recall.c`` in trec_eval 10.0) over the same `Batch` as every other measure.

- ``gm_map``: average precision per question, averaged geometrically over the questions (the mean of
  log(max(AP, 0.00001)), exponentiated), which rewards a setup that is consistent over questions.
- ``iprec(recall=r)`` (trec_eval's ``iprec_at_recall_r``): interpolated precision at recall level r, the
  highest precision at any rank from where the question's round(r x R)-th relevant unit is found (its
  first for r = 0) down to the end of the list; 0 when fewer relevant units are found than that.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vx_eval.core.batch import Batch
from vx_eval.core.metrics import average_precision, register

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
    inside = ranks <= batch.length[:, None]
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
    inside = np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None]
    return batch.length.astype(float), (batch.rel & inside).sum(axis=1).astype(float)


def _ratio(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.divide(a, b, out=np.zeros_like(a, dtype=float), where=b > 0)


@register("set_p", cutoff="none", trec=("set_p",))
def set_precision(batch: Batch, k: Any) -> np.ndarray:
    """Precision over the whole list: relevant retrieved / retrieved (trec_eval set_P)."""
    ret, rel_ret = _retrieved(batch)
    return _ratio(rel_ret, ret)


@register("set_recall", cutoff="none", trec=("set_recall",))
def set_recall(batch: Batch, k: Any) -> np.ndarray:
    """Recall over the whole list: relevant retrieved / relevant (trec_eval set_recall)."""
    _, rel_ret = _retrieved(batch)
    return _ratio(rel_ret, batch.n_rel.astype(float))


@register("set_relative_p", cutoff="none", trec=("set_relative_p",))
def set_relative_precision(batch: Batch, k: Any) -> np.ndarray:
    """Set precision over the best it could be for a list this long: relevant retrieved / min(retrieved, R)
    (trec_eval set_relative_P)."""
    ret, rel_ret = _retrieved(batch)
    return _ratio(rel_ret, np.minimum(ret, batch.n_rel)) * ((ret > 0) & (batch.n_rel > 0))


@register("set_map", cutoff="none", trec=("set_map",))
def set_map(batch: Batch, k: Any) -> np.ndarray:
    """Unranked average precision: set precision x set recall (trec_eval set_map)."""
    ret, rel_ret = _retrieved(batch)
    return _ratio(rel_ret * rel_ret, ret * batch.n_rel)


@register("set_f", cutoff="none", trec=("set_f",))
def set_f(batch: Batch, k: Any) -> np.ndarray:
    """The harmonic mean of set precision and set recall, 2PR / (P + R) (trec_eval set_F, beta 1)."""
    ret, rel_ret = _retrieved(batch)
    p, r = _ratio(rel_ret, ret), _ratio(rel_ret, batch.n_rel.astype(float))
    return np.where(rel_ret > 0, _ratio(2 * p * r, p + r), 0.0)


@register("relative_p", cutoff="required", trec=("relative_p",))
def relative_precision(batch: Batch, k: Any) -> np.ndarray:
    """Relevant in the first k over the most there could be, min(k, R) (trec_eval relative_P)."""
    kk = np.broadcast_to(np.asarray(k), batch.length.shape)
    inside = np.arange(batch.grade.shape[1])[None, :] < np.minimum(batch.length, kk)[:, None]
    found = (batch.rel & inside).sum(axis=1).astype(float)
    return _ratio(found, np.minimum(kk, batch.n_rel).astype(float))


@register("gm_bpref", cutoff="none", trec=("gm_bpref",), average="geometric")
def gm_bpref(batch: Batch, k: Any) -> np.ndarray:
    """bpref per question; over the questions, its geometric mean (each value at least 0.00001), as
    trec_eval's gm_bpref."""
    from vx_eval.core.metrics import bpref

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
    width = batch.grade.shape[1]
    inside = np.arange(width)[None, :] < np.minimum(batch.length, cut)[:, None]
    found = (batch.rel & inside).sum(axis=1).astype(float)
    return _ratio(found, cut.astype(float))


@register("unj", cutoff="required", trec=("unj",))
def unjudged(batch: Batch, k: Any) -> np.ndarray:
    """The share of the first k places that hold an unjudged result, over k (a list shorter than k counts
    its missing places as judged: trec_eval unj)."""
    kk = np.broadcast_to(np.asarray(k), batch.length.shape)
    inside = np.arange(batch.grade.shape[1])[None, :] < np.minimum(batch.length, kk)[:, None]
    return (inside & ~batch.judged).sum(axis=1) / kk.astype(float)


@register("utility", cutoff="none", trec=("utility",))
def utility(batch: Batch, k: Any) -> np.ndarray:
    """Relevant results retrieved minus non-relevant ones (trec_eval utility with its default coefficients
    1, -1, 0, 0)."""
    ret, rel_ret = _retrieved(batch)
    return rel_ret - (ret - rel_ret)


@register("num_nonrel_judged_ret", cutoff="none", trec=("num_nonrel_judged_ret",), average="sum")
def nonrelevant_judged_retrieved(batch: Batch, k: Any) -> np.ndarray:
    """Judged non-relevant results retrieved, a count; summed over the questions (trec_eval's)."""
    inside = np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None]
    return (inside & batch.judged & ~batch.rel).sum(axis=1).astype(float)


@register("bin_g", cutoff="none", aliases=("bing",), trec=("bing",))
def binary_g(batch: Batch, k: Any) -> np.ndarray:
    """trec_eval's binG: over the relevant units, 1 / log2(2 + the non-relevant results ranked above each one
    found), summed and divided by R; 0 when none is found."""
    inside = np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None]
    found = batch.rel & inside
    nonrel_above = np.arange(1, batch.grade.shape[1] + 1)[None, :] - batch.rel_cum
    terms = np.where(found, 1.0 / np.log2(2.0 + nonrel_above), 0.0)
    return _ratio(terms.sum(axis=1), batch.n_rel.astype(float))


@register("rbp_trec", cutoff="none", param=("p", 0.9))
def rbp_trec(batch: Batch, k: Any, p: float) -> np.ndarray:
    """trec_eval's rbp, which differs from vx-eval's ``rbp``: persistence 0.9 by default, and graded gains,
    each result's grade over the question's highest judged grade where that is above 1 (trec_eval scales
    gains into [0, 1]); an unjudged result gains nothing. ``vx-eval eval --trec-format -m rbp`` gives this."""
    top = batch.ideal[:, 0] if batch.ideal.shape[1] else np.zeros(len(batch.n_rel))
    scale = np.where(top > 1, top, 1.0)
    inside = np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None]
    weights = (1 - p) * p ** np.arange(batch.grade.shape[1])[None, :]
    return (weights * np.where(inside, batch.grade, 0.0) / scale[:, None]).sum(axis=1)


@register("rbp_trec_resid", cutoff="none", param=("p", 0.9))
def rbp_trec_residual(batch: Batch, k: Any, p: float) -> np.ndarray:
    """trec_eval's rbp_resid: where the list holds an unjudged result, p^n (n results) plus (1 - p) times the
    sum of p^(r-1) over the unjudged results' ranks r; 0 where every result is judged."""
    inside = np.arange(batch.grade.shape[1])[None, :] < batch.length[:, None]
    unjudged = inside & ~batch.judged
    weights = p ** np.arange(batch.grade.shape[1])[None, :]
    value = p ** batch.length.astype(float) + (1 - p) * (weights * unjudged).sum(axis=1)
    return np.where(unjudged.any(axis=1), value, 0.0)
