"""The run's scoring stage: each setup's searches read against the golden judgements, every measure per
question, the means with bootstrap intervals, times, counts, and (for graded runs) the graded view."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.units import judge
from vx_eval.core.measures import metrics, standard, stats, ties
from vx_eval.core.measures.metrics import Judged
from vx_eval.core.report.schema import (
    Counts,
    Graded,
    GradedKind,
    PerQuestion,
    QuestionStatus,
    Settings,
    SetupResult,
    Times,
    WorkerStat,
)
from vx_eval.core.report.views import TieRange, TieView
from vx_eval.core.run.search import SetupRun

GRADED_DEPTH = 10
STRICT_GRADE = 2  # Databricks' rule for precision and MRR on graded data: relevant means grade 2 or more


def question_status(run: SetupRun, index: int, relevance_field: str | None) -> tuple[QuestionStatus, str | None]:
    """evaluated, skipped (with why) or failed (with the error) for one question of one setup."""
    if run.errors[index]:
        return "failed", run.errors[index]
    results = run.results[index]
    if relevance_field and results and all(u is None for u, _ in results):
        return "skipped", f"none of the {len(results)} results has the field '{relevance_field}'"
    return "evaluated", None


def times(values: Sequence[float | None]) -> Times:
    kept = [t for t in values if t is not None]
    summary = stats.median_p95(kept)
    return Times(median=summary["median"], p95=summary["p95"])


def workers(run: SetupRun) -> dict[str, WorkerStat]:
    """How many searches each worker ran and their median time (where the run spread them)."""
    by_worker: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    for worker, ms in zip(run.workers, run.times_ms, strict=True):
        if worker is not None:
            counts[worker] = counts.get(worker, 0) + 1
            by_worker.setdefault(worker, []).extend([ms] if ms is not None else [])
    return {w: WorkerStat(searches=counts[w], median_ms=times(by_worker[w]).median) for w in sorted(counts)}


def _failure_summary(run: SetupRun, n: int) -> str | None:
    if run.error is not None:
        return run.error
    failures = run.failures
    if not failures:
        return None
    return (
        f"{len(failures)} of {n} searches failed (its averages are over the other {n - len(failures)} questions: "
        f"partial); first: {failures[0]}"
    )


def _per_question(
    run: SetupRun,
    statuses: Sequence[tuple[QuestionStatus, str | None]],
    batch: metrics.Batch,
    measures: dict[str, np.ndarray],
    notes: list[str | None],
    graded: bool,
) -> PerQuestion:
    found = [bool(f) for f in np.asarray(batch.hit.any(axis=1))]
    first = [int(p) for p in batch.hit.argmax(axis=1) + 1]  # the first relevant result's place as returned
    return PerQuestion(
        status=[s for s, _ in statuses],
        errors=[why for _, why in statuses],
        notes=notes,
        positions=[
            int(p) if f and s == "evaluated" else None for p, f, (s, _) in zip(first, found, statuses, strict=True)
        ],
        times_ms=[round(t, 4) if t is not None else None for t in run.times_ms],
        server_ms=[round(t, 4) if t is not None else None for t in run.server_ms],
        metrics={name: [None if np.isnan(v) else float(v) for v in column] for name, column in measures.items()},
        results=[list(r) for r in run.results],
        grades=_grades(batch, statuses) if graded else None,
    )


def _summary(
    names: Sequence[str], values: np.ndarray, settings: Settings
) -> tuple[dict[str, float | None], dict[str, tuple[float, float]]]:
    """Each measure's mean over the questions it scored (None where none), and its bootstrap interval."""
    ci = stats.bootstrap_ci(values, samples=settings.bootstrap, seed=settings.seed)
    with np.errstate(invalid="ignore"):
        means = np.nanmean(values, axis=0)
    summary = {n: (None if np.isnan(v) else float(v)) for n, v in zip(names, means, strict=True)}
    return summary, {n: (float(lo), float(hi)) for n, (lo, hi) in zip(names, ci, strict=True) if not np.isnan(lo)}


