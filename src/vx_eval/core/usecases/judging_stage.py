"""The judging stage of a run and what follows from it: the judge grades the setups' results (people's grades
win), its agreement with people is measured on the run's own person-graded questions, how sure the pick is under
the judge's noise, and the ranking corrected by people's grades where they graded some questions."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import Progress, Target
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.judging.audit import label_audit, unfound_labelled
from vx_eval.core.judging.corrected import corrected
from vx_eval.core.judging.grading import GradeCache, grade_run, judge_maker, with_judged_grades
from vx_eval.core.judging.here import agreement_here
from vx_eval.core.judging.noise import judge_noise, noise_words
from vx_eval.core.models.loading import own_models
from vx_eval.core.report.schema import Settings
from vx_eval.core.report.views import JudgeInfo
from vx_eval.core.run import ranking
from vx_eval.core.run.executors import Executor
from vx_eval.core.run.search import SetupRun

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


JUDGE_RIVALS = 4
"""Setups level with the leader rescored under the judge's noise (the first four in rank order): each costs a
scoring of every question per draw."""


@dataclass(frozen=True)
class Judged:
    """What the judge gave the run: the questions with its grades added (people's win), what the report says
    of it, and its grades by question index (people's questions' results too, where some were judge-only)."""

    questions: list[Question]
    info: JudgeInfo | None = None
    grades: dict[int, dict[str, int]] = field(default_factory=dict)


def judge_stage(
    experiment: Experiment,
    plugins: Plugins,
    progress: Progress,
    everything: bool,
    golden: GoldenSet,
    labelled: int,
    targets: list[Target],
    runs: list[SetupRun],
    executor: Executor,
) -> Judged:
    """The questions with the judge's grades added where the config names a judge (human labels win). Where
    people graded some questions and the judge alone the others, the judge grades people's questions' results
    too, so that its error can be measured and its measure corrected (`core.judging.corrected`)."""
    ev = experiment.config.evaluation
    if not ev.judge:
        return Judged(list(golden.questions))
    settings = experiment.judges.get(ev.judge)
    make = judge_maker(plugins, ev.judge, settings)
    cluster = executor.model_work()
    mixed = labelled >= 2 and len(golden.questions) > labelled
    with GradeCache(experiment.config.models.scores.with_name("grades.db")) as cache:
        grading = grade_run(
            runs,
            list(golden.questions),
            targets,
            make(own_models(targets[0].models)),
            ev.judge_depth,
            cache,
            progress,
            everything=everything,
            on=cluster.judging(own_models(targets[0].models), ev.judge, settings) if cluster else None,
            also=range(labelled) if mixed else (),
            labels_of=(unfound := unfound_labelled(runs, golden.questions, labelled, ev.relevance_threshold)),
        )
    questions = [with_judged_grades(q, grading.judged.get(i, {})) for i, q in enumerate(golden.questions)]
    info = grading.info
    if mixed and info is not None:  # people graded part of the run: the judge's agreement measured on it
        here = agreement_here(runs, golden.questions, labelled, grading.judged, seed=ev.seed)
        info = info.model_copy(update={"here": here})
    if info is not None:
        grades = grading.judged, grading.highest, grading.labels
        audit = label_audit(runs, golden.questions, labelled, unfound, *grades, threshold=ev.relevance_threshold)
        info = info.model_copy(update={"audit": audit})
    return Judged(questions, info, grading.judged)


def judged_ranking(
    ranked: ranking.Ranking,
    runs: list[SetupRun],
    questions: list[Question],
    golden: GoldenSet,
    judged: JudgeInfo | None,
    settings: Settings,
) -> ranking.Ranking:
    """The ranking with how sure its pick is under the judge, where a judge graded and its agreement with
    people was measured (`core.judging.noise`): the leader and the setups level with it (or, where none is,
    the one ranked next) scored again with the judge's grades redrawn."""
    best = ranked.picks.finds_the_most
    if judged is None or judged.agreement is None or best is None:
        return ranked
    level = [s.key for s in ranked.setups if s.tied_with_best and s.key != best and s.key not in judged.circular]
    following = [s.key for s in ranked.setups if s.key != best and s.pickable and s.key not in judged.circular]
    contenders = [best, *(level or following)[: JUDGE_RIVALS if level else 1]]
    noise = judge_noise(
        runs,
        questions,
        golden.questions,
        contenders,
        ranked.picking.measure,
        judged.agreement,
        settings.depth,
        settings.relevance_threshold,
        seed=settings.seed,
    )
    if noise is None:
        return ranked
    picking = ranked.picking.model_copy(update={"judge_noise": noise, "judge_sure": noise_words(noise, best)})
    return dataclasses.replace(ranked, picking=picking)


def corrected_ranking(
    ranked: ranking.Ranking,
    runs: list[SetupRun],
    golden: GoldenSet,
    labelled: int,
    judging: Judged,
    settings: Settings,
) -> ranking.Ranking:
    """The ranking with each pickable setup's measure corrected by people's grades, where a judge graded most
    questions and people some (and graded people's questions' results too); with no picks where the label
    audit found the golden file looks wrong (`core.judging.audit`)."""
    best = ranked.picks.finds_the_most
    if judging.info is not None and judging.info.audit is not None and judging.info.golden_looks_wrong():
        return ranking.without_picks(ranked, judging.info.audit)
    if judging.info is None or best is None or not judging.grades:
        return ranked
    # people's grades remove the judge's bias (prediction-powered), so no setup is left out for its relation to
    # the judge: every pickable setup is corrected and ranked
    keys = [s.key for s in ranked.setups if s.pickable]
    fixed = corrected(
        runs,
        list(golden.questions),
        labelled,
        judging.grades,
        keys,
        best,
        ranked.picking.measure,
        settings.depth,
        settings.relevance_threshold,
        related=judging.info.circular,
    )
    if fixed is None:
        return ranked
    return ranking.picked_by_people(ranked, fixed)
