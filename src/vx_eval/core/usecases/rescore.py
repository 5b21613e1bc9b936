"""A saved run scored again from the rankings it kept: new measures, another relevance threshold or a judge's
grades, with no search at all. The new report names the run it came from and keeps that run's times."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vx_eval.core.contracts.engine import Setup
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.errors import ConfigError, GoldenError, quoted
from vx_eval.core.golden.chunks import rescored_by_document
from vx_eval.core.golden.files import parse_golden
from vx_eval.core.judging.grading import GradeCache, judge_maker, judge_run
from vx_eval.core.measures import metrics
from vx_eval.core.models.loading import own_models
from vx_eval.core.report import headroom
from vx_eval.core.report.saving import new_run_id
from vx_eval.core.report.schema import DerivedFrom, Report, SetupResult
from vx_eval.core.report.views import JudgeInfo
from vx_eval.core.run import assembly, ranking, scoring
from vx_eval.core.run.search import SetupRun
from vx_eval.core.run.targets import close_targets, open_targets
from vx_eval.core.stores import Stores

if TYPE_CHECKING:
    from vx_eval.core.config.experiment import Experiment
    from vx_eval.core.contracts.engine import Progress
    from vx_eval.core.plugins import Plugins


TIMES_NOTE = "no search was run: the rankings and search times are those of the run it came from"


def _never_searched(text: str, k: int) -> list[Any]:
    raise RuntimeError("a rescored run searches nothing")


def setup_run(setup: SetupResult) -> SetupRun:
    """A setup's searches as its report kept them: rankings, times and failures per question."""
    made = Setup(
        key=setup.key,
        target=setup.target,
        engine=setup.engine,
        method=setup.method,
        label=setup.label,
        run=_never_searched,
        models=tuple(setup.models),
        ranker=setup.ranker,
    )
    pq = setup.per_question
    if not pq.status:  # nothing searched (its warm-up failed)
        return SetupRun(made, error=setup.error or "nothing was searched")
    n = len(pq.status)
    failed = [pq.errors[i] if s == "failed" else None for i, s in enumerate(pq.status)]
    return SetupRun(
        made,
        results=[list(r) for r in pq.results] if pq.results else [[] for _ in range(n)],
        times_ms=list(pq.times_ms) or [None] * n,
        server_ms=list(pq.server_ms) or [None] * n,
        workers=[None] * n,
        errors=failed,
        throughput=setup.throughput,
    )


def searched_questions(report: Report, golden: GoldenSet) -> list[Question]:
    """The golden questions in the order the run searched them (its `question_ids`)."""
    by_id = {q.id: q for q in (*golden.questions, *golden.waiting)}
    lost = [q for q in report.question_ids if q not in by_id]
    if lost:
        raise GoldenError(
            f"the golden file of run {report.id} has no question {quoted(lost[0])} although the run searched it"
        )
    return [by_id[q] for q in report.question_ids]


@dataclass(frozen=True)
class Rescoring:
    """What to change: measures to add (or to use instead), the relevance threshold, the primary measure."""

    measures: Sequence[str] = ()
    replace: bool = False
    relevance_threshold: int | None = None
    primary: str | None = None


def _measures(report: Report, asked: Rescoring) -> list[metrics.Measure]:
    problems = metrics.check_metrics(
        list(asked.measures), asked.primary or report.settings.primary, report.settings.depth
    )
    if problems:
        raise ConfigError("; ".join(message for _, message in problems))
    kept = [m for m in report.settings.metrics if not asked.replace or m.startswith("found@")]
    names = [*kept, *asked.measures, asked.primary or report.settings.primary]
    out: dict[str, metrics.Measure] = {}
    for name in names:
        measure = metrics.parse(name)
        out.setdefault(measure.name, measure)
    return list(out.values())


def rescore(
    report: Report,
    golden: GoldenSet,
    asked: Rescoring,
    judged: tuple[list[Question], JudgeInfo] | None = None,
) -> Report:
    """`report` scored again over its kept rankings (`judged`: the questions with a judge's grades, and what
    the report says of the judge). The picks, tests and intervals are made again; the times are the run's."""
    if report.judge is not None and judged is None:
        raise ConfigError(
            f"run {report.id} was graded by the judge {quoted(report.judge.judge)}, whose grades it does not keep: "
            "rescore it with that judge (its grades are cached, so it asks nothing again)"
        )
    if any(s.per_question.status and not s.per_question.results for s in report.setups):
        raise ConfigError(f"run {report.id} kept no rankings (saved before rankings were kept): it cannot be rescored")
    searched = searched_questions(report, golden)
    questions = judged[0] if judged else rescored_by_document(searched, report.settings.by_document)
    measures = _measures(report, asked)
    threshold = asked.relevance_threshold or report.settings.relevance_threshold
    settings = report.settings.model_copy(
        update={
            "metrics": [m.name for m in measures],
            "primary": metrics.parse(asked.primary).name if asked.primary else report.settings.primary,
            "relevance_threshold": threshold,
            "graded": judged is not None or assembly.enough_graded(questions),
        }
    )
    results = [
        scoring.score_setup(setup_run(s), questions, measures, settings).model_copy(
            update={"times_ms": s.times_ms, "server_ms": s.server_ms, "workers": s.workers}  # as measured
        )
        for s in report.setups
    ]
    ranked = ranking.rank(results, settings, judged[1].circular if judged else ())
    room = headroom.headroom(ranked.setups, questions, settings, ranked.picks.finds_the_most)
    now = dt.datetime.now(dt.UTC)
    return report.model_copy(
        update={
            "id": new_run_id(now),
            "created_at": now.isoformat(timespec="seconds"),
            "settings": settings,
            "setups": ranked.setups,
            "picks": ranked.picks,
            "picking": ranked.picking,
            "frontier": ranked.frontier,
            "detectable_difference": ranked.detectable,
            "judge": judged[1] if judged else None,
            "graded_questions": assembly.dashboard(ranked, questions, settings, room, judged[1] if judged else None),
            "derived_from": DerivedFrom(run=report.id, how="rescored", note=TIMES_NOTE),
            "headroom": room,
            "pairs": headroom.all_pairs(ranked.setups, settings),
        }
    )


def kept_questions(report: Report, golden_raw: bytes, where: str) -> tuple[GoldenSet, list[Question]]:
    """The run's golden file (the exact bytes it read) and its questions in the order the run searched them."""

    golden = parse_golden(golden_raw, where, judged=report.judge is not None)
    return golden, searched_questions(report, golden)


def rejudge(
    report: Report,
    questions: Sequence[Question],
    experiment: Experiment,
    plugins: Plugins,
    judge: str,
    depth: int,
    progress: Progress,
) -> tuple[list[Question], JudgeInfo]:
    """The judge `judge` grades the kept top `depth` of every setup (reading the passages from the targets
    of `experiment`, opened but never searched): the questions with its grades, and what it did."""

    make = judge_maker(plugins, judge, experiment.judges.get(judge))
    names = {s.target for s in report.setups}
    targets = open_targets(experiment, plugins, Stores(plugins, options=experiment.stores), progress)
    try:
        absent = sorted(names - {t.name for t in targets})
        if absent:
            raise ConfigError(
                f"the config names no target {quoted(absent[0])}, which run {report.id} searched: the judge reads "
                "each result's text from the target that returned it; give the run's own config"
            )
        runs = [setup_run(s) for s in report.setups]
        with GradeCache(experiment.config.models.scores.with_name("grades.db")) as cache:
            return judge_run(
                runs, list(questions), targets, make(own_models(targets[0].models)), depth, cache, progress
            )
    finally:
        close_targets(targets)
