"""Intervals, paired tests, Holm's correction and the detectable difference."""

from __future__ import annotations

import numpy as np
import pytest

from vx_eval.core.measures import stats


def test_bootstrap_interval_holds_the_mean_and_is_seeded():
    values = np.random.default_rng(0).random((200, 2))
    ci = stats.bootstrap_ci(values, samples=500, seed=3)
    assert ci.shape == (2, 2)
    for (lo, hi), mean in zip(ci, values.mean(axis=0), strict=True):
        assert lo < mean < hi and hi - lo < 0.2
    assert np.array_equal(ci, stats.bootstrap_ci(values, samples=500, seed=3))
    assert not np.array_equal(ci, stats.bootstrap_ci(values, samples=500, seed=4))


def test_bootstrap_leaves_out_questions_a_measure_could_not_score():
    values = np.array([[1.0, np.nan], [1.0, 0.0], [1.0, 0.0]])
    ci = stats.bootstrap_ci(values, samples=200)
    assert ci[0].tolist() == [1.0, 1.0]
    assert ci[1].tolist() == [0.0, 0.0]
    assert stats.bootstrap_ci(np.array([0.5]), samples=100).tolist() == [[0.5, 0.5]]


def test_paired_randomization_tells_a_real_difference_from_noise():
    rng = np.random.default_rng(1)
    a = rng.random(300)
    assert stats.paired_randomization(a, a) == 1.0
    noise = a + rng.normal(0, 0.01, 300)
    assert stats.paired_randomization(a, noise, samples=2000) > 0.05
    assert stats.paired_randomization(a, a - 0.1, samples=2000) < 0.001
    assert stats.paired_randomization(a, noise, samples=500, seed=7) == stats.paired_randomization(
        a, noise, samples=500, seed=7
    )


def test_holm_adjusts_step_down_and_stays_monotone():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5]) == [0.5]
    assert stats.holm([0.9, 0.9]) == [1.0, 1.0]


def test_detectable_difference_shrinks_with_more_questions():
    rng = np.random.default_rng(2)
    small = stats.detectable_difference(rng.normal(0, 0.3, 50))
    large = stats.detectable_difference(rng.normal(0, 0.3, 5000))
    assert small == pytest.approx(2.8 * 0.3 / np.sqrt(50), rel=0.25)
    assert large < small / 5
    assert stats.detectable_difference(np.array([0.1])) is None
