"""A judge's measure corrected by people (`core.judging.corrected`), on setups whose results and grades are
made here: a judge that grades as people do changes nothing; a lenient judge's inflation is taken back out;
the leader's leads and how many graded questions would settle them; and when there is nothing to correct."""

from __future__ import annotations

import numpy as np
import pytest

from vx_eval.core.contracts.engine import Setup
from vx_eval.core.contracts.golden import Question
from vx_eval.core.judging.corrected import corrected
from vx_eval.core.run.search import SetupRun

N = 40
LABELLED = 15


def _setup(key: str, results: list[list[tuple[str, float]]]) -> SetupRun:
    n = len(results)
    return SetupRun(Setup(key, "t", "sqlite", key, key, run=lambda text, k: []), results=results,
                    times_ms=[1.0] * n, server_ms=[None] * n, workers=[None] * n, errors=[None] * n)  # fmt: skip


def _world(seed: int = 0):
    """Three setups over N questions; each question has 2 relevant documents of 10; the better a setup, the
    likelier it ranks them first. People grade the first LABELLED questions."""
    rng = np.random.default_rng(seed)
    questions, runs = [], {"good": [], "fair": [], "poor": []}
    truth = {}
    for i in range(N):
        relevant = {f"d{i}-0", f"d{i}-1"}
        truth[i] = {u: 1 for u in relevant}
        docs = [f"d{i}-{j}" for j in range(10)]
        for key, skill in (("good", 0.8), ("fair", 0.5), ("poor", 0.2)):
            order = sorted(docs, key=lambda d, s=skill: -(rng.random() + (s if d in relevant else 0)))
            runs[key].append([(d, float(10 - r)) for r, d in enumerate(order)])
        questions.append(Question(f"q{i}", f"question {i}?", tuple(sorted(relevant)) if i < LABELLED else ()))
    return questions, {k: _setup(k, v) for k, v in runs.items()}, truth


def test_a_judge_that_grades_as_people_do_changes_nothing():
    questions, runs, truth = _world()
    judged = {i: dict(truth[i]) for i in range(N)}  # the judge agrees with people everywhere
    fixed = corrected(list(runs.values()), questions, LABELLED, judged, list(runs), "good", "ndcg@10", 10)
    assert fixed is not None and fixed.labelled == LABELLED and fixed.unlabelled == N - LABELLED
    alone = corrected(list(runs.values()), questions[:LABELLED] + [q for q in questions[LABELLED:]], LABELLED,
                      judged, list(runs), "good", "ndcg@10", 10)  # fmt: skip
    assert alone == fixed
    assert fixed.best == "good"
    for key in runs:
        assert fixed.setups[key].low <= fixed.setups[key].mean <= fixed.setups[key].high
    assert fixed.leads["poor"].low > 0  # good over poor is plain on 40 questions
    assert fixed.leads["poor"].settle_with == LABELLED


def test_a_lenient_judges_inflation_is_taken_back_out():
    questions, runs, truth = _world(1)
    lenient = {i: {**dict(truth[i]), f"d{i}-2": 1, f"d{i}-3": 1} for i in range(N)}  # two more "relevant" each
    fixed = corrected(list(runs.values()), questions, LABELLED, lenient, list(runs), "good", "found@3", 10)
    assert fixed is not None
    people = corrected(list(runs.values()), questions, LABELLED, {i: dict(truth[i]) for i in range(N)},
                       list(runs), "good", "found@3", 10)  # fmt: skip
    for key in runs:  # the judge alone would say more is found; corrected, the estimate is back near people's
        assert abs(fixed.setups[key].mean - people.setups[key].mean) < 0.15
        assert fixed.setups[key].weight <= 1


@pytest.mark.parametrize("labelled, keys", [(1, ["good", "fair"]), (N, ["good", "fair"]), (LABELLED, ["good"])])
def test_nothing_is_corrected_without_both_kinds_of_questions_or_a_second_setup(labelled, keys):
    questions, runs, truth = _world()
    judged = {i: dict(truth[i]) for i in range(N)}
    assert corrected(list(runs.values()), questions, labelled, judged, keys, "good", "ndcg@10", 10) is None
