"""A setup's report entry (`core.run.scoring.score_setup`), read directly: means over the evaluated questions
only, failures counted and named, intervals around the mean, and a setup whose warm-up failed scoring nothing."""

from __future__ import annotations

import pytest

from vx_eval.core.contracts.engine import Setup
from vx_eval.core.contracts.golden import Question
from vx_eval.core.measures import metrics
from vx_eval.core.report.schema import Settings
from vx_eval.core.run.scoring import score_setup
from vx_eval.core.run.search import SetupRun

QUESTIONS = [
    Question("q1", "one?", ("d1",)),
    Question("q2", "two?", ("d2",)),
    Question("q3", "three?", ("d3",)),
    Question("q4", "four?", ("d4",)),
]


def _run(results, errors=None, error=None) -> SetupRun:
    setup = Setup("t.keyword", "t", "sqlite", "keyword", "Keyword", run=lambda text, k: [])
    n = len(results)
    return SetupRun(
        setup,
        error=error,
        results=results,
        times_ms=[1.0 + i for i in range(n)],
        server_ms=[None] * n,
        workers=[None] * n,
        errors=errors or [None] * n,
    )


def test_the_means_are_over_the_evaluated_questions_and_a_failure_is_counted_not_scored():
    results = [
        [("d1", 3.0), ("x", 2.0)],  # found at 1: found@1 1, mrr 1
        [("x", 3.0), ("d2", 2.0)],  # found at 2: found@1 0, mrr 1/2
        [("x", 3.0), ("y", 2.0)],  # not found: 0, 0
        [],  # failed
    ]
    run = _run(results, errors=[None, None, None, "timed out"])
    measures = [metrics.parse("found@1"), metrics.parse("mrr")]
    entry = score_setup(run, QUESTIONS, measures, Settings(metrics=["found@1", "mrr"], bootstrap=200))
    assert entry.counts.total == 4 and entry.counts.evaluated == 3 and entry.counts.failed == 1
    assert entry.summary["found@1"] == pytest.approx(1 / 3)
    assert entry.summary["mrr"] == pytest.approx((1 + 0.5 + 0) / 3)
    lo, hi = entry.ci["mrr"]
    assert lo <= entry.summary["mrr"] <= hi
    assert entry.per_question.status == ["evaluated", "evaluated", "evaluated", "failed"]
    assert "timed out" in (entry.error or "")
    assert entry.times_ms.median == pytest.approx(2.5)


def test_a_setup_whose_warm_up_failed_scores_nothing_and_says_why():
    run = _run([[], [], [], []], error="the engine refused the connection")
    entry = score_setup(run, QUESTIONS, [metrics.parse("mrr")], Settings(metrics=["mrr"]))
    assert entry.summary == {} or all(v is None for v in entry.summary.values())
    assert entry.counts.failed == 4 and entry.counts.evaluated == 0
    assert "refused the connection" in (entry.error or "")
