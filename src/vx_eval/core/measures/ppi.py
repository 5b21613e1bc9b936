"""Prediction-powered estimates (Angelopoulos et al., Science 2023; the power-tuned PPI++, Angelopoulos, Duchi and
Zrnic 2023): a measure's mean over many questions a judge graded, corrected by the judge's error on the few
questions people graded too, with an interval that covers whatever the judge's bias.

For each question, `human` is its measure under people's grades (on the `n` questions people graded) and
`judge_*` under the judge's (on those same questions, and on the `N` others). The estimate is

    mean(human) + lam * (mean(judge_unlabelled) - mean(judge_labelled))

whose variance is Var(human - lam * judge_labelled) / n + lam^2 Var(judge_unlabelled) / N. `lam` is chosen to
make that least (clipped to 0..1): near 1 where the judge tracks people, 0 where it does not, when the estimate
is people's mean alone. Paired differences between two setups are the same estimate over per-question
differences."""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np


@dataclass(frozen=True)
class PPIEstimate:
    """A prediction-powered mean with its interval, and what it rests on."""

    mean: float
    low: float
    high: float
    lam: float
    """The weight the judge's grades carry (0: people's grades alone)."""
    labelled: int
    """Questions people graded."""
    unlabelled: int
    """Questions only the judge graded."""
    rectifier_var: float
    """Var(human - lam * judge) over the labelled questions: what each more person-graded question divides."""
    judge_var: float
    """Var(judge) over the judge-only questions."""

    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0

    def labelled_to_settle(self, confidence: float = 0.95) -> int | None:
        """About how many person-graded questions would make the interval exclude 0 (with the same judge-only
        questions and variances); None where no number would (the judge-only part alone is too wide, or the
        estimate is 0)."""
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        room = (self.mean / z) ** 2 - self.lam**2 * self.judge_var / max(self.unlabelled, 1)
        if self.mean == 0 or room <= 0:
            return None
        return max(2, math.ceil(self.rectifier_var / room))


def ppi_mean(
    human: np.ndarray,
    judge_labelled: np.ndarray,
    judge_unlabelled: np.ndarray,
    confidence: float = 0.95,
    *,
    tuned: bool = True,
) -> PPIEstimate:
    """The prediction-powered mean and its `confidence` interval (normal, as the papers give it).

    `human` and `judge_labelled` pair up question by question (people's and the judge's measure on the
    questions people graded, at least two); `judge_unlabelled` holds the judge's measure on the others.
    `tuned` False keeps lam at 1 (the original PPI)."""
    y = np.asarray(human, dtype=float)
    f_n = np.asarray(judge_labelled, dtype=float)
    f_big = np.asarray(judge_unlabelled, dtype=float)
    n, big = len(y), len(f_big)
    if n < 2 or len(f_n) != n:
        raise ValueError(f"need at least two questions graded by both people and the judge, paired: {n}, {len(f_n)}")
    if big == 0:
        lam = 0.0
    elif tuned:
        pooled = np.concatenate([f_n, f_big])
        pooled_var = float(np.var(pooled, ddof=1)) if len(pooled) > 1 else 0.0
        covariance = float(np.cov(y, f_n, ddof=1)[0, 1]) if n > 1 else 0.0
        lam = 0.0 if pooled_var == 0 else min(1.0, max(0.0, covariance / ((1 + n / big) * pooled_var)))
    else:
        lam = 1.0
    rectified = y - lam * f_n
    mean = float(rectified.mean() + (lam * f_big.mean() if big else 0.0))
    rectifier_var = float(np.var(rectified, ddof=1))
    judge_var = float(np.var(f_big, ddof=1)) if big > 1 else 0.0
    half = NormalDist().inv_cdf(0.5 + confidence / 2) * math.sqrt(
        rectifier_var / n + (lam**2 * judge_var / big if big else 0.0)
    )
    return PPIEstimate(mean, mean - half, mean + half, lam, n, big, rectifier_var, judge_var)
