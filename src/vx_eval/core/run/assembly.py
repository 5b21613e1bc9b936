"""The run's last stage: its settings, the graded dashboard over all setups, and the `Report` put together."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.measures import metrics
from vx_eval.core.report import headroom
from vx_eval.core.report.missing import missing_notes
from vx_eval.core.report.schema import (
    FORMAT,
    ConfigInfo,
    Graded,
    Missing,
    Provenance,
    Report,
    Settings,
    SetupResult,
    TargetInfo,
    Timing,
)
from vx_eval.core.report.views import (
    BestGraded,
    CorpusCut,
    GoldenInfo,
    GradedDashboard,
    GradedQuestion,
    Headroom,
    JudgeInfo,
    Tuning,
)
from vx_eval.core.run.load import Load, loaded
from vx_eval.core.run.ranking import Ranking

SHOWN_QUESTIONS = 5


def run_settings(
    experiment: Experiment,
    measures: Sequence[metrics.Measure],
    balance: float,
    time_points: float,
    timed: set[int] | None,
    questions: int,
    graded: bool,
    concurrent: int = 1,
    load: Load | None = None,
) -> Settings:
    ev = experiment.config.evaluation
    return Settings(
        metrics=[m.name for m in measures],
        primary=metrics.parse(ev.primary).name,
        depth=ev.depth,
        balance_points=balance,
        time_points=time_points,
        seed=ev.seed,
        bootstrap=ev.bootstrap,
        permutations=ev.permutations,
        alpha=ev.alpha,
        relevance_threshold=ev.relevance_threshold,
        relevance_field=ev.relevance_field,
        by_document=ev.by_document.model_dump(exclude_none=True) if ev.by_document else None,
        timing=Timing(
            questions_timed=len(timed) if timed is not None else questions,
            questions=questions,
            sample="all" if timed is None else f"sample (evaluation.seed {ev.seed})",
            concurrent=concurrent,
            others_cores=None if load is None or load.others is None else round(load.others, 2),
            cores=0 if load is None else load.cores,
            loaded=load is not None and loaded(load.others, load.cores),
            unsteady={} if load is None else dict(load.unsteady),
        ),
        search=experiment.config.search.model_dump(mode="json"),
        models=experiment.config.models.model_dump(mode="json"),
        graded=graded,
        ties=ev.ties,
        tie_flag=ev.tie_flag,
    )


GRADED_AT_LEAST = 5
GRADED_SHARE = 0.2


def graded_count(questions: Sequence[Question]) -> int:
    """Questions that give some unit a grade above 1 (binary labels say nothing graded)."""
    return sum(1 for q in questions if max(q.relevance().values(), default=0) > 1)


def enough_graded(questions: Sequence[Question]) -> bool:
    """Whether people graded enough questions for the graded view to say something: at least five, and at
    least a fifth of them (one graded question among 26 says nothing of a setup)."""
    count = graded_count(questions)
    return count >= max(GRADED_AT_LEAST, math.ceil(GRADED_SHARE * len(questions)))


def _best_graded(
    setups: Sequence[SetupResult], leader: str | None, left_out: Collection[str]
) -> tuple[SetupResult, Graded] | None:
    """The setup with the best DCG@10 and its graded view: the leader where it is level with others, else the
    higher ranked; never one `left_out`; None where no setup was graded."""
    scored = [
        (s, s.graded)
        for s in setups
        if s.graded is not None and s.error is None and s.graded.dcg is not None and s.key not in left_out
    ]
    if not scored:
        return None
    places = {s.key: i for i, (s, _) in enumerate(scored)}
    return max(scored, key=lambda pair: (pair[1].dcg or 0.0, pair[0].key == leader, -places[pair[0].key]))


Scored = list[tuple[float, str]]


def _strongest_and_weakest(
    ids: Sequence[str], per_question: Sequence[float | None], found: Sequence[int]
) -> tuple[Scored, Scored]:
    """The strongest questions (DCG@10 above 0, found by some setup) and the weakest of the rest, at most
    `SHOWN_QUESTIONS` each and never one question in both; no weakest where fewer than two were scored."""
    ranked = sorted(((v, q) for q, v in zip(ids, per_question, strict=True) if v is not None), reverse=True)
    where = {q: i for i, q in enumerate(ids)}
    strongest = [(v, q) for v, q in ranked if v > 0 and found[where[q]] > 0][: min(SHOWN_QUESTIONS, len(ranked) // 2)]
    shown = {q for _, q in strongest}
    if len(ranked) <= 1:
        return strongest, []
    weakest = [(v, q) for v, q in ranked[::-1] if q not in shown][: min(SHOWN_QUESTIONS, len(ranked) - len(shown))]
    return strongest, weakest


def graded_questions(
    setups: Sequence[SetupResult],
    ids: Sequence[str],
    leader: str | None = None,
    found_by: Sequence[int] = (),
    left_out: Collection[str] = (),
) -> GradedDashboard | None:
    """Databricks' dashboard over the run: the best DCG@10 and the setup that reached it (the leader where it
    is level with others, else the higher ranked), the strongest and weakest questions (by that setup's
    DCG@10; never the same question in both, and only questions some setup finds among the strongest, as
    `found_by` counts them per question) and the failed ones (its first result graded 0 or ungraded). Setups
    `left_out` (those the judge's own model ranks) are never the best."""
    chosen = _best_graded(setups, leader, left_out)
    if chosen is None:
        return None
    best, view = chosen
    strongest, weakest = _strongest_and_weakest(ids, view.dcg_per_question, list(found_by) or [1] * len(ids))
    grades = best.per_question.grades or []
    return GradedDashboard(
        best=BestGraded(key=best.key, label=best.label, dcg=view.dcg or 0.0),
        strongest=[GradedQuestion(id=q, dcg=v) for v, q in strongest],
        weakest=[GradedQuestion(id=q, dcg=v) for v, q in weakest],
        failed=[q for q, g in zip(ids, grades, strict=True) if g is not None and (not g or not g[0])],
    )


def dashboard(
    ranking: Ranking, questions: Sequence[Question], settings: Settings, room: Headroom | None, judge: JudgeInfo | None
) -> GradedDashboard | None:
    """The graded dashboard of a ranked run where it is graded (`graded_questions`): its leader the pick,
    its strongest questions among those some setup finds (`room`'s count), the circular setups never best."""
    if not settings.graded:
        return None
    found_by = room.found_by if room is not None else ()
    circular = judge.circular if judge is not None else ()
    ids = [q.id for q in questions]
    return graded_questions(ranking.setups, ids, ranking.picks.finds_the_most, found_by, circular)


def golden_info(golden: GoldenSet, labelled: int) -> GoldenInfo:
    return GoldenInfo(
        source=golden.source,
        sha256=golden.sha256,
        questions=labelled + golden.unfilled + golden.unlabelled,
        labelled=labelled,
        unfilled=golden.unfilled,
        unlabelled=golden.unlabelled,
        drafts=golden.drafts,
        max_grade=golden.max_grade,
        graded=graded_count(golden.questions),
        human_grades=golden.human_grades,
        human_grades_sha256=golden.human_grades_sha256,
    )


@dataclass(frozen=True)
class Outcome:
    """Everything the earlier stages found, for `assemble`."""

    run_id: str
    started: dt.datetime
    golden: GoldenSet
    labelled: int
    questions: Sequence[Question]
    targets: Mapping[str, TargetInfo]
    missing: Mapping[str, Missing]
    settings: Settings
    ranking: Ranking
    judge: JudgeInfo | None
    provenance: Provenance
    tuning: Tuning | None = None
    corpus: CorpusCut | None = None


def assemble(experiment: Experiment, outcome: Outcome) -> Report:
    ranking = outcome.ranking
    any_scored = any(s.scored for s in ranking.setups)
    room = headroom.headroom(ranking.setups, outcome.questions, outcome.settings, ranking.picks.finds_the_most)
    return Report(
        format=FORMAT,
        id=outcome.run_id,
        name=experiment.config.name,
        status="completed" if any_scored else "failed",
        created_at=outcome.started.isoformat(timespec="seconds"),
        duration_s=round((dt.datetime.now(dt.UTC) - outcome.started).total_seconds(), 3),
        config=ConfigInfo(path=str(experiment.path) if experiment.path else None, sha256=experiment.sha256),
        golden=golden_info(outcome.golden, outcome.labelled),
        question_ids=[q.id for q in outcome.golden.questions],
        collections=sorted({t.collection or name for name, t in outcome.targets.items()}),
        targets=dict(outcome.targets),
        missing=dict(outcome.missing),
        missing_notes=missing_notes(outcome.missing),
        corpus=outcome.corpus,
        settings=outcome.settings,
        setups=ranking.setups,
        picks=ranking.picks,
        picking=ranking.picking,
        frontier=ranking.frontier,
        detectable_difference=ranking.detectable,
        judge=outcome.judge,
        graded_questions=dashboard(ranking, outcome.questions, outcome.settings, room, outcome.judge),
        provenance=outcome.provenance,
        headroom=room,
        pairs=headroom.all_pairs(ranking.setups, outcome.settings),
        tuning=outcome.tuning,
    )
