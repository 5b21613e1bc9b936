"""The run: open targets, check the golden file against them, search every setup, score, rank, pick, save."""

from __future__ import annotations

import dataclasses
import datetime as dt
import fnmatch
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vx_eval.core import metrics, picks, stats
from vx_eval.core.config import Experiment
from vx_eval.core.engine import (
    Hit,
    OpenContext,
    Progress,
    Setup,
    SilentProgress,
    Target,
)
from vx_eval.core.errors import EngineError, GoldenError, PluginError, VxEvalError, redact
from vx_eval.core.executors import DaskExecutor, SerialExecutor, Shard, ThreadExecutor, throughput
from vx_eval.core.golden import GoldenSet, Question
from vx_eval.core.judging import GradeCache, judge_maker, judge_run
from vx_eval.core.models import Models, ModelSettings, PairScores
from vx_eval.core.report import FORMAT, Checkpoints, new_run_id, provenance, save_report
from vx_eval.core.sources import read_corpus, read_golden
from vx_eval.core.stores import Stores
from vx_eval.core.units import document_of, finest_unit, first_position, judge, units_for

FOUND_DEPTHS = (1, 3, 5, 10, 20)
THROUGHPUT_QUESTIONS = 50


@dataclass(frozen=True)
class RunOptions:
    """Choices made on the command line for one run, over what the config says."""

    save_to: str | None = None
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    balance: float | None = None
    time: float | None = None
    save: bool = True
    progress: Progress = field(default_factory=SilentProgress)
    resume: str | None = None
    """A run id whose checkpoints to continue from (`vx-eval run CONFIG --resume RUN`)."""
    executor: str | None = None
    """Overrides the config's `execution.executor`."""
    address: str | None = None
    """Overrides the config's `execution.address` (a Dask scheduler)."""
    judge_everything: bool = False
    """`vx-eval judge check`: the judge grades human-labelled pairs too, and the report lists every verdict."""


@dataclass
class SetupRun:
    """One setup's searches: results (finest unit, score), times and errors per question."""

    setup: Setup
    error: str | None = None
    results: list[list[tuple[str, float]]] = field(default_factory=list)
    times_ms: list[float | None] = field(default_factory=list)
    server_ms: list[float | None] = field(default_factory=list)
    """What the service said it spent (OpenSearch's ``took``), per timed question, where it says."""
    workers: list[str | None] = field(default_factory=list)
    """Which worker (process or thread) searched each question."""
    throughput: list[dict[str, Any]] | None = None
    errors: list[str | None] = field(default_factory=list)


@dataclass(frozen=True)
class RunResult:
    report: dict[str, Any]
    location: str | None


def measures_for(experiment: Experiment) -> list[metrics.Measure]:
    """The configured measures plus found@1/3/5/10/20 (those the depth allows), each once, in order."""
    ev = experiment.config.evaluation
    names = [f"found@{k}" for k in FOUND_DEPTHS if k <= ev.depth] + list(ev.metrics) + [ev.primary]
    out: dict[str, metrics.Measure] = {}
    for name in names:
        measure = metrics.parse(name)
        out.setdefault(measure.name, measure)
    return list(out.values())


def open_targets(
    experiment: Experiment, plugins: Any, stores: Stores, progress: Progress, golden: GoldenSet | None = None
) -> list[Target]:
    """Every target opened (indexed where the corpus asks); `golden`, when the caller has read it already,
    saves reading it again for a corpus slice."""
    config = experiment.config
    corpus = None
    if config.corpus_source is not None:
        keep: set[str] = set()
        if config.corpus_source.limit is not None:  # a slice keeps what the questions expect
            golden = golden or read_golden(config.golden_source, stores)
            keep = {document_of(u) for q in golden.questions for u in q.expected}
        corpus = read_corpus(config.corpus_source, stores, keep)
    settings = config.models
    models = Models(
        plugins.models,
        ModelSettings(settings.threads, settings.batch_size, settings.passage_tokens),
        PairScores(settings.scores),
        settings.embeddings,
    )
    targets = []
    for target_config, options in zip(config.targets, experiment.options, strict=True):
        engine = plugins.engines.get(target_config.engine, where=f"target {target_config.name}")()
        context = OpenContext(target_config.name, experiment.base_dir, corpus, progress, models)
        handle = engine.open(options, context)
        targets.append(
            Target(target_config.name, target_config.engine, handle, target_config.options, models, config.search)
        )
    return targets


