"""Prediction-powered estimates (`core.measures.ppi`), on simulated questions whose true mean is known: the
interval covers it about as often as it says, whatever the judge's bias; a judge that tracks people narrows it;
one that does not is given no weight."""

from __future__ import annotations

import numpy as np
import pytest

from vx_eval.core.measures.ppi import ppi_mean


def _draw(rng, n, big, bias, noise):
    """People's measure of n + big questions (bounded, like nDCG) and a judge's, off by `bias` and `noise`."""
    truth = rng.beta(2, 3, size=n + big)
    judged = np.clip(truth + bias + rng.normal(0, noise, size=n + big), 0, 1)
    return truth[:n], judged[:n], judged[n:], truth


@pytest.mark.parametrize("bias, noise", [(0.15, 0.05), (-0.1, 0.2), (0.0, 0.3)])
def test_the_interval_covers_the_true_mean_about_as_often_as_it_says(bias, noise):
    rng = np.random.default_rng(7)
    covered, trials = 0, 600
    true_mean = 2 / 5  # the mean of beta(2, 3): what people's grades of every question would give
    for _ in range(trials):
        human, judge_n, judge_big, _ = _draw(rng, 30, 300, bias, noise)
        estimate = ppi_mean(human, judge_n, judge_big)
        covered += estimate.low <= true_mean <= estimate.high
    assert 0.92 <= covered / trials <= 0.98, covered / trials


def test_a_biased_judge_alone_misses_and_the_correction_brings_it_back():
    rng = np.random.default_rng(1)
    human, judge_n, judge_big, truth = _draw(rng, 30, 3000, 0.15, 0.05)
    assert abs(judge_big.mean() - truth.mean()) > 0.1  # the judge's own mean is off by its bias
    estimate = ppi_mean(human, judge_n, judge_big)
    assert abs(estimate.mean - truth.mean()) < 0.03
    alone = ppi_mean(human, judge_n, judge_big[:0])  # people's 30 alone
    assert estimate.high - estimate.low < 0.6 * (alone.high - alone.low)  # a judge that tracks people narrows it
    assert estimate.lam > 0.5 and alone.lam == 0


def test_a_judge_unrelated_to_people_carries_no_weight():
    rng = np.random.default_rng(2)
    human = rng.beta(2, 3, size=40)
    judge_n, judge_big = rng.random(40), rng.random(400)
    estimate = ppi_mean(human, judge_n, judge_big)
    assert estimate.lam < 0.15
    assert estimate.mean == pytest.approx(human.mean(), abs=0.02)


def test_how_many_more_person_graded_questions_would_settle_a_difference():
    rng = np.random.default_rng(3)
    diff_people = rng.normal(0.03, 0.15, size=20)  # a small real difference between two setups, per question
    diff_judge_n = diff_people + rng.normal(0, 0.05, size=20)
    diff_judge_big = rng.normal(0.03, 0.15, size=500)
    estimate = ppi_mean(diff_people, diff_judge_n, diff_judge_big)
    needed = estimate.labelled_to_settle()
    if estimate.excludes_zero():
        assert needed is not None and needed <= estimate.labelled
    else:
        assert needed is None or needed > estimate.labelled
    with pytest.raises(ValueError, match="at least two"):
        ppi_mean(diff_people[:1], diff_judge_n[:1], diff_judge_big)


def test_the_guarded_order_keeps_the_judges_order_unless_peoples_grades_overturn_it():
    """Three setups. The judge orders a > b > c. People's 30 questions say c is far better than a and b
    (overturned: c first), and that a and b are level within the noise (the judge's a > b stands)."""
    from vx_eval.core.measures.ppi import guarded_order

    rng = np.random.default_rng(0)
    n, big = 30, 300
    judge_l = np.stack([rng.normal(0.6, 0.1, n), rng.normal(0.5, 0.1, n), rng.normal(0.4, 0.1, n)])
    judge_u = np.stack([rng.normal(0.6, 0.1, big), rng.normal(0.5, 0.1, big), rng.normal(0.4, 0.1, big)])
    noise = rng.normal(0, 0.2, (3, n))
    people = np.stack([judge_l[0], judge_l[0], judge_l[2] + 0.6]) + noise
    scores = guarded_order(people, judge_l, judge_u)
    assert list(np.argsort(-scores)) == [2, 0, 1]
    # people agreeing with the judge leave its order as it is
    same = guarded_order(judge_l + rng.normal(0, 0.05, (3, n)), judge_l, judge_u)
    assert list(np.argsort(-same)) == [0, 1, 2]
    with pytest.raises(ValueError, match="setups x questions"):
        guarded_order(people[:, :1], judge_l[:, :1], judge_u)


def _skewed(rng, size):
    """Per-question values as nDCG@10 spreads them: a quarter 0, a fifth 1, the rest between (true mean 0.475)."""
    z = rng.random(size)
    return np.where(z < 0.25, 0.0, np.where(z < 0.45, 1.0, rng.beta(2, 2, size)))


@pytest.mark.parametrize(
    "judged",
    [
        lambda y, rng: np.clip(0.2 * y + 0.4 + rng.normal(0, 0.3, len(y)), 0, 1),  # weak: barely tracks people
        lambda y, rng: np.clip(y + 0.15 + rng.normal(0, 0.1, len(y)), 0, 1),  # biased
    ],
    ids=["weak", "biased"],
)
def test_at_30_person_graded_questions_the_interval_covers_at_least_94_percent(judged):
    """The papers' interval (a normal quantile, the weight tuned on the questions it corrects) covers about 93%
    at n = 30; the cross-fitted weight and Student's t cover 94% or more (`benchmarks/ppi_coverage.py
    --simulated` measures both on four judges)."""
    rng = np.random.default_rng(11)
    covered, trials, truth = 0, 2000, 0.475
    for _ in range(trials):
        y = _skewed(rng, 3030)
        f = judged(y, rng)
        estimate = ppi_mean(y[:30], f[:30], f[30:])
        covered += estimate.low <= truth <= estimate.high
    assert covered / trials >= 0.94, covered / trials


def test_the_weight_is_cross_fitted_never_tuned_on_the_questions_it_corrects():
    from vx_eval.core.measures.ppi import _cross_fitted, _tuned_lam

    rng = np.random.default_rng(2)
    y = _skewed(rng, 330)
    f = np.clip(y + rng.normal(0, 0.2, 330), 0, 1)
    lams = _cross_fitted(y[:30], f[:30], f[30:])
    assert lams[0] == pytest.approx(_tuned_lam(y[1:30:2], f[1:30:2], f[30:]))  # the even questions' weight: the odd's
    assert lams[1] == pytest.approx(_tuned_lam(y[0:30:2], f[0:30:2], f[30:]))
    estimate = ppi_mean(y[:30], f[:30], f[30:])
    assert estimate.mean == pytest.approx(float(np.mean(y[:30] - lams * (f[:30] - f[30:].mean()))))
