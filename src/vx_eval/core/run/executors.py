"""Who runs the searches: this process one at a time (serial), a thread pool, or a Dask cluster.

Every executor runs one shard of questions for a list of setups and gives back, per setup, the same
part a serial run makes (results, times, server times, errors, and which worker searched), so the run
checkpoints and scores them the same way and the measures do not depend on the executor.

- ``serial`` (default): one search at a time, the setups interleaved per question in a seeded shuffle.
- ``thread``: up to `concurrency` searches at once for remote engines, the pool kept full across shards;
  `per_engine` bounds how many go to one engine at a time and `rate` how many start per second (a token
  bucket). Times are as a caller sees them under that load (the report says how many ran at once).
- ``dask``: (setup, shard) tasks on a Dask cluster (`address`, or a LocalCluster); each worker opens its
  own targets from the config (indexes are built by the run first, so workers only open them) and runs a
  task's searches `concurrency` at a time.
"""

from __future__ import annotations

import contextvars
import random
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from vx_eval.core.contracts.endpoints import ServedUsage
from vx_eval.core.contracts.engine import Setup, reuse_allowed, server_time
from vx_eval.core.errors import service_text
from vx_eval.core.golden.units import finest_unit
from vx_eval.core.remote import RateLimit
from vx_eval.core.report.schema import Result, ThroughputLevel

if TYPE_CHECKING:
    from vx_eval.core.run.work import ClusterWork


class ShardPart(BaseModel):
    """One setup's searches of one shard, question by question: what a checkpoint keeps."""

    results: list[list[Result]]
    times_ms: list[float | None]
    server_ms: list[float | None]
    errors: list[str | None]
    workers: list[str | None]

    @classmethod
    def empty(cls, size: int) -> ShardPart:
        return cls(
            results=[[] for _ in range(size)],
            times_ms=[None] * size,
            server_ms=[None] * size,
            errors=[None] * size,
            workers=[None] * size,
        )

    def put(self, offset: int, searched: Searched, worker: str) -> None:
        self.results[offset] = searched.results
        self.times_ms[offset] = searched.ms
        self.server_ms[offset] = searched.server_ms
        self.errors[offset] = searched.error
        self.workers[offset] = worker


@dataclass(frozen=True)
class Searched:
    """One search as the run records it: the results, the time (None when not timed), what the service
    said it spent, and the error (None when it worked)."""

    results: list[Result]
    ms: float | None
    server_ms: float | None
    error: str | None


Part = ShardPart
UnitOf = Callable[[str, Any], "str | None"]
Work = list[tuple["Shard", list[Setup]]]
"""Each shard with the setups that still have to search it."""


def worker_name() -> str:
    """This process's name in reports: the Dask worker's address where there is one, else the host."""
    try:
        # lazy: an optional dependency (vx-eval[dask]), loaded only where it is used
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"{socket.gethostname()}/{threading.current_thread().name}"


def search_one(setup: Setup, text: str, depth: int, timing: bool, unit_of: UnitOf) -> Searched:
    """One search as the run records it (see `Searched`)."""
    spent: list[float] = []
    server = server_time.set(spent)
    token = reuse_allowed.set(not timing)
    start = time.perf_counter()
    try:
        hits = setup.search(text, depth)
        elapsed = (time.perf_counter() - start) * 1000 if timing else None
        results = [(unit_of(setup.target, h), float(h.score)) for h in hits[:depth]]
        return Searched(results, elapsed, (sum(spent) if spent and timing else None), None)
    except Exception as exc:  # a failed search is a finding for that setup and question
        return Searched([], None, None, service_text(exc))
    finally:
        reuse_allowed.reset(token)
        server_time.reset(server)


@dataclass
class Shard:
    """One shard to search: the question indices, their texts, which are timed, and the search depth."""

    number: int
    span: range
    texts: list[str]
    timed: set[int] | None
    depth: int
    seed: int

    def timing(self, index: int) -> bool:
        return self.timed is None or index in self.timed


class Executor(Protocol):
    """Who runs a run's searches (serial, thread and dask here): `run` searches every shard of the work for
    its setups and gives back each (setup key, shard number, part) as it finishes, in any order; `advance`
    is told of every search done. `concurrent` is how many searches run at once (the report says so
    beside the times); `close` lets go of threads, workers or a cluster."""

    name: str

    @property
    def concurrent(self) -> int: ...

    def run(self, work: Work, unit_of: UnitOf, advance: Callable[[int], None]) -> Iterator[tuple[str, int, Part]]: ...

    def model_work(self) -> ClusterWork | None:
        """Where the run's model work (embedding, judging) goes besides this process (None: it stays here)."""
        ...

    def served(self) -> list[tuple[str, ServedUsage]]:
        """What other processes' searches sent to served models, by worker (none when all ran here)."""
        ...

    def close(self) -> None: ...


class ShardByShard:
    """Executors that finish one shard (every setup) before the next: each setup's part of it is given back
    as soon as the shard is done."""

    def model_work(self) -> ClusterWork | None:
        return None

    def served(self) -> list[tuple[str, ServedUsage]]:
        return []

    def run(self, work: Work, unit_of: UnitOf, advance: Callable[[int], None]) -> Iterator[tuple[str, int, Part]]:
        for shard, setups in work:
            for key, part in self.search(setups, shard, unit_of, advance).items():
                yield key, shard.number, part

    def search(
        self, setups: Sequence[Setup], shard: Shard, unit_of: UnitOf, advance: Callable[[int], None]
    ) -> dict[str, Part]:
        raise NotImplementedError