def check_missing(golden: GoldenSet, targets: Sequence[Target]) -> dict[str, dict[str, list[str]]]:
    """Per target: expected documents it does not hold, and the questions none of whose answers it holds."""
    wanted = {document_of(u) for q in golden.questions for u in q.expected}
    report: dict[str, dict[str, list[str]]] = {}
    for target in targets:
        absent = target.handle.missing(wanted)
        if not absent:
            continue
        lost = [q.id for q in golden.questions if all(document_of(u) in absent for u in q.expected)]
        hurt = [
            q.id for q in golden.questions if q.id not in lost and any(document_of(u) in absent for u in q.expected)
        ]
        report[target.name] = {"documents": sorted(absent), "questions": lost, "partly": hurt}
    return report


def missing_notes(missing: dict[str, dict[str, list[str]]]) -> list[str]:
    """The missing documents in the words the command line and the report page use."""
    notes = []
    for target, info in missing.items():
        docs = info["documents"]
        shown = ", ".join(docs[:10]) + (f" and {len(docs) - 10} more" if len(docs) > 10 else "")
        line = f"{target} does not hold {len(docs)} expected document{'s' * (len(docs) != 1)}: {shown}."
        if info["questions"]:
            qs = info["questions"]
            line += (
                f" {len(qs)} question{'s' * (len(qs) != 1)} cannot be found there: "
                + ", ".join(qs[:10])
                + (" …" if len(qs) > 10 else "")
                + "."
            )
        line += " They stay in and score 0; correct the ids in the golden file, or add the documents."
        notes.append(line)
    return notes


def enumerate_setups(targets: Sequence[Target], plugins: Any, options: RunOptions) -> list[Setup]:
    setups: dict[str, Setup] = {}
    for target in targets:
        for provider in plugins.setups:
            for setup in provider().setups(target):
                if setup.key in setups:
                    raise PluginError(f"two setups share the key '{setup.key}' (from provider '{provider.name}')")
                setups[setup.key] = setup
    if not setups:
        caps = {t.name: sorted(t.capabilities) for t in targets}
        raise EngineError(f"no setup can search these targets (capabilities: {caps}); is anything indexed?")
    chosen = list(setups.values())
    if options.only:
        for pattern in options.only:
            if not any(fnmatch.fnmatchcase(s.key, pattern) for s in chosen):
                raise VxEvalError(f"--only {pattern} matches no setup; setups: {', '.join(setups)}")
        chosen = [s for s in chosen if any(fnmatch.fnmatchcase(s.key, p) for p in options.only)]
    if options.skip:
        methods = {s.method for s in chosen}
        for method in options.skip:
            if method not in methods:
                raise VxEvalError(
                    f"--skip {method} names no method of these setups; methods: {', '.join(sorted(methods))}"
                )
        chosen = [s for s in chosen if s.method not in options.skip]
        if not chosen:
            raise VxEvalError("--skip leaves no setup to run")
    return chosen


UnitOf = Callable[[str, Hit], "str | None"]


ShardDone = dict[tuple[str, int], dict[str, list]]
"""Finished (setup key, shard) searches read back from checkpoints: results, times_ms, server_ms, errors."""


