"""Uncertainty: percentile-bootstrap confidence intervals over questions, seeded and reproducible."""

from __future__ import annotations

import numpy as np


def bootstrap_ci(
    values: np.ndarray, *, samples: int = 1000, seed: int = 0, level: float = 0.95
) -> np.ndarray:
    """A (lo, hi) row per column of `values` (questions x measures): the mean's percentile-bootstrap interval.

    The same questions are resampled for every column, so intervals of related measures are coherent.
    With fewer than two questions, or `samples` 0, the interval is the mean itself.
    """
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n = values.shape[0]
    mean = values.mean(axis=0) if n else np.zeros(values.shape[1])
    if n < 2 or samples <= 0:
        return np.stack([mean, mean], axis=1)
    rng = np.random.default_rng(seed)
    means = np.empty((samples, values.shape[1]))
    step = max(1, 2_000_000 // max(n, 1))  # bound memory: resample in blocks
    for start in range(0, samples, step):
        stop = min(samples, start + step)
        idx = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = values[idx].mean(axis=1)
    alpha = (1 - level) / 2
    return np.quantile(means, [alpha, 1 - alpha], axis=0).T


def median_p95(times_ms: list[float]) -> dict[str, float | None]:
    """Median and 95th percentile (linear interpolation) of search times."""
    if not times_ms:
        return {"median": None, "p95": None}
    arr = np.asarray(times_ms, dtype=float)
    return {"median": float(np.median(arr)), "p95": float(np.percentile(arr, 95))}
