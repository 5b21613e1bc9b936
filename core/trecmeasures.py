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


@register("iprec", cutoff="none", aliases=("iprec_at_recall",), param=("recall", 0.0), closed=True)
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