def search_all(
    setups: Sequence[Setup],
    questions: Sequence[Question],
    depth: int,
    seed: int,
    progress: Progress,
    unit_of: UnitOf = finest_unit,
    timed: set[int] | None = None,
    shard_size: int | None = None,
    done: ShardDone | None = None,
    save_shard: Callable[[str, int, dict[str, list]], None] | None = None,
    executor: Any = None,
) -> list[SetupRun]:
    """One untimed warm-up per setup, then every question through every live setup.

    Questions in `timed` (all when None) are searched end to end with nothing reused and their times kept;
    the others only feed the measures, and setups may reuse model scores for them (`reuse_allowed`).
    Questions go in shards of `shard_size`; the `executor` (serial by default, see `core.executors`) runs
    them, and each finished (setup, shard) part goes to `save_shard`; parts already in `done` (a resumed
    run) are not searched again.
    """
    n = len(questions)
    size = shard_size or max(n, 1)
    shards = range((n + size - 1) // size)
    done = done or {}
    runs = [SetupRun(s) for s in setups]
    for run in runs:
        run.results = [[] for _ in range(n)]
        run.times_ms, run.server_ms, run.errors, run.workers = [None] * n, [None] * n, [None] * n, [None] * n
        if all((run.setup.key, shard) in done for shard in shards):
            continue  # every shard is back from checkpoints: no warm-up needed
        try:
            run.setup.search(questions[0].question, depth)
        except Exception as exc:  # an engine's failure is a finding about that setup, not a crash of the run
            run.error = redact(f"warm-up search failed: {type(exc).__name__}: {exc}")
    live = {r.setup.key: r for r in runs if r.error is None}

    def span_of(shard: int) -> range:
        return range(shard * size, min(n, (shard + 1) * size))

    def fill(run: SetupRun, shard: int, part: dict[str, list]) -> None:
        for offset, index in enumerate(span_of(shard)):
            run.results[index] = [(u, float(sc)) for u, sc in part["results"][offset]]
            run.times_ms[index] = part["times_ms"][offset]
            run.server_ms[index] = part["server_ms"][offset]
            run.errors[index] = part["errors"][offset]
            run.workers[index] = (part.get("workers") or [None] * len(span_of(shard)))[offset]

    work = []
    for shard in shards:
        for run in live.values():
            if (run.setup.key, shard) in done:
                fill(run, shard, done[(run.setup.key, shard)])
        todo = [r.setup for r in live.values() if (r.setup.key, shard) not in done]
        if todo:
            span = span_of(shard)
            work.append((Shard(shard, span, [questions[i].question for i in span], timed, depth, seed), todo))
    advance = progress.start("Searching", sum(len(shard.span) * len(todo) for shard, todo in work))
    executor = executor or SerialExecutor()
    for key, shard, part in executor.run(work, unit_of, advance):
        fill(live[key], shard, part)
        if save_shard is not None:
            save_shard(key, shard, part)
    for run in live.values():
        failures = [e for e in run.errors if e]
        if failures:
            run.error = f"{len(failures)} of {n} searches failed; first: {failures[0]}"
    for run in runs:
        if run.setup.key not in live:
            run.results, run.times_ms, run.server_ms, run.errors, run.workers = [], [], [], [], []
    return runs


def timing_sample(questions: int, size: int | None, seed: int) -> set[int] | None:
    """Which questions are timed end to end: all (None), or a seeded sample of `size`."""
    if size is None or size >= questions:
        return None
    return set(random.Random(seed + 1).sample(range(questions), size))


def question_status(run: SetupRun, index: int, relevance_field: str | None) -> tuple[str, str | None]:
    """evaluated, skipped (with why) or failed (with the error) for one question of one setup."""
    if run.errors[index]:
        return "failed", run.errors[index]
    results = run.results[index]
    if relevance_field and results and all(u is None for u, _ in results):
        return "skipped", f"none of the {len(results)} results has the field '{relevance_field}'"
    return "evaluated", None


def score_setup(
    run: SetupRun,
    questions: Sequence[Question],
    measures: Sequence[metrics.Measure],
    settings: dict[str, Any],
) -> dict[str, Any]:
    """A setup's report entry: summary, intervals, times, counts and every question's status and measures."""
    setup = run.setup
    entry: dict[str, Any] = {
        "key": setup.key,
        "target": setup.target,
        "engine": setup.engine,
        "method": setup.method,
        "models": list(setup.models),
        "ranker": setup.ranker,
        "label": setup.label,
        "error": run.error,
        "summary": {},
        "ci": {},
        "times_ms": {"median": None, "p95": None},
        "server_ms": None,
        "throughput": None,
        "workers": {},
        "per_question": {},
        "counts": {"total": len(questions), "evaluated": 0, "skipped": 0, "failed": 0},
    }
    if not run.results:  # the warm-up failed: nothing was searched
        entry["counts"]["failed"] = len(questions)
        return entry
    statuses = [question_status(run, i, settings["relevance_field"]) for i in range(len(questions))]
    threshold = settings["relevance_threshold"]
    judged = [judge(results, q, threshold) for q, results in zip(questions, run.results, strict=True)]
    batch = metrics.Batch.of(judged, settings["depth"])
    values = np.column_stack([m.compute(batch) for m in measures])
    notes: list[str | None] = []
    for i, (status, _) in enumerate(statuses):
        entry["counts"][status] += 1
        if status == "skipped":
            values[i] = np.nan
        reasons = [r for m in measures if (r := m.unscorable(judged[i], settings["depth"]))]
        notes.append("; ".join(reasons) or None)
    names = [m.name for m in measures]
    entry["times_ms"] = stats.median_p95([t for t in run.times_ms if t is not None])
    server = [t for t in run.server_ms if t is not None]
    entry["server_ms"] = stats.median_p95(server) if server else None
    by_worker: dict[str, list[float]] = {}
    for worker, ms in zip(run.workers, run.times_ms, strict=True):
        if worker is not None:
            by_worker.setdefault(worker, []).extend([ms] if ms is not None else [])
    entry["throughput"] = run.throughput
    entry["workers"] = {
        w: {
            "searches": sum(1 for x in run.workers if x == w),
            "median_ms": stats.median_p95(t)["median"] if t else None,
        }
        for w, t in sorted(by_worker.items())
    }
    entry["per_question"] = {
        "status": [s for s, _ in statuses],
        "errors": [why for _, why in statuses],
        "notes": notes,
        "positions": [
            first_position(j) if s == "evaluated" else None for j, (s, _) in zip(judged, statuses, strict=True)
        ],
        "times_ms": [round(t, 4) if t is not None else None for t in run.times_ms],
        "server_ms": [round(t, 4) if t is not None else None for t in run.server_ms],
        "metrics": {n: [None if np.isnan(v) else float(v) for v in values[:, j]] for j, n in enumerate(names)},
        "results": [[[u, s] for u, s in results] for results in run.results],
    }
    if entry["counts"]["evaluated"] == 0:
        first = next(why for _, why in statuses if why)
        entry["error"] = entry["error"] or f"every question was skipped or failed; first: {first}"
        return entry
    ci = stats.bootstrap_ci(values, samples=settings["bootstrap"], seed=settings["seed"])
    with np.errstate(invalid="ignore"):
        means = np.nanmean(values, axis=0) if len(values) else np.zeros(len(names))
    entry["summary"] = {n: (None if np.isnan(v) else float(v)) for n, v in zip(names, means, strict=True)}
    entry["ci"] = {n: [float(lo), float(hi)] for n, (lo, hi) in zip(names, ci, strict=True) if not np.isnan(lo)}
    evaluated = [i for i, (s, _) in enumerate(statuses) if s == "evaluated"]
    entry["relevance_distribution"] = metrics.relevance_distribution(
        metrics.Batch.of([judged[i] for i in evaluated], settings["depth"]), 10
    )
    if settings.get("graded"):
        strict = metrics.Batch.of(
            [judge(results, q, STRICT_GRADE) for q, results in zip(questions, run.results, strict=True)],
            settings["depth"],
        )
        entry["graded"] = graded_summary(batch, strict, evaluated, settings)
        entry["per_question"]["grades"] = [
            [
                int(g) if j else None
                for g, j in zip(batch.grade[i, :GRADED_DEPTH], batch.judged[i, :GRADED_DEPTH], strict=True)
            ]
            if s == "evaluated"
            else None
            for i, (s, _) in enumerate(statuses)
        ]
    return entry


GRADED_DEPTH = 10


STRICT_GRADE = 2  # Databricks' rule for precision and MRR on graded data: relevant means grade 2 or more


def graded_summary(
    batch: metrics.Batch, strict: metrics.Batch, evaluated: list[int], settings: dict[str, Any]
) -> dict[str, Any]:
    """The graded view of a setup (Databricks' dashboard): DCG@10, mean relevance@10, and precision@10 and
    MRR counting grade 2 or more as relevant, each with its interval; the mean grade at each of the first
    ten places (unjudged results count 0, as in DCG); and each measure per question."""
    k = GRADED_DEPTH
    rows = batch.grade[evaluated, :k] if evaluated else np.zeros((0, k))
    returned = np.arange(k)[None, :] < batch.length[evaluated, None] if evaluated else np.zeros((0, k), dtype=bool)
    names = [f"dcg@{k}", f"mean_rel@{k}", f"p@{k} (grade ≥ {STRICT_GRADE})", f"mrr (grade ≥ {STRICT_GRADE})"]
    columns = [
        metrics.parse(f"dcg@{k}").compute(batch),
        metrics.parse(f"mean_rel@{k}").compute(batch),
        metrics.parse(f"p@{k}").compute(strict),
        metrics.parse("mrr").compute(strict),
    ]
    values = np.column_stack([c[evaluated] for c in columns]) if evaluated else np.zeros((0, len(names)))
    ci = stats.bootstrap_ci(values, samples=settings["bootstrap"], seed=settings["seed"])
    by_place = []
    for r in range(k):
        filled = returned[:, r]
        by_place.append(float(rows[filled, r].mean()) if filled.any() else None)
    means = values.mean(axis=0) if len(values) else [None] * len(names)
    return {
        **{n: (float(m) if m is not None else None) for n, m in zip(names, means, strict=True)},
        "ci": {n: [float(x) for x in ci[j]] for j, n in enumerate(names)},
        "mean_grade_by_place": by_place,
        "dcg@10 per question": [float(v) if i in set(evaluated) else None for i, v in enumerate(columns[0])],
    }


def graded_questions(entries: list[dict[str, Any]], ids: list[str], shown: int = 5) -> dict[str, Any]:
    """Databricks' dashboard over the run: the best DCG@10 and the setup that reached it, the strongest and
    weakest questions (by that setup's DCG@10) and the failed ones (its first result graded 0 or ungraded)."""
    scored = [e for e in entries if e.get("graded") and e["error"] is None and e["graded"]["dcg@10"] is not None]
    if not scored:
        return {}
    best = max(scored, key=lambda e: e["graded"]["dcg@10"])
    per_question = best["graded"]["dcg@10 per question"]
    ranked = sorted(((v, q) for q, v in zip(ids, per_question, strict=True) if v is not None), reverse=True)
    grades = best["per_question"].get("grades") or []
    return {
        "best": {"key": best["key"], "label": best["label"], "dcg@10": best["graded"]["dcg@10"]},
        "strongest": [{"id": q, "dcg@10": v} for v, q in ranked[:shown]],
        "weakest": [{"id": q, "dcg@10": v} for v, q in ranked[::-1][:shown]] if len(ranked) > shown else [],
        "failed": [q for q, g in zip(ids, grades, strict=True) if g is not None and (not g or not g[0])],
    }


def compare_with_best(entries: list[dict[str, Any]], best: str | None, settings: dict[str, Any]) -> dict[str, Any]:
    """Paired randomization tests of every setup against `finds_the_most` on the primary measure, Holm-corrected;
    setups the tests cannot tell from it are marked tied. Returns the smallest difference these questions
    could detect."""
    primary = settings["primary"]
    by_key = {e["key"]: e for e in entries}
    if best is None or not settings["permutations"]:
        return {"metric": primary, "value": None}
    leader = np.array(by_key[best]["per_question"]["metrics"][primary], dtype=float)
    others = [e for e in entries if e["key"] != best and e["summary"] and e["error"] is None]
    pvalues, mdes = [], []
    for e in others:
        values = np.array(e["per_question"]["metrics"][primary], dtype=float)
        pvalues.append(
            stats.paired_randomization(leader, values, samples=settings["permutations"], seed=settings["seed"])
        )
        lo, hi = stats.paired_bootstrap_ci(values, leader, samples=settings["bootstrap"], seed=settings["seed"])
        e["vs_best"] = {"metric": primary, "delta": float(np.nanmean(values - leader)), "ci": [lo, hi]}
        mdes.append(stats.detectable_difference(leader - values))
    for e, p, adjusted in zip(others, pvalues, stats.holm(pvalues), strict=True):
        e["vs_best"].update(p=p, p_holm=adjusted)
        e["tied_with_best"] = adjusted >= settings["alpha"]
    by_key[best]["tied_with_best"] = True
    known = [m for m in mdes if m]  # a rival that scored every question alike tells nothing of the noise
    if not known:  # assume a rival as variable as the leader and uncorrelated with it
        single = stats.detectable_difference(leader - np.nanmean(leader))
        known = [single * np.sqrt(2)] if single else []
    return {
        "metric": primary,
        "value": float(np.median(known)) if known else None,
        "meaning": "the smallest mean difference in the primary measure a paired test on these questions "
        "would detect (two-sided 5%, 80% power); smaller differences cannot be told from noise",
    }


def rank_and_pick(entries: list[dict[str, Any]], primary: str, balance: float, time_points: float) -> dict[str, Any]:
    scored = [
        picks.Scored(
            key=e["key"],
            primary=e["summary"].get(primary) or 0.0,
            at1=e["summary"].get("found@1") or 0.0,
            median_ms=e["times_ms"]["median"] if e["times_ms"]["median"] is not None else float("inf"),
            failed=e["error"] is not None or not e["summary"],
        )
        for e in entries
    ]
    order = {s.key: i for i, s in enumerate(picks.ranked(scored), start=1)}
    near = picks.neighbours(entries)
    for e in entries:
        e["rank"] = order[e["key"]]
        e["neighbours"] = near[e["key"]]
        e.setdefault("tied_with_best", False)
    entries.sort(key=lambda e: e["rank"])
    return {
        "picks": picks.picks(scored, balance=balance, time=time_points),
        "frontier": picks.frontier(scored),
    }


def make_executor(experiment: Experiment, options: RunOptions) -> Any:
    """The executor the config (or the command line) names."""
    settings = experiment.config.execution
    name = options.executor or settings.executor
    if name == "serial":
        return SerialExecutor()
    if name == "thread":
        return ThreadExecutor(settings.concurrency, dict(settings.per_engine), dict(settings.rate))
    if name == "dask":
        if experiment.path is None:
            raise VxEvalError("the dask executor needs a config file: workers open their targets from it")
        address = options.address or settings.address
        return DaskExecutor(
            str(experiment.path), experiment.sha256, options.only, options.skip, address, settings.workers
        )
    raise VxEvalError(f"no executor named '{name}'; executors: serial, thread, dask")


def start_checkpoints(
    experiment: Experiment,
    golden: GoldenSet,
    setups: Sequence[Setup],
    stores: Stores,
    options: RunOptions,
    started: dt.datetime,
) -> tuple[Checkpoints | None, ShardDone, dt.datetime]:
    """The run's checkpoints (none when it is not saved), what a resumed run already finished, and when the
    run started (a resumed run keeps its first start)."""
    if not options.save:
        if options.resume:
            raise VxEvalError("--resume continues a saved run; it cannot go with --no-save")
        return None, {}, started
    save_to = options.save_to or experiment.config.save_to
    keys = [s.key for s in setups]
    shards = (
        len(golden.questions) + experiment.config.evaluation.shard_size - 1
    ) // experiment.config.evaluation.shard_size
    if options.resume is None:
        checkpoints = Checkpoints(stores, save_to, new_run_id(started))
        checkpoints.start(
            {
                "id": checkpoints.run_id,
                "started_at": started.isoformat(timespec="seconds"),
                "config_sha256": experiment.sha256,
                "golden_sha256": golden.sha256,
                "setups": keys,
                "shard_size": experiment.config.evaluation.shard_size,
                "questions": len(golden.questions),
            }
        )
        return checkpoints, {}, started
    checkpoints = Checkpoints(stores, save_to, options.resume)
    manifest = checkpoints.manifest()
    if manifest is None:
        raise VxEvalError(
            f"no checkpoints of run '{options.resume}' at {save_to}: it finished (see `vx-eval runs show`) or "
            "never started there; start a new run without --resume"
        )
    changed = [
        what
        for what, ours, theirs in (
            ("the golden file", golden.sha256, manifest["golden_sha256"]),
            ("the config", experiment.sha256, manifest["config_sha256"]),
            ("the setups", keys, manifest["setups"]),
        )
        if ours != theirs
    ]
    if changed:
        raise VxEvalError(
            f"{' and '.join(changed)} changed since run {options.resume} started, so its finished searches would "
            "not add up to one run; start a new run without --resume"
        )
    done = checkpoints.done(keys, shards)
    options.progress.note(
        f"resuming run {options.resume}: {len(done)} of {len(keys) * shards} (setup, shard) parts done"
    )
    return checkpoints, done, dt.datetime.fromisoformat(manifest["started_at"])


def run_experiment(experiment: Experiment, plugins: Any, options: RunOptions | None = None) -> RunResult:
    """Everything `vx-eval run` does, without printing: returns the report and where it was saved."""
    options = options or RunOptions()
    config = experiment.config
    ev = config.evaluation
    stores = Stores(plugins, options=experiment.stores)
    started = dt.datetime.now(dt.UTC)
    golden = read_golden(config.golden_source, stores)
    make_judge = judge_maker(plugins, ev.judge, experiment.judges.get(ev.judge)) if ev.judge else None
    labelled = golden.labelled
    if ev.judge and golden.waiting:  # a judge grades their results: they are searched too
        golden = dataclasses.replace(golden, questions=golden.questions + golden.waiting)
    if not golden.questions:
        raise GoldenError(
            f"{golden.source} has no labelled questions ({golden.unfilled} rows wait for a question, "
            f"{golden.unlabelled} for expected ids); fill each row's `question` and name the ids that "
            "answer it in `expected`"
        )
    measures = measures_for(experiment)
    targets = open_targets(experiment, plugins, stores, options.progress, golden)
    try:
        missing = {} if ev.relevance_field else check_missing(golden, targets)
        for note in missing_notes(missing):
            options.progress.note(note)
        setups = enumerate_setups(targets, plugins, options)
        units = units_for(ev.relevance_field, targets)
        timed = timing_sample(len(golden.questions), ev.timing_sample, ev.seed)
        checkpoints, done, started = start_checkpoints(experiment, golden, setups, stores, options, started)
        executor = make_executor(experiment, options)
        try:
            runs = search_all(
                setups,
                golden.questions,
                ev.depth,
                ev.seed,
                options.progress,
                units,
                timed,
                ev.shard_size,
                done,
                checkpoints.save if checkpoints else None,
                executor,
            )
        finally:
            executor.close()
        if ev.throughput:
            sample = sorted(timed) if timed is not None else range(len(golden.questions))
            texts = [golden.questions[i].question for i in list(sample)[:THROUGHPUT_QUESTIONS]]
            advance = options.progress.start("Throughput", len([r for r in runs if r.error is None]))
            for run in runs:
                if run.error is None:
                    run.throughput = throughput(run.setup, texts, ev.depth, ev.throughput)
                advance(1)
        questions, judged = list(golden.questions), None
        if make_judge is not None:
            judge_plugin = make_judge(targets[0].models)
            cache = GradeCache(experiment.config.models.scores.with_name("grades.db"))
            try:
                questions, judged = judge_run(
                    runs,
                    questions,
                    targets,
                    judge_plugin,
                    ev.judge_depth,
                    cache,
                    options.progress,
                    everything=options.judge_everything,
                )
            finally:
                cache.close()
        describe = {
            t.name: {"engine": t.engine, **t.handle.describe(), "capabilities": sorted(t.capabilities)} for t in targets
        }
    finally:
        for target in targets:
            target.handle.close()

    balance = ev.balance if options.balance is None else options.balance
    time_points = ev.time if options.time is None else options.time
    settings = {
        "metrics": [m.name for m in measures],
        "primary": metrics.parse(ev.primary).name,
        "depth": ev.depth,
        "balance_points": balance,
        "time_points": time_points,
        "seed": ev.seed,
        "bootstrap": ev.bootstrap,
        "permutations": ev.permutations,
        "alpha": ev.alpha,
        "relevance_threshold": ev.relevance_threshold,
        "relevance_field": ev.relevance_field,
        "timing": {
            "questions_timed": len(timed) if timed is not None else len(golden.questions),
            "questions": len(golden.questions),
            "sample": "all" if timed is None else f"seeded sample (seed {ev.seed + 1})",
        },
        "search": config.search.model_dump(mode="json"),
        "models": config.models.model_dump(mode="json"),
        "confidence": 0.95,
        "graded": golden.max_grade > 1 or judged is not None,
    }
    entries = [score_setup(r, questions, measures, settings) for r in runs]
    chosen = rank_and_pick(entries, settings["primary"], balance, time_points)
    detectable = compare_with_best(entries, chosen["picks"]["finds_the_most"], settings)
    report: dict[str, Any] = {
        "format": FORMAT,
        "id": checkpoints.run_id if checkpoints else new_run_id(started),
        "name": config.name,
        "status": "done" if chosen["picks"]["finds_the_most"] else "failed",
        "created_at": started.isoformat(timespec="seconds"),
        "duration_s": round((dt.datetime.now(dt.UTC) - started).total_seconds(), 3),
        "config": {"path": str(experiment.path) if experiment.path else None, "sha256": experiment.sha256},
        "golden": {
            "source": golden.source,
            "sha256": golden.sha256,
            "questions": labelled + golden.unfilled + golden.unlabelled,
            "labelled": labelled,
            "unfilled": golden.unfilled,
            "unlabelled": golden.unlabelled,
            "drafts": golden.drafts,
            "max_grade": golden.max_grade,
        },
        "question_ids": [q.id for q in golden.questions],
        "collections": sorted({d.get("collection", name) for name, d in describe.items()}),
        "targets": describe,
        "missing": missing,
        "missing_notes": missing_notes(missing),
        "settings": settings,
        "setups": entries,
        **chosen,
        "detectable_difference": detectable,
        "judge": judged,
        "graded_questions": graded_questions(entries, [q.id for q in questions]) if settings["graded"] else None,
        "provenance": provenance(plugins, {n: d.get("models", []) for n, d in describe.items()}),
    }
    location = None
    if options.save:
        save_to = options.save_to or config.save_to
        location = save_report(report, golden.raw, stores, save_to)
        if checkpoints is not None:
            checkpoints.clear()  # the report holds everything they did
    return RunResult(report, location)
