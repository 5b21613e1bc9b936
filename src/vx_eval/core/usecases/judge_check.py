"""`vx-eval judge check`: a judge measured against people's grades. Every setup of a config whose golden file
people graded is searched (nothing saved), the judge grades every result in the first places, and what it
gave is compared with what people gave (`core.judging.check`: agreement, the setups' order, cut points
fitted); it is also probed with stuffed passages (`core.judging.gullible`). A use case over the run
pipeline, so it lives beside it, above the judging room."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import Progress, SilentProgress
from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.sources import read_golden
from vx_eval.core.golden.units import document_of
from vx_eval.core.golden.units import judge as read_results
from vx_eval.core.judging.check import JudgeCheck, Order, PairCheck, SetupOrder, agreement, calibrate, same_order
from vx_eval.core.judging.grading import judge_maker
from vx_eval.core.judging.gullible import probe
from vx_eval.core.measures import metrics
from vx_eval.core.report.views import Gullibility, JudgeInfo
from vx_eval.core.run.targets import run_corpus, run_models
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.core.usecases.plan import Plan

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


def check_judge(
    experiment: Experiment,
    plugins: Plugins,
    name: str,
    depth: int = 10,
    progress: Progress | None = None,
    on_plan: Callable[[Plan], None] | None = None,
) -> JudgeCheck:
    """Search every setup of the experiment (nothing saved), let the judge grade every result in the first
    `depth` places, and compare it with the human grades of the golden file (an unjudged result counts as
    grade 0, as in DCG). `on_plan` is told what the run will embed and judge before it starts."""
    config = experiment.config
    evaluation = config.evaluation.model_copy(update={"judge": name, "judge_depth": depth})
    checked = dataclasses.replace(experiment, config=config.model_copy(update={"evaluation": evaluation}))
    options = RunOptions(save=False, progress=progress or SilentProgress(), judge_everything=True, on_plan=on_plan)
    report = run_experiment(checked, plugins, options).report
    graded = report.judge or JudgeInfo(judge=name, depth=depth)
    golden = read_golden(config.golden_source, Stores(plugins, options=experiment.stores))
    people = {q.id: q for q in golden.questions}
    by_judge: dict[str, dict[str, int]] = {}
    verdicts = graded.verdicts or []
    for qid, unit, grade, _ in verdicts:
        by_judge.setdefault(qid, {})[unit] = grade
    human, judged, assumed, listed = [], [], 0, []
    raw = {(qid, unit): r for qid, unit, _, r in verdicts}
    for qid, units in by_judge.items():
        if qid not in people:
            continue  # a question nobody labelled has no human grades to compare with
        labels = people[qid].relevance()
        for unit, grade in units.items():
            assumed += unit not in labels
            human.append(min(labels.get(unit, 0), 3))
            judged.append(grade)
            listed.append(PairCheck(id=qid, unit=unit, human=human[-1], judge=grade, raw=raw[(qid, unit)]))
    dcg = metrics.parse("dcg@10")
    keys, dcg_human, dcg_judge = [], [], []
    for setup in report.setups:
        if setup.error or not setup.per_question.results:
            continue
        rows_h, rows_j = [], []
        for qid, results in zip(report.question_ids, setup.per_question.results, strict=True):
            if qid not in people:
                continue
            q = people[qid]
            as_judged = dataclasses.replace(q, expected=(), grades=by_judge.get(qid, {}))
            rows_h.append(read_results(results, q))
            rows_j.append(read_results(results, as_judged))
        keys.append(setup.key)
        dcg_human.append(float(np.mean(dcg.compute(metrics.Batch.of(rows_h)))))
        dcg_judge.append(float(np.mean(dcg.compute(metrics.Batch.of(rows_j)))))
    tau, p = same_order(dcg_human, dcg_judge)
    ordered = sorted(zip(keys, dcg_human, dcg_judge, strict=True), key=lambda t: -t[1])
    gullibility = _gullibility(checked, plugins, name, golden.questions)
    return JudgeCheck(
        gullibility=gullibility,
        judge=graded.model_copy(update={"verdicts": None}),
        golden=report.golden,
        agreement=agreement(human, judged).model_copy(update={"assumed_zero": assumed}),
        pairs=listed,
        order=Order(setups=[SetupOrder(key=k, dcg_human=h, dcg_judge=j) for k, h, j in ordered], tau=tau, p=p),
        calibration=calibrate(listed, graded.cut_points),
    )


def _gullibility(
    experiment: Experiment, plugins: Plugins, name: str, questions: Sequence[Question]
) -> Gullibility | None:
    """The judge probed with stuffed passages from the config's corpus (None where it declares none)."""
    corpus = run_corpus(experiment, Stores(plugins, options=experiment.stores))
    if corpus is None:
        return None
    passages = {doc.id: f"{doc.title}\n{doc.text}" if doc.title else doc.text for doc in corpus}
    judge = judge_maker(plugins, name, experiment.judges.get(name))(run_models(experiment, plugins))
    asked = [(q.question, [document_of(u) for u in q.expected]) for q in questions]
    return probe(judge, asked, passages, seed=experiment.config.evaluation.seed)
