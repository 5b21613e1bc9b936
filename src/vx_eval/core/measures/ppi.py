"""Prediction-powered estimates (Angelopoulos et al., Science 2023; the power-tuned PPI++, Angelopoulos, Duchi and
Zrnic 2023): a measure's mean over many questions a judge graded, corrected by the judge's error on the few
questions people graded too, with an interval that covers whatever the judge's bias.

For each question, `human` is its measure under people's grades (on the `n` questions people graded) and
`judge_*` under the judge's (on those same questions, and on the `N` others). The estimate is

    mean(human) + lam * (mean(judge_unlabelled) - mean(judge_labelled))

whose variance is Var(human - lam * judge_labelled) / n + lam^2 Var(judge_unlabelled) / N. `lam` is chosen to
make that least (clipped to 0..1): near 1 where the judge tracks people, 0 where it does not, when the estimate
is people's mean alone. Each question's `lam` is tuned on the other fold of person-graded questions (cross-fitted),
and the interval takes Student's t: so it covers 94% or more at 30 person-graded questions, where the papers'
covers about 93%.
Paired differences between two setups are the same estimate over per-question
differences.

To order several setups, `ppi_order` gives every setup the same `lam`, tuned for the contrasts between them
rather than for each mean: with one `lam` the people-graded questions' own difficulty, shared by every setup,
cancels in every difference, where each setup's own `lam` would let it move the order.

`guarded_order` trusts the judge's order unless people's grades overturn it: each pair of setups is ordered
by its prediction-powered difference where that difference's interval excludes 0, else as the judge orders
it; the setups are then ranked by the pairs they win. With 30 person-graded questions the corrected means
alone order setups worse than the judge does (their noise is people's 30 questions'), while the judge alone
never learns where it is wrong; guarded at 80%, the order is as good as the judge's or better on every
collection measured (`benchmarks/ppi_coverage.py`)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from vx_eval.core.optional import on_first_use

_scipy_stats = on_first_use("scipy.stats")


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


FOLDS = 2
"""The folds `lam` is cross-fitted over: each person-graded question's weight is tuned on the others' folds, so
that the weight never fits the very questions it corrects (`benchmarks/ppi_coverage.py --simulated`)."""


def _tuned_lam(y: np.ndarray, f_n: np.ndarray, f_big: np.ndarray) -> float:
    """PPI++'s weight: Cov(human, judge) / ((1 + n/N) Var(judge)), clipped to 0..1 (0 where too few to tell)."""
    n, big = len(y), len(f_big)
    if n < 2 or big == 0:
        return 0.0
    pooled = np.concatenate([f_n, f_big])
    pooled_var = float(np.var(pooled, ddof=1))
    covariance = float(np.cov(y, f_n, ddof=1)[0, 1])
    return 0.0 if pooled_var == 0 else min(1.0, max(0.0, covariance / ((1 + n / big) * pooled_var)))


def _cross_fitted(y: np.ndarray, f_n: np.ndarray, f_big: np.ndarray) -> np.ndarray:
    """Each labelled question's weight, tuned on the labelled questions outside its fold (every `FOLDS`-th
    question a fold) and on every judge-only question; the whole set's weight where a fold would hold under
    two questions."""
    n = len(y)
    if n < 2 * FOLDS:
        return np.full(n, _tuned_lam(y, f_n, f_big))
    folds = np.arange(n) % FOLDS
    lam = np.zeros(n)
    for k in range(FOLDS):
        rest = folds != k
        lam[~rest] = _tuned_lam(y[rest], f_n[rest], f_big)
    return lam


