"""How sure a pick is under a judge: the leaders' order, redrawn with the judge's measured disagreement.

A paired test (`core.run.ranking.how_sure`) says whether the questions tell the leader from the rest, taking
the grades as true. Where a judge gave grades, they are not: `vx-eval judge check` measured how its grades
stand against people's (the confusion matrix: people's grade by the judge's). From it, each grade the judge
gave is a draw of the grade a person would likely have given (people's grades in that column of the matrix,
with half a pair added to every cell so that no grade is ruled out by a small check); the leaders are scored
again on the measure that decided the picks, `DRAWS` times, and the report says in what share of the draws
each leads. Where the leader leads in fewer than `SURE` of them, the judge cannot tell the leaders apart.
Human grades are never redrawn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from vx_eval.core.contracts.engine import SetupResults
from vx_eval.core.contracts.golden import Question
from vx_eval.core.contracts.judge import GRADES
from vx_eval.core.golden.units import judge
from vx_eval.core.measures import metrics
from vx_eval.core.report.views import JudgeNoise, MeasuredAgreement

DRAWS = 200
SURE = 0.95
"""The share of draws the leader must lead in for the pick to hold under the judge."""
PRIOR = 0.5
"""Added to every cell of the confusion matrix: a small check rules no grade out."""


def people_given_judge(confusion: Sequence[Sequence[int]]) -> np.ndarray:
    """P(people's grade | the judge's grade), one column per judge grade, from the check's confusion matrix
    (rows people's grades 0-3, columns the judge's)."""
    counts = np.asarray(confusion, dtype=float) + PRIOR
    result: np.ndarray = counts / counts.sum(axis=0, keepdims=True)
    return result


def _judges_grades(questions: Sequence[Question], human: Sequence[Question]) -> list[list[tuple[str, int]]]:
    """Per question, the (unit, grade) pairs the judge gave: those people did not grade."""
    return [
        [(unit, grade) for unit, grade in q.grades.items() if unit not in people.relevance()]
        for q, people in zip(questions, human, strict=True)
    ]


def _redrawn(
    question: Question,
    people: Question,
    judged: Sequence[tuple[str, int]],
    cumulative: np.ndarray,
    rng: np.random.Generator,
) -> Question:
    """The question with each of the judge's grades redrawn as people would likely have given it (people's
    own grades kept)."""
    grades = dict(people.grades)
    for unit, grade in judged:
        column = cumulative[:, min(max(grade, 0), len(GRADES) - 1)]
        grades[unit] = int(np.searchsorted(column, rng.random() * column[-1], side="right"))
    return replace(question, grades=grades)


def _mean(
    scorer: metrics.Measure,
    fixed: Sequence[metrics.Judged],
    redrawn: dict[int, Question],
    run: SetupResults,
    threshold: int,
    depth: int,
) -> float:
    """A setup's mean on the measure with the redrawn questions' grades (the others' rows as made once)."""
    rows = list(fixed)
    for i, q in redrawn.items():
        rows[i] = judge(run.results[i], q, threshold)
    values = np.asarray(scorer.compute(metrics.Batch.of(rows, depth)), dtype=float)
    return float(np.nanmean(values)) if values.size else 0.0


def judge_noise(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    human: Sequence[Question],
    contenders: Sequence[str],
    measure: str,
    agreement: MeasuredAgreement,
    depth: int,
    threshold: int = 1,
    draws: int = DRAWS,
    seed: int = 0,
) -> JudgeNoise | None:
    """How often each of `contenders` (the leader first) leads on `measure` when the judge's grades in
    `questions` (those `human`, the same questions as people graded them, lacks) are redrawn as people would
    likely have given them. None where the check measured no confusion matrix or nothing was judged."""
    if len(agreement.confusion) != len(GRADES) or len(contenders) < 2:
        return None
    by_key = {r.setup.key: r for r in runs}
    if contenders[0] not in by_key:  # the leader is not a searched setup (a tuned fusion): nothing to redraw
        return None
    contenders = [k for k in contenders if k in by_key and by_key[k].results]
    judged = _judges_grades(questions, human)
    if len(contenders) < 2 or not any(judged):
        return None
    posterior = people_given_judge(agreement.confusion)
    cumulative = np.cumsum(posterior, axis=0)
    rng = np.random.default_rng(seed)
    scorer = metrics.parse(measure)
    leads = dict.fromkeys(contenders, 0)
    redrawable = [i for i, units in enumerate(judged) if units]
    # a question without the judge's grades reads the same in every draw: its rows are made once
    fixed = {
        key: [judge(results, q, threshold) for q, results in zip(questions, by_key[key].results, strict=True)]
        for key in contenders
    }
    for _ in range(draws):
        redrawn = {i: _redrawn(questions[i], human[i], judged[i], cumulative, rng) for i in redrawable}
        means = [_mean(scorer, fixed[key], redrawn, by_key[key], threshold, depth) for key in contenders]
        leads[contenders[int(np.argmax(means))]] += 1  # a tie goes to the one ranked first
    shares = {k: round(n / draws, 3) for k, n in leads.items()}
    return JudgeNoise(
        measure=measure,
        draws=draws,
        leads=shares,
        sure=shares[contenders[0]] >= SURE,
        kappa=agreement.kappa_quadratic,
        pairs=agreement.pairs,
        golden=agreement.golden,
        shipped=agreement.shipped,
    )


def noise_words(noise: JudgeNoise, leader: str) -> str:
    """What the run says of it, in one sentence, shown after "under the judge:" (so it does not say that again)."""
    kappa = f"quadratic κ {noise.kappa:.2f} on {noise.pairs:,} pairs" if noise.kappa is not None else "as checked"
    if noise.shipped:
        kappa += f"; vx-eval's own check on {noise.golden}, not on your data"
    others = sorted(((share, k) for k, share in noise.leads.items() if k != leader and share > 0), reverse=True)
    rest = "; ".join(f"{k} in {share:.0%}" for share, k in others[:3])
    if noise.sure:
        return (
            f"the pick holds: with its grades redrawn {noise.draws} times as people would "
            f"likely have given them ({kappa}), {leader} leads on {noise.measure} in {noise.leads[leader]:.0%}"
            + (f" ({rest})" if rest else "")
        )
    return (
        f"not sure: with its grades redrawn {noise.draws} times as people would likely have "
        f"given them ({kappa}), {leader} leads on {noise.measure} in only {noise.leads[leader]:.0%}"
        + (f", {rest}" if rest else "")
        + ": within the judge's measured noise these setups cannot be told apart."
    )
