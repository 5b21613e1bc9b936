"""The run's searching stage: one untimed warm-up per setup, then every question through every setup that
warmed up, in shards an executor runs, each finished shard handed on to be checkpointed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from vx_eval.core.contracts.engine import Progress, Setup
from vx_eval.core.contracts.golden import Question
from vx_eval.core.errors import service_text
from vx_eval.core.golden.units import finest_unit
from vx_eval.core.report.schema import Result, ThroughputLevel
from vx_eval.core.run.executors import Executor, SerialExecutor, Shard, ShardPart, UnitOf

ShardDone = dict[tuple[str, int], ShardPart]
"""Finished (setup key, shard) searches read back from checkpoints."""


@dataclass(frozen=True)
class SearchPlan:
    """How a run searches its questions: to what depth, with which seed (the setups' order per question),
    what a result's unit is, which questions are timed (all when None), in shards of what size (one shard
    when None), which (setup, shard) parts are back from checkpoints already (`done`, a resumed run), and
    where each finished part goes (`save_shard`, the run's checkpoints)."""

    depth: int
    seed: int
    unit_of: UnitOf = finest_unit
    timed: set[int] | None = None
    shard_size: int | None = None
    done: ShardDone = field(default_factory=dict)
    save_shard: Callable[[str, int, ShardPart], None] | None = None


@dataclass
class SetupRun:
    """One setup's searches: results (finest unit, score), times and errors per question. `error` says why
    the setup searched nothing (its warm-up failed); per-question failures are in `errors`."""

    setup: Setup
    error: str | None = None
    results: list[list[Result]] = field(default_factory=list)
    times_ms: list[float | None] = field(default_factory=list)
    server_ms: list[float | None] = field(default_factory=list)
    """What the service said it spent (OpenSearch's ``took``), per timed question, where it says."""
    workers: list[str | None] = field(default_factory=list)
    """Which worker (process or thread) searched each question."""
    throughput: list[ThroughputLevel] | None = None
    errors: list[str | None] = field(default_factory=list)

    @property
    def searched(self) -> bool:
        return self.error is None

    @property
    def failures(self) -> list[str]:
        return [e for e in self.errors if e]

    def fill(self, span: range, part: ShardPart) -> None:
        for offset, index in enumerate(span):
            self.results[index] = [(u, float(sc)) for u, sc in part.results[offset]]
            self.times_ms[index] = part.times_ms[offset]
            self.server_ms[index] = part.server_ms[offset]
            self.errors[index] = part.errors[offset]
            self.workers[index] = part.workers[offset]


def _warm_up(run: SetupRun, text: str, depth: int) -> None:
    try:
        run.setup.search(text, depth)
    except Exception as exc:  # an engine's failure is a finding about that setup, not a crash of the run
        run.error = f"warm-up search failed: {service_text(exc)}"


def _work(
    spans: Sequence[range], live: dict[str, SetupRun], questions: Sequence[Question], plan: SearchPlan
) -> list[tuple[Shard, list[Setup]]]:
    """Each shard with the live setups still to search it; the parts a resumed run has back from its
    checkpoints filled in instead."""
    work = []
    for shard, span in enumerate(spans):
        for run in live.values():
            if (run.setup.key, shard) in plan.done:
                run.fill(span, plan.done[(run.setup.key, shard)])
        todo = [r.setup for r in live.values() if (r.setup.key, shard) not in plan.done]
        if todo:
            texts = [questions[i].question for i in span]
            work.append((Shard(shard, span, texts, plan.timed, plan.depth, plan.seed), todo))
    return work


def search_all(
    setups: Sequence[Setup],
    questions: Sequence[Question],
    plan: SearchPlan,
    progress: Progress,
    executor: Executor | None = None,
) -> list[SetupRun]:
    """One untimed warm-up per setup, then every question through every live setup, as `plan` says.

    Questions the plan times are searched end to end with nothing reused and their times kept; the others
    only feed the measures, and setups may reuse model scores for them (`reuse_allowed`). The `executor`
    (serial by default, see `core.run.executors`) runs the shards, and each finished (setup, shard) part
    goes to the plan's `save_shard`; parts already `done` (a resumed run) are not searched again.
    """
    n = len(questions)
    size = plan.shard_size or max(n, 1)
    shards = range((n + size - 1) // size)
    done, depth = plan.done, plan.depth
    runs = [SetupRun(s) for s in setups]

    def span_of(shard: int) -> range:
        return range(shard * size, min(n, (shard + 1) * size))

    for run in runs:
        run.results = [[] for _ in range(n)]
        run.times_ms, run.server_ms, run.errors, run.workers = [None] * n, [None] * n, [None] * n, [None] * n
        if not all((run.setup.key, shard) in done for shard in shards):  # all back from checkpoints: no warm-up
            _warm_up(run, questions[0].question, depth)
    live = {r.setup.key: r for r in runs if r.searched}
    work = _work([span_of(shard) for shard in shards], live, questions, plan)
    sized = getattr(progress, "plan", None)  # optional: a progress that keeps the run's size (the server's)
    if sized is not None:
        sized(len(live), n)
    advance = progress.start("Searching", sum(len(shard.span) * len(todo) for shard, todo in work))
    executor = executor or SerialExecutor()
    for key, shard, part in executor.run(work, plan.unit_of, advance):
        live[key].fill(span_of(shard), part)
        if plan.save_shard is not None:
            plan.save_shard(key, shard, part)
    for run in runs:
        if not run.searched:
            run.results, run.times_ms, run.server_ms, run.errors, run.workers = [], [], [], [], []
    return runs
