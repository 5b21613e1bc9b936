"""How far the run's judge agreed with people on this run itself: where people graded some of the run's
questions and the judge graded their results too, the pairs both graded (weighted Cohen's kappa, as `vx-eval
judge check` measures it) and the order both give the setups (Kendall's tau between the setups ordered by DCG@10
on people's grades and on the judge's, over people's questions, with a bootstrap interval over those questions).

A check measured elsewhere (vx-eval's own on TREC DL 2019, or a store's `judge check`) says how the judge did
there; this says how it did here."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from vx_eval.core.contracts.engine import SetupResults
from vx_eval.core.contracts.golden import Question
from vx_eval.core.judging.check import agreement, same_order
from vx_eval.core.judging.corrected import per_question
from vx_eval.core.measures import metrics
from vx_eval.core.report.views import AgreementHere

DRAWS = 1000
"""Bootstrap draws of people's questions for tau's interval."""


def _dcg(run: SetupResults, questions: Sequence[Question]) -> np.ndarray:
    return per_question(run, list(enumerate(questions)), metrics.parse("dcg@10"))


def _tau_interval(human: np.ndarray, judged: np.ndarray, seed: int) -> tuple[float | None, float | None]:
    """Tau's 95% percentile interval over questions drawn again with replacement (setups x questions arrays);
    None where too few draws give a tau (every setup level)."""
    rng = np.random.default_rng(seed)
    taus = []
    for _ in range(DRAWS):
        drawn = rng.integers(0, human.shape[1], size=human.shape[1])
        tau, _ = same_order(human[:, drawn].mean(axis=1).tolist(), judged[:, drawn].mean(axis=1).tolist())
        if tau is not None and not np.isnan(tau):
            taus.append(tau)
    if len(taus) < DRAWS // 2:
        return None, None
    return float(np.quantile(taus, 0.025)), float(np.quantile(taus, 0.975))


def agreement_here(
    runs: Sequence[SetupResults],
    questions: Sequence[Question],
    labelled: int,
    judged: Mapping[int, Mapping[str, int]],
    seed: int = 0,
) -> AgreementHere | None:
    """The judge's agreement with people on the first `labelled` of `questions` (people's), whose results it
    graded too (`judged`: its grades by question index). A unit people did not grade counts as their 0, as
    DCG counts it (`assumed_zero` says how many). None where the judge graded none of people's questions."""
    people = list(questions[:labelled])
    human, given, assumed = [], [], 0
    for i, q in enumerate(people):
        labels = q.relevance()
        for unit, grade in judged.get(i, {}).items():
            assumed += unit not in labels
            human.append(min(labels.get(unit, 0), 3))
            given.append(grade)
    if not human:
        return None
    pairs = agreement(human, given)
    as_judged = [dataclasses.replace(q, expected=(), grades=dict(judged.get(i, {}))) for i, q in enumerate(people)]
    scored = [r for r in runs if r.results]
    tau = low = high = None
    if len(scored) >= 2 and len(people) >= 2:
        by_people = np.stack([_dcg(r, people) for r in scored])
        by_judge = np.stack([_dcg(r, as_judged) for r in scored])
        tau, _ = same_order(by_people.mean(axis=1).tolist(), by_judge.mean(axis=1).tolist())
        tau = None if tau is None or np.isnan(tau) else tau
        if tau is not None:
            low, high = _tau_interval(by_people, by_judge, seed)
    return AgreementHere(
        questions=len(people),
        pairs=pairs.pairs,
        assumed_zero=assumed,
        kappa_linear=pairs.kappa_linear,
        kappa_quadratic=pairs.kappa_quadratic,
        exact=pairs.exact,
        setups=len(scored),
        tau=tau,
        tau_low=low,
        tau_high=high,
    )
