"""A judge's measure corrected by people: where a run's judge graded most questions and people graded some, each
setup's mean and the leader's lead over every other setup are estimated by prediction-powered inference
(`core.measures.ppi`): the judge's mean over every question, corrected by how far its grades moved the
measure from people's on the questions people graded (whose results the judge grades too). The intervals cover
whatever the judge's bias; each lead says about how many questions people would have to grade to settle it."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

import numpy as np

from vx_eval.core.contracts.engine import SetupResults
from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.units import judge
from vx_eval.core.measures import metrics
from vx_eval.core.measures.ppi import guarded_order, ppi_mean
from vx_eval.core.report.views import Corrected, CorrectedLead, CorrectedMean


def per_question(
    run: SetupResults,
    rows: Sequence[tuple[int, Question]],
    scorer: metrics.Measure,
    depth: float = float("inf"),
    threshold: int = 1,
) -> np.ndarray:
    """`scorer` on each (question index, question) of `rows`, read against the question's grades (0 where the
    measure is undefined)."""
    judged = [judge(run.results[i], q, threshold) for i, q in rows]
    values = np.asarray(scorer.compute(metrics.Batch.of(judged, depth)), dtype=float)
    out: np.ndarray = np.nan_to_num(values)
    return out


def _leads(values: Mapping[str, tuple[np.ndarray, ...]], best: str, labelled: int) -> dict[str, CorrectedLead]:
    """`best`'s lead over every other setup, paired question by question, with the graded questions that
    would settle it."""
    leads = {}
    top = values[best]
    for k, other in values.items():
        if k == best:
            continue
        e = ppi_mean(top[0] - other[0], top[1] - other[1], top[2] - other[2])
        settle = labelled if e.excludes_zero() else e.labelled_to_settle()
        leads[k] = CorrectedLead(mean=e.mean, low=e.low, high=e.high, settle_with=settle)
    return leads


def _in_order(keys: Sequence[str], scores: np.ndarray, leader: str) -> list[str]:
    """The keys by score, highest first, the judge's leader first among equals."""
    return [k for k, _ in sorted(zip(keys, scores, strict=True), key=lambda kv: (-kv[1], kv[0] != leader))]


def corrected(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    labelled: int,
    judged: Mapping[int, Mapping[str, int]],
    keys: Sequence[str],
    leader: str,
    measure: str,
    depth: int,
    threshold: int = 1,
    related: Collection[str] = (),
) -> Corrected | None:
    """The corrected means of `keys`, the best (the judge's unless people's grades overturn it: `guarded_order`)
    and its leads over the others. `questions` are the run's, the first `labelled`
    as people graded them (the rest are read through the judge's grades alone); `judged` holds the judge's
    grades by question index, people's questions included. None where fewer than two questions were graded by
    both, or none by the judge alone. `related`: the setups the judge is related to, corrected like the rest
    (people's grades remove its bias on them too) and listed as re-admitted."""
    by_key = {r.setup.key: r for r in runs if r.results}
    keys = [k for k in keys if k in by_key]
    if labelled < 2 or len(questions) <= labelled or leader not in keys or len(keys) < 2:
        return None
    if not any(judged.get(i) for i in range(labelled)):
        return None
    scorer = metrics.parse(measure)
    people = [(i, questions[i]) for i in range(labelled)]
    by_judge = [(i, replace(questions[i], expected=(), grades=dict(judged.get(i, {})))) for i in range(len(questions))]
    alone = by_judge[labelled:]
    by_judge = by_judge[:labelled]
    values = {
        k: tuple(per_question(by_key[k], rows, scorer, depth, threshold) for rows in (people, by_judge, alone))
        for k in keys
    }
    means = {}
    for k, (y, f_n, f_big) in values.items():
        e = ppi_mean(y, f_n, f_big)
        means[k] = CorrectedMean(mean=e.mean, low=e.low, high=e.high, weight=e.lam)
    # the judge's order unless people's grades overturn it (`guarded_order`)
    people_l, judge_l, judge_u = (np.stack([values[k][part] for k in keys]) for part in range(3))
    order = guarded_order(people_l, judge_l, judge_u)
    ordered = _in_order(keys, order, leader)
    best = ordered[0]
    return Corrected(
        measure=measure,
        labelled=labelled,
        unlabelled=len(questions) - labelled,
        leader=leader,
        setups=means,
        leads=_leads(values, best, labelled),
        best=best,
        order=ordered,
        readmitted=[k for k in keys if k in related],
    )