def score_setup(
    run: SetupRun, questions: Sequence[Question], measures: Sequence[metrics.Measure], settings: Settings
) -> SetupResult:
    """A setup's report entry: summary, intervals, times, counts and every question's status and measures."""
    setup = run.setup
    n = len(questions)
    entry = SetupResult(
        key=setup.key,
        target=setup.target,
        engine=setup.engine,
        method=setup.method,
        models=list(setup.models),
        ranker=setup.ranker,
        label=setup.label,
        error=_failure_summary(run, n),
        counts=Counts(total=n, failed=n),
    )
    if not run.searched:  # the warm-up failed: nothing was searched
        return entry
    statuses = [question_status(run, i, settings.relevance_field) for i in range(n)]
    judged = [
        judge(results, q, settings.relevance_threshold) for q, results in zip(questions, run.results, strict=True)
    ]
    batch = metrics.Batch.of(judged, settings.depth)  # built once: every view below reads it
    values, notes = _values(batch, judged, statuses, measures, settings)
    names = [m.name for m in measures]
    evaluated = [i for i, (s, _) in enumerate(statuses) if s == "evaluated"]
    server = [t for t in run.server_ms if t is not None]
    entry = entry.model_copy(
        update={
            "times_ms": times(run.times_ms),
            "server_ms": times(server) if server else None,
            "throughput": run.throughput,
            "workers": workers(run),
            "per_question": _per_question(
                run, statuses, batch, dict(zip(names, values.T, strict=True)), notes, settings.graded
            ),
            "counts": Counts(
                total=n,
                evaluated=len(evaluated),
                skipped=sum(s == "skipped" for s, _ in statuses),
                failed=sum(s == "failed" for s, _ in statuses),
            ),
        }
    )
    if not evaluated:
        first = next(why for _, why in statuses if why)
        return entry.model_copy(
            update={"error": entry.error or f"every question was skipped or failed; first: {first}"}
        )
    summary, ci = _summary(names, values, settings)
    chosen = batch.take(evaluated)
    return entry.model_copy(
        update={
            "summary": summary,
            "ci": ci,
            "relevance_distribution": metrics.relevance_distribution(chosen, 10),
            "graded": graded_summary(batch, evaluated, settings, [q.kind for q in questions])
            if settings.graded
            else None,
            "ties": tie_view(chosen, measures, settings),
        }
    )


def _values(
    batch: metrics.Batch,
    judged: Sequence[Judged],
    statuses: Sequence[tuple[QuestionStatus, str | None]],
    measures: Sequence[metrics.Measure],
    settings: Settings,
) -> tuple[np.ndarray, list[str | None]]:
    """Every measure for every question under the chosen order of ties (NaN where it was skipped or its
    search failed: a failure is counted, never scored as 0), and why a measure could not score one (only a
    per-R cut-off can reach past the depth)."""
    values = np.column_stack([ties.scores(m, batch, settings.ties, settings.seed) for m in measures])
    values[[i for i, (status, _) in enumerate(statuses) if status != "evaluated"]] = np.nan
    per_r = [m for m in measures if m.per_relevant]
    notes: list[str | None] = [None] * len(statuses)
    if per_r:
        for i in range(len(statuses)):
            reasons = [r for m in per_r if (r := m.unscorable(judged[i], settings.depth))]
            notes[i] = "; ".join(reasons) or None
    return values, notes