def ppi_mean(
    human: np.ndarray,
    judge_labelled: np.ndarray,
    judge_unlabelled: np.ndarray,
    confidence: float = 0.95,
    *,
    tuned: bool = True,
) -> PPIEstimate:
    """The prediction-powered mean and its `confidence` interval.

    `human` and `judge_labelled` pair up question by question (people's and the judge's measure on the
    questions people graded, at least two); `judge_unlabelled` holds the judge's measure on the others.
    `tuned` False keeps lam at 1 (the original PPI).

    The papers' interval (a normal quantile, lam tuned on the same questions it corrects) covers about 93% at 30
    person-graded questions, not 95%: lam fitted to those questions makes their rectifier look less variable
    than it is, and 30 questions' variance is itself unsure. Here lam is cross-fitted (`FOLDS`) and the
    quantile is Student's t on n - 1 degrees of freedom; on simulated judges (biased, noisy, weak, flipping)
    that covers 94.1% or more at n = 30, for intervals 7-12% wider (`benchmarks/ppi_coverage.py --simulated`)."""
    y = np.asarray(human, dtype=float)
    f_n = np.asarray(judge_labelled, dtype=float)
    f_big = np.asarray(judge_unlabelled, dtype=float)
    n, big = len(y), len(f_big)
    if n < 2 or len(f_n) != n:
        raise ValueError(f"need at least two questions graded by both people and the judge, paired: {n}, {len(f_n)}")
    if big == 0:
        lams = np.zeros(n)
    elif tuned:
        lams = _cross_fitted(y, f_n, f_big)
    else:
        lams = np.ones(n)
    lam = float(lams.mean())
    # each question's own estimate of the mean, its fold's weight on the judge's error there: y - lam (f - mean(F))
    rectified = y - lams * (f_n - (f_big.mean() if big else 0.0))
    mean = float(rectified.mean())
    rectifier_var = float(np.var(rectified, ddof=1))
    judge_var = float(np.var(f_big, ddof=1)) if big > 1 else 0.0
    half = float(_scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * math.sqrt(
        rectifier_var / n + (lam**2 * judge_var / big if big else 0.0)
    )
    return PPIEstimate(mean, mean - half, mean + half, lam, n, big, rectifier_var, judge_var)


def ppi_order(human: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray) -> tuple[np.ndarray, float]:
    """Every setup's prediction-powered mean under one shared `lam`, for ordering them, and that `lam`.

    The arrays are setups x questions (as in `ppi_mean`, one row per setup, the same questions in every row).
    `lam` makes the variance of the contrasts least: the covariance of people's and the judge's measures after
    each question's mean over the setups is taken away, over the judge's variance so centred (clipped to 0..1).
    """
    y = np.asarray(human, dtype=float)
    f_n = np.asarray(judge_labelled, dtype=float)
    f_big = np.asarray(judge_unlabelled, dtype=float)
    n, big = y.shape[1], f_big.shape[1]
    if n < 2 or f_n.shape != y.shape or f_big.shape[0] != y.shape[0]:
        raise ValueError(f"need setups x questions arrays, people's and the judge's paired: {y.shape}, {f_n.shape}")
    lam = 0.0
    if big:
        y_c = y - y.mean(axis=0)
        f_c = f_n - f_n.mean(axis=0)
        pooled = np.concatenate([f_c, f_big - f_big.mean(axis=0)], axis=1)
        spread = float(np.sum(np.var(pooled, axis=1, ddof=1)))
        covariance = float(sum(np.cov(a, b, ddof=1)[0, 1] for a, b in zip(y_c, f_c, strict=True)))
        lam = 0.0 if spread == 0 else min(1.0, max(0.0, covariance / ((1 + n / big) * spread)))
    means = y.mean(axis=1) + (lam * (f_big.mean(axis=1) - f_n.mean(axis=1)) if big else 0.0)
    return means, lam


GUARD = 0.8
"""The confidence at which people's corrected difference overturns the judge's order of two setups (chosen on
the four collections of `benchmarks/ppi_coverage.py` among 0.5, 0.8 and 0.95: 0.5 lets people's noise in, 0.95
rarely overturns the judge)."""


def guarded_order(
    human: np.ndarray, judge_labelled: np.ndarray, judge_unlabelled: np.ndarray, confidence: float = GUARD
) -> np.ndarray:
    """A score per setup to order them by (higher first): the pairs it wins, each pair decided by its
    prediction-powered difference where the `confidence` interval excludes 0, else by the judge's means over
    every question; those means break ties. Arrays as in `ppi_order` (setups x questions)."""
    y = np.asarray(human, dtype=float)
    f_n = np.asarray(judge_labelled, dtype=float)
    f_big = np.asarray(judge_unlabelled, dtype=float)
    if y.shape[1] < 2 or f_n.shape != y.shape or f_big.shape[0] != y.shape[0]:
        raise ValueError(f"need setups x questions arrays, people's and the judge's paired: {y.shape}, {f_n.shape}")
    judged = np.concatenate([f_n, f_big], axis=1).mean(axis=1)
    wins = np.zeros(len(y))
    for a, b in itertools.combinations(range(len(y)), 2):
        e = ppi_mean(y[a] - y[b], f_n[a] - f_n[b], f_big[a] - f_big[b], confidence)
        a_wins = e.low > 0 or (not e.excludes_zero() and judged[a] >= judged[b])
        wins[a if a_wins else b] += 1
    # ties in wins go to the judge's higher mean (the means span less than 1, so they never outweigh a win)
    spread = float(np.ptp(judged)) or 1.0
    scores: np.ndarray = wins + 0.5 * (judged - judged.min()) / spread
    return scores