class SerialExecutor(ShardByShard):
    name = "serial"

    @property
    def concurrent(self) -> int:
        return 1

    def search(
        self, setups: Sequence[Setup], shard: Shard, unit_of: UnitOf, advance: Callable[[int], None]
    ) -> dict[str, Part]:
        parts = {s.key: ShardPart.empty(len(shard.span)) for s in setups}
        me = worker_name()
        for offset, index in enumerate(shard.span):
            order = list(setups)
            random.Random(f"{shard.seed}:{index}").shuffle(order)
            for setup in order:
                searched = search_one(setup, shard.texts[offset], shard.depth, shard.timing(index), unit_of)
                parts[setup.key].put(offset, searched, me)
                advance(1)
        return parts

    def close(self) -> None:
        return None


@dataclass(frozen=True)
class _Task:
    shard: Shard
    setup: Setup
    offset: int
    index: int


@dataclass
class ThreadExecutor:
    """Several searches at once, bounded per engine and rate-limited per engine. The pool stays full across
    shards (the next shard's searches start while the last of this one's finish); each shard's parts are
    given back as soon as its last search is done."""

    concurrency: int = 4
    per_engine: dict[str, int] = field(default_factory=dict)
    rate: dict[str, float] = field(default_factory=dict)
    name: str = "thread"

    def __post_init__(self) -> None:
        self.pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="vx-search")
        self.slots: dict[str, threading.Semaphore] = {}
        self.limits: dict[str, RateLimit] = {}
        self.lock = threading.Lock()

    @property
    def concurrent(self) -> int:
        return self.concurrency

    def model_work(self) -> ClusterWork | None:
        return None  # served models already embed `concurrency` requests at once in this process

    def served(self) -> list[tuple[str, ServedUsage]]:
        return []

    def _gate(self, engine: str) -> tuple[threading.Semaphore, RateLimit]:
        with self.lock:
            if engine not in self.slots:
                self.slots[engine] = threading.Semaphore(self.per_engine.get(engine, self.concurrency))
                self.limits[engine] = RateLimit(self.rate.get(engine))
            return self.slots[engine], self.limits[engine]

    def _search(self, task: _Task, unit_of: UnitOf) -> tuple[_Task, Searched, str]:
        slot, limit = self._gate(task.setup.engine)
        with slot:
            limit.wait()
            shard = task.shard
            searched = search_one(task.setup, shard.texts[task.offset], shard.depth, shard.timing(task.index), unit_of)
        return task, searched, worker_name()

    def run(self, work: Work, unit_of: UnitOf, advance: Callable[[int], None]) -> Iterator[tuple[str, int, Part]]:
        parts = {(s.key, shard.number): ShardPart.empty(len(shard.span)) for shard, setups in work for s in setups}
        left = {shard.number: len(shard.span) * len(setups) for shard, setups in work}
        keys = {shard.number: [s.key for s in setups] for shard, setups in work}
        in_flight: set[Future[tuple[_Task, Searched, str]]] = set()
        limit = self.concurrency * 4  # enough queued to keep every thread busy, never the whole run at once

        def finished(done: set[Future[tuple[_Task, Searched, str]]]) -> Iterator[tuple[str, int, Part]]:
            for future in done:
                task, searched, worker = future.result()
                parts[(task.setup.key, task.shard.number)].put(task.offset, searched, worker)
                advance(1)
                left[task.shard.number] -= 1
                if not left[task.shard.number]:
                    for key in keys[task.shard.number]:
                        yield key, task.shard.number, parts.pop((key, task.shard.number))

        for task in _tasks(work):  # each in a copy of this context: the run's context variables hold there
            in_flight.add(self.pool.submit(contextvars.copy_context().run, self._search, task, unit_of))
            if len(in_flight) >= limit:
                done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
                yield from finished(done)
        while in_flight:
            done, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
            yield from finished(done)

    def close(self) -> None:
        self.pool.shutdown(wait=True)


def _tasks(work: Work) -> Iterator[_Task]:
    """Every search of the work, shard by shard, question by question, the setups in a seeded shuffle."""
    for shard, setups in work:
        for offset, index in enumerate(shard.span):
            order = list(setups)
            random.Random(f"{shard.seed}:{index}").shuffle(order)
            for setup in order:
                yield _Task(shard, setup, offset, index)


def throughput(setup: Setup, texts: Sequence[str], depth: int, concurrency: Sequence[int]) -> list[ThroughputLevel]:
    """Queries a second and latency per search with `c` callers at once, for each `c` in `concurrency`:
    every text searched end to end (nothing reused), by `c` threads sharing the list."""
    return [_load(setup, texts, depth, callers) for callers in concurrency]


def _load(setup: Setup, texts: Sequence[str], depth: int, callers: int) -> ThroughputLevel:
    latencies: list[float] = []
    failed = 0
    lock = threading.Lock()

    def one(text: str) -> None:
        nonlocal failed
        searched = search_one(setup, text, depth, True, finest_unit)
        with lock:
            if searched.error is None and searched.ms is not None:
                latencies.append(searched.ms)
            else:
                failed += 1

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=callers, thread_name_prefix="vx-throughput") as pool:
        for future in [pool.submit(contextvars.copy_context().run, one, t) for t in texts]:
            future.result()
    wall = time.perf_counter() - start
    ordered = sorted(latencies)
    return ThroughputLevel(
        concurrency=callers,
        searches=len(texts),
        failed=failed,
        qps=round(len(latencies) / wall, 3) if wall > 0 else None,
        median_ms=round(ordered[len(ordered) // 2], 3) if ordered else None,
        p95_ms=round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 3) if ordered else None,
    )
