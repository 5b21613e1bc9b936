"""Uncertainty: bootstrap intervals, paired randomization tests with Holm's correction, detectable differences.

Everything is resampled over questions with a seeded generator, so the same run gives the same numbers.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

Z_975 = 1.959963984540054  # two-sided 95%
Z_80 = 0.8416212335729143  # 80% power


def bootstrap_ci(values: np.ndarray, *, samples: int = 1000, seed: int = 0, level: float = 0.95) -> np.ndarray:
    """A (lo, hi) row per column of `values` (questions x measures): the mean's percentile-bootstrap interval.

    The same resampled questions serve every column, so intervals of related measures are coherent. NaN
    (a measure that could not score a question) is left out of that column's means. With fewer than two
    values, or `samples` 0, the interval is the mean itself.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n, m = values.shape
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    with np.errstate(invalid="ignore"):
        mean = filled.sum(axis=0) / present.sum(axis=0)
    if n < 2 or samples <= 0:
        return np.stack([mean, mean], axis=1)
    rng = np.random.default_rng(seed)
    means = np.empty((samples, m))
    step = max(1, 2_000_000 // n)  # bound memory: resample in blocks
    for start in range(0, samples, step):
        stop = min(samples, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        with np.errstate(invalid="ignore"):
            means[start:stop] = filled[idx].sum(axis=1) / present[idx].sum(axis=1)
    alpha = (1 - level) / 2
    with warnings.catch_warnings():  # a column no resample could score (nothing graded 2 or more): NaN, meant
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanquantile(means, [alpha, 1 - alpha], axis=0).T


def paired_randomization(a: np.ndarray, b: np.ndarray, *, samples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value that `a` and `b` (paired per question) have the same mean: random sign flips of
    the per-question differences, the observed difference counted among the resamples."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) == 0 or not d.any():
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    extreme = 0
    step = max(1, 2_000_000 // len(d))
    for start in range(0, samples, step):
        signs = rng.choice((-1.0, 1.0), size=(min(step, samples - start), len(d)))
        extreme += int((np.abs((signs * d).mean(axis=1)) >= observed - 1e-12).sum())
    return (extreme + 1) / (samples + 1)


def paired_bootstrap_ci(a: np.ndarray, b: np.ndarray, *, samples: int = 1000, seed: int = 0) -> tuple[float, float]:
    """95% percentile-bootstrap interval of mean(a - b), resampling questions."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    lo, hi = bootstrap_ci(d[~np.isnan(d)], samples=samples, seed=seed)[0]
    return float(lo), float(hi)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment: family-wise error control over several comparisons."""
    order = np.argsort(pvalues)
    m = len(pvalues)
    adjusted = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def detectable_difference(differences: np.ndarray) -> float | None:
    """The smallest mean difference a paired test on these questions would detect (two-sided 5%, 80% power)."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return None
    return float((Z_975 + Z_80) * d.std(ddof=1) / np.sqrt(len(d)))


def median_p95(times_ms: list[float]) -> dict[str, float | None]:
    """Median and 95th percentile (linear interpolation) of search times."""
    if not times_ms:
        return {"median": None, "p95": None}
    arr = np.asarray(times_ms, dtype=float)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95))}