def tie_view(batch: metrics.Batch, measures: Sequence[metrics.Measure], settings: Settings) -> TieView | None:
    """Every measure's mean over the evaluated questions (`batch`) under each order of the ties
    (`core.measures.ties`), where some list holds a tie; the primary measure's spread, flagged past the run's flag."""
    tied = int(ties.has_ties(batch).sum()) if len(batch.n_rel) else 0
    if not tied:
        return None

    def mean(values: np.ndarray) -> float | None:
        with np.errstate(invalid="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m = float(np.nanmean(values)) if len(values) else float("nan")
        return None if m != m else m

    ranges: dict[str, TieRange] = {}
    for measure in measures:
        if measure.definition.name in ties.UNTOUCHED:
            continue
        expected, sampled = ties.expected(measure, batch, settings.seed)
        ranges[measure.name] = TieRange(
            trec=mean(measure.compute(batch)),
            expected=mean(expected),
            optimistic=mean(ties.scores(measure, batch, "optimistic")),
            pessimistic=mean(ties.scores(measure, batch, "pessimistic")),
            sampled=sampled,
        )
    primary = ranges.get(settings.primary)
    spread = (
        primary.optimistic - primary.pessimistic
        if primary and primary.optimistic is not None and primary.pessimistic is not None
        else None
    )
    return TieView(
        questions=tied, measures=ranges, spread=spread, flagged=spread is not None and spread > settings.tie_flag
    )


def _grades(
    batch: metrics.Batch, statuses: Sequence[tuple[QuestionStatus, str | None]]
) -> list[list[int | None] | None]:
    """The grade of each of the first ten results of each evaluated question (None: unjudged)."""
    return [
        [
            int(g) if j else None
            for g, j in zip(batch.grade[i, :GRADED_DEPTH], batch.judged[i, :GRADED_DEPTH], strict=True)
        ]
        if s == "evaluated"
        else None
        for i, (s, _) in enumerate(statuses)
    ]


def _pairs_mean_grade(batch: metrics.Batch, evaluated: list[int], k: int) -> np.ndarray:
    """Databricks' mean relevance score: the mean grade over every (question, result) pair of the top `k`, a
    place no result filled left out (not counted 0, as `mean_rel@k` counts it, after ir_measures). As a
    column per question whose mean is that pooled mean: each question's summed grades over the evaluated
    questions' mean number of results (so its interval resamples questions, the count held)."""
    filled = standard.filled_places(batch, k)
    sums = np.where(filled, batch.grade, 0).sum(axis=1).astype(float)
    counts = filled.sum(axis=1)
    per_question = float(counts[evaluated].mean()) if evaluated else 0.0
    if per_question == 0:
        return np.full(len(sums), np.nan)
    result: np.ndarray = sums / per_question
    return result


def _by_place(batch: metrics.Batch, evaluated: list[int], k: int) -> list[float | None]:
    """The mean grade at each of the first `k` places over `evaluated` (a place no result filled left out)."""
    rows = batch.grade[evaluated, :k] if evaluated else np.zeros((0, k))
    filled = np.arange(rows.shape[1])[None, :] < batch.length[evaluated, None] if evaluated else np.zeros((0, k), bool)
    by_place = [float(rows[filled[:, r], r].mean()) if filled[:, r].any() else None for r in range(rows.shape[1])]
    return by_place + [None] * (k - len(by_place))


def _kinds(
    batch: metrics.Batch, evaluated: list[int], kinds: Sequence[str | None], dcg: np.ndarray
) -> dict[str, GradedKind]:
    """DCG@10, mean relevance and the mean grade by place per type of question (none where no question has one)."""
    k = GRADED_DEPTH
    out: dict[str, GradedKind] = {}
    for kind in sorted({kinds[i] for i in evaluated if i < len(kinds) and kinds[i]}, key=str):
        chosen = [i for i in evaluated if i < len(kinds) and kinds[i] == kind]
        pooled = _pairs_mean_grade(batch, chosen, k)[chosen]
        mean_rel = float(pooled.mean()) if not np.isnan(pooled).all() else None
        out[str(kind)] = GradedKind(questions=len(chosen), dcg=float(dcg[chosen].mean()), mean_rel=mean_rel,
                                    mean_grade_by_place=_by_place(batch, chosen, k))  # fmt: skip
    return out


def graded_summary(
    batch: metrics.Batch, evaluated: list[int], settings: Settings, kinds: Sequence[str | None] = ()
) -> Graded:
    """The graded view of a setup (Databricks' dashboard): DCG@10, mean relevance over the top 10's pairs,
    and precision@10 and MRR counting grade 2 or more as relevant, each with its interval; the mean grade at
    each of the first ten places (unjudged results count 0, as in DCG; a place no result filled is left
    out); and DCG@10 per question."""
    k = GRADED_DEPTH
    strict = batch.at_threshold(STRICT_GRADE)
    can_score = strict.n_rel > 0  # a question with nothing graded 2 or more cannot score the strict measures
    columns = {
        "dcg": metrics.parse(f"dcg@{k}").compute(batch),
        "mean_rel": _pairs_mean_grade(batch, evaluated, k),
        "p_strict": np.where(can_score, metrics.parse(f"p@{k}").compute(strict), np.nan),
        "mrr_strict": np.where(can_score, metrics.parse("mrr").compute(strict), np.nan),
    }
    values = np.column_stack([c[evaluated] for c in columns.values()]) if evaluated else np.zeros((0, len(columns)))
    ci = stats.bootstrap_ci(values, samples=settings.bootstrap, seed=settings.seed)
    by_place = _by_place(batch, evaluated, k)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a column no question could score: NaN, shown as none
        means = np.nanmean(values, axis=0) if len(values) else [None] * len(columns)
    kept = set(evaluated)
    return Graded(
        depth=k,
        strict_grade=STRICT_GRADE,
        **{name: (float(m) if m is not None and m == m else None) for name, m in zip(columns, means, strict=True)},
        strict_questions=int(can_score[evaluated].sum()) if evaluated else 0,
        ci={name: (float(ci[j][0]), float(ci[j][1])) for j, name in enumerate(columns)},
        mean_grade_by_place=by_place,
        dcg_per_question=[float(v) if i in kept else None for i, v in enumerate(columns["dcg"])],
        by_kind=_kinds(batch, evaluated, kinds, columns["dcg"]),
    )
