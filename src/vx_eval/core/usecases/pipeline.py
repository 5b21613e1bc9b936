"""The run, stage by stage as the data flows: targets (`core.run.targets`), what to search (`core.run.selection`),
searching (`core.run.search`), scoring (`core.run.scoring`), ranking and picks (`core.run.ranking`), checkpoints
(`core.run.checkpoints`) and the report put together (`core.report.assembly`), saved through a store."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vx_eval.core import remote
from vx_eval.core.config.experiment import Experiment
from vx_eval.core.contracts.engine import FUSION, Progress, SilentProgress, Target
from vx_eval.core.contracts.golden import GoldenSet, Question
from vx_eval.core.contracts.store import StoreFull
from vx_eval.core.errors import GoldenError, VxEvalError
from vx_eval.core.golden.chunks import units_for
from vx_eval.core.golden.human import with_page_grades
from vx_eval.core.golden.sources import FileCorpus, read_golden
from vx_eval.core.judging.check import measured
from vx_eval.core.judging.grading import judge_maker
from vx_eval.core.measures import metrics
from vx_eval.core.models.loading import own_models
from vx_eval.core.report.saving import check_run_id, new_run_id, provenance, save_report
from vx_eval.core.report.schema import CallCounts, Report, Settings, SetupResult, TargetInfo
from vx_eval.core.report.views import Tuning
from vx_eval.core.run import assembly, ranking, scoring, tuning
from vx_eval.core.run.checkpoints import Checkpoints, new_manifest, start_checkpoints
from vx_eval.core.run.cluster import DaskExecutor
from vx_eval.core.run.executors import Executor, SerialExecutor, ShardPart, ThreadExecutor, throughput
from vx_eval.core.run.load import Load, LoadMeter, cpus, unsteady
from vx_eval.core.run.search import SearchPlan, SetupRun, search_all
from vx_eval.core.run.selection import enumerate_setups, futile_setups, measures_for, timing_sample
from vx_eval.core.run.targets import (
    against_targets,
    close_targets,
    describe,
    open_targets,
    run_corpus,
    run_models,
)
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.judging_stage import corrected_ranking, judge_stage, judged_ranking
from vx_eval.core.usecases.plan import Plan, plan_run

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


THROUGHPUT_QUESTIONS = 50


@dataclass(frozen=True)
class RunOptions:
    """Choices made on the command line (or in Python) for one run, over what the config says."""

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
    run_id: str | None = None
    """The id a new saved run takes (the server names its runs before they start); None: made from the time."""
    on_plan: Callable[[Plan], None] | None = None
    """Told the run's plan (what it will embed and judge, with estimates) before that work starts; None: no
    plan is made (measuring it loads the models the run embeds with)."""


@dataclass(frozen=True)
class RunResult:
    report: Report
    location: str | None


def make_executor(experiment: Experiment, options: RunOptions) -> Executor:
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
            str(experiment.path),
            experiment.sha256,
            options.only,
            options.skip,
            address,
            settings.workers,
            # searches a task runs at once: one unless the config says how many (then as a thread pool would)
            settings.concurrency if "concurrency" in settings.model_fields_set else 1,
        )
    raise VxEvalError(f"no executor named '{name}'; executors: serial, thread, dask")


def _questions(experiment: Experiment, stores: Stores) -> tuple[GoldenSet, int]:
    """The golden file, with the unlabelled questions searched too where a judge grades them; and how many
    questions people labelled."""
    ev = experiment.config.evaluation
    golden = experiment.questions or with_page_grades(
        read_golden(experiment.config.golden_source, stores, judged=bool(ev.judge)),
        experiment.config.golden_source,
        stores,
    )
    labelled = golden.labelled
    if ev.judge and golden.waiting:  # a judge grades their results: they are searched too
        golden = dataclasses.replace(golden, questions=golden.questions + golden.waiting)
    if not golden.questions:
        raise GoldenError(
            f"{golden.source} has no labelled questions ({golden.unfilled} rows wait for a question, "
            f"{golden.unlabelled} for expected ids); fill each row's `question` and name the ids that "
            "answer it in `expected`"
        )
    return golden, labelled


@dataclass(frozen=True)
class Searching:
    """What the searching stage gives the rest of the run: each setup's searches, which questions were timed
    (all when None), the checkpoints (a saved run), when the run started (a resumed run's first start), and
    how many searches ran at once while times were taken."""

    runs: list[SetupRun]
    timed: set[int] | None
    checkpoints: Checkpoints | None
    started: dt.datetime
    concurrent: int
    load: Load | None = None


def _search(
    experiment: Experiment,
    plugins: Plugins,
    stores: Stores,
    options: RunOptions,
    golden: GoldenSet,
    targets: list[Target],
    started: dt.datetime,
    executor: Executor,
) -> Searching:
    """Every setup searched (resuming from checkpoints where asked), and the throughput pass if configured."""
    ev = experiment.config.evaluation
    setups = enumerate_setups(targets, plugins, options.only, options.skip)
    for warning in futile_setups(setups, experiment):
        options.progress.note(warning)
    timed = timing_sample(len(golden.questions), ev.timing_sample, ev.seed)
    checkpoints: Checkpoints | None = None
    done: dict[tuple[str, int], ShardPart] = {}
    if options.save:
        manifest = new_manifest(started, experiment.sha256, golden.sha256, setups, ev.shard_size, len(golden.questions))
        if options.run_id is not None and options.resume is None:
            manifest = manifest.model_copy(update={"id": check_run_id(options.run_id)})
        save_to = options.save_to or experiment.config.save_to
        checkpoints, done, started = start_checkpoints(stores, save_to, manifest, options.resume, options.progress)
    elif options.resume:
        raise VxEvalError("resuming continues a saved run's checkpoints: a resumed run is saved too")
    plan = SearchPlan(
        depth=ev.depth,
        seed=ev.seed,
        unit_of=units_for(ev.relevance_field, targets, ev.by_document),
        timed=timed,
        shard_size=ev.shard_size,
        done=done,
        save_shard=checkpoints.save if checkpoints else None,
    )
    meter = None if isinstance(executor, DaskExecutor) else LoadMeter.start()  # a cluster's workers: not here
    runs = search_all(setups, golden.questions, plan, options.progress, executor)
    load = Load(
        meter.others() if meter else None,
        cpus(),
        tuple((r.setup.key, round(ratio, 2)) for r in runs if (ratio := unsteady(r.times_ms)) is not None),
    )
    for worker, sent in executor.served():  # what searches on a cluster's workers sent to served models
        if targets:
            own_models(targets[0].models).absorb(f"{worker} searches", [sent])
    if ev.throughput:
        _throughput_pass(experiment, golden, timed, runs, options.progress)
    return Searching(runs, timed, checkpoints, started, executor.concurrent, load)


def _throughput_pass(
    experiment: Experiment, golden: GoldenSet, timed: set[int] | None, runs: list[SetupRun], progress: Progress
) -> None:
    """Each searched setup's throughput at the configured concurrency, on the timed questions (at most
    `THROUGHPUT_QUESTIONS`), kept on its run."""
    ev = experiment.config.evaluation
    sample = sorted(timed) if timed is not None else range(len(golden.questions))
    texts = [golden.questions[i].question for i in list(sample)[:THROUGHPUT_QUESTIONS]]
    advance = progress.start("Throughput", len([r for r in runs if r.searched]))
    for run in runs:
        if run.searched:
            run.throughput = throughput(run.setup, texts, ev.depth, ev.throughput)
        advance(1)


def _tune(
    experiment: Experiment,
    plugins: Plugins,
    targets: list[Target],
    runs: list[SetupRun],
    results: list[SetupResult],
    questions: list[Question],
    measures: list[metrics.Measure],
    settings: Settings,
    timed: set[int] | None,
) -> tuple[list[SetupResult], Tuning | None]:
    """Each local hybrid's fusion tuned by cross-validation over the kept rankings (`core.run.tuning`), as a
    setup with its held-out numbers, timed by real searches with the chosen setting on a sample."""
    tune = experiment.config.evaluation.tune
    if tune is None:
        return [], None
    local = {t.name for t in targets if FUSION not in t.capabilities}
    made = tuning.tune_all(results, questions, tune, settings, local)
    by_key, extra, infos = {r.setup.key: r for r in runs}, [], []
    sample = sorted(timed) if timed is not None else list(range(len(questions)))
    for tuned in made:
        run = tuning.tuned_setup_run(tuned, by_key[tuned.info.hybrid])
        chosen = tuned.chosen
        search = experiment.config.search.model_copy(
            update={"fusion": chosen.fusion, "alpha": chosen.alpha, "rrf_k": chosen.rrf_k or 60}
        )
        target = next(t for t in targets if t.name == run.setup.target)
        live = enumerate_setups([dataclasses.replace(target, search=search)], plugins, (tuned.info.hybrid,))[0]
        asked = [i for i in sample if i in tuned.scored][: tune.timed]
        if asked:
            live.search(questions[asked[0]].question, settings.depth)  # the warm-up, untimed
        for i in asked:
            begin = time.perf_counter()
            live.search(questions[i].question, settings.depth)
            run.times_ms[i] = (time.perf_counter() - begin) * 1000
        extra.append(scoring.score_setup(run, questions, measures, settings))
        infos.append(tuned.info.model_copy(update={"timed": len(asked)}))
    return extra, Tuning(folds=tune.folds, hybrids=infos)


def _with_calls(described: dict[str, TargetInfo], calls: dict[str, dict[str, int]]) -> dict[str, TargetInfo]:
    """Each remote target's description with what the run's calls to its service did."""
    return {
        name: info.model_copy(update={"calls": CallCounts(**calls[name])}) if name in calls else info
        for name, info in described.items()
    }


def plan_experiment(experiment: Experiment, plugins: Plugins, drafts: int | None = None) -> Plan:
    """What a run of `experiment` would embed and judge, with estimates; nothing is built, searched or saved
    (`vx-eval run --dry-run`). `drafts`: the golden file is not there yet, this many questions will be drafted."""
    stores = Stores(plugins, options=experiment.stores)
    if drafts is None:
        golden, _ = _questions(experiment, stores)
        questions, corpus = [q.question for q in golden.questions], run_corpus(experiment, stores, golden)
    else:
        questions, corpus = ["a question about it"] * drafts, run_corpus(experiment, stores)
    return plan_run(experiment, plugins, run_models(experiment, plugins), questions, corpus)


def _before_work(
    experiment: Experiment, plugins: Plugins, options: RunOptions, stores: Stores
) -> tuple[GoldenSet, int, FileCorpus | None]:
    """The run's first steps, before any long work: what a killed run left half-written swept away, the
    questions read (what an import left out said), the judge's options checked, the corpus read and the plan
    told. The questions, how many people labelled, and the corpus."""
    config = experiment.config
    if options.save:
        stores.sweep(options.save_to or config.save_to)
    golden, labelled = _questions(experiment, stores)
    for note in (*golden.damaged_grades, *(f"{golden.source}: {part.render()}" for part in golden.left_out)):
        options.progress.note(note)
    if config.evaluation.judge:
        judge = config.evaluation.judge
        judge_maker(plugins, judge, experiment.judges.get(judge))  # its options, checked before any work
    corpus = run_corpus(experiment, stores, golden)
    if options.on_plan is not None:
        asked = [q.question for q in golden.questions]
        options.on_plan(plan_run(experiment, plugins, run_models(experiment, plugins), asked, corpus))
    return golden, labelled, corpus


def run_experiment(experiment: Experiment, plugins: Plugins, options: RunOptions | None = None) -> RunResult:
    """Everything `vx-eval run` does, without printing: returns the report and where it was saved."""
    options = options or RunOptions()
    config = experiment.config
    ev = config.evaluation
    stores = Stores(plugins, options=experiment.stores)
    started = dt.datetime.now(dt.UTC)
    calls_before = remote.tally()
    golden, labelled, corpus = _before_work(experiment, plugins, options, stores)
    measures = measures_for(experiment)
    executor = make_executor(experiment, options)  # a cluster embeds the corpus too: it starts first
    try:
        targets = open_targets(
            experiment, plugins, stores, options.progress, golden, corpus=corpus, work=executor.model_work()
        )
    except BaseException:
        executor.close()
        raise
    try:
        golden, missing = against_targets(golden, targets, ev.relevance_field, ev.by_document, options.progress.note)
        searching = _search(experiment, plugins, stores, options, golden, targets, started, executor)
        runs, timed, checkpoints, started = searching.runs, searching.timed, searching.checkpoints, searching.started
        judging = judge_stage(
            experiment, plugins, options.progress, options.judge_everything, golden, labelled, targets, runs, executor
        )
        questions, judged = judging.questions, judging.info
        if judged is not None:
            agreement = measured(stores, options.save_to or config.save_to, judged)
            judged = judged.model_copy(update={"agreement": agreement})
        described = {t.name: describe(t) for t in targets}
        served = own_models(targets[0].models).usage() if targets else []
        settings = assembly.run_settings(
            experiment,
            measures,
            ev.balance if options.balance is None else options.balance,
            ev.time if options.time is None else options.time,
            timed,
            len(golden.questions),
            graded=judged is not None or assembly.enough_graded(golden.questions),
            concurrent=searching.concurrent,
            load=searching.load,
        )
        results = [scoring.score_setup(r, questions, measures, settings) for r in runs]
        tuned, tuning_info = _tune(experiment, plugins, targets, runs, results, questions, measures, settings, timed)
        described = _with_calls(described, remote.tally_since(calls_before))
    finally:
        close_targets(targets)
        executor.close()

    results += tuned
    ranked = ranking.rank(results, settings, judged.circular if judged else ())
    outcome = assembly.Outcome(
        run_id=checkpoints.run_id if checkpoints else new_run_id(started),
        started=started,
        golden=golden,
        labelled=labelled,
        questions=questions,
        targets=described,
        missing=missing,
        settings=settings,
        ranking=corrected_ranking(
            judged_ranking(ranked, runs, questions, golden, judged, settings),
            runs,
            golden,
            labelled,
            judging,
            settings,
        ),
        judge=judged,
        provenance=provenance(plugins, {name: t.models for name, t in described.items()}, served),
        tuning=tuning_info,
        corpus=corpus.cut if corpus is not None else None,
    )
    report = assembly.assemble(experiment, outcome)
    if not options.save:
        return RunResult(report, None)
    return _saved(report, golden, stores, options.save_to or config.save_to, checkpoints)


def _saved(
    report: Report, golden: GoldenSet, stores: Stores, save_to: str, checkpoints: Checkpoints | None
) -> RunResult:
    """The report saved with the golden file it read; its checkpoints cleared (the report holds everything
    they did). A full store leaves them, and says how to resume."""
    try:
        report, location = save_report(report, golden.raw, stores, save_to)
    except StoreFull as exc:
        raise checkpoints.resumable(exc) if checkpoints is not None else exc from None
    if checkpoints is not None:
        checkpoints.clear()
    return RunResult(report, location)
