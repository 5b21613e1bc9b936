"""The Dask executor: (setup, shard) tasks on a cluster (`address`, or a LocalCluster on this machine), each
worker opening its own targets from the config; the run's model work goes to the same cluster
(`core.run.work`). See `core.run.executors` for what every executor gives back."""

from __future__ import annotations

import contextvars
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.endpoints import ServedUsage, WorkerCounts
from vx_eval.core.contracts.engine import Setup, SilentProgress
from vx_eval.core.errors import PluginError
from vx_eval.core.golden.chunks import units_for
from vx_eval.core.models.loading import own_models
from vx_eval.core.optional import on_first_use
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.executors import Part, Shard, ShardPart, UnitOf, Work, search_one, worker_name
from vx_eval.core.run.selection import enumerate_setups
from vx_eval.core.run.targets import open_targets
from vx_eval.core.run.work import ClusterWork
from vx_eval.core.stores import Stores

_distributed = on_first_use("distributed", "dask")

if TYPE_CHECKING:
    from vx_eval.core.models.loading import Models
    from vx_eval.core.run.work import ClusterWork


@dataclass
class WorkerSetups:
    """A worker's own opened setups for one config, and which of them it has warmed up."""

    setups: dict[str, Setup]
    unit_of: UnitOf
    models: Models | None
    warm: set[str] = field(default_factory=set)


_OPENED: OrderedDict[tuple[str, str, tuple[str, ...], tuple[str, ...]], WorkerSetups] = OrderedDict()
"""A worker's opened setups by config (its path and sha) and the run's setup selection, the most recently
used last; at most `KEEP_OPENED` are kept, so a long-lived cluster running many configs does not grow."""
KEEP_OPENED = 4
_OPENED_LOCK = threading.Lock()
_SLOTS: dict[int, threading.Semaphore] = {}


def _worker_slots(concurrency: int) -> threading.Semaphore:
    """This worker process's searches-at-once bound, shared by every task it runs."""
    with _OPENED_LOCK:
        return _SLOTS.setdefault(concurrency, threading.Semaphore(max(1, concurrency)))


def _worker_setups(config_path: str, config_sha: str, only: tuple[str, ...], skip: tuple[str, ...]) -> WorkerSetups:
    """This worker's targets and setups for a config and a selection of its setups, opened once per process
    and kept; the least recently used beyond `KEEP_OPENED` are let go (a task still searching them keeps its
    own reference until it ends)."""

    key = (config_path, config_sha, only, skip)
    with _OPENED_LOCK:
        if key in _OPENED:
            _OPENED.move_to_end(key)
        else:
            plugins = load_plugins()
            experiment = load_config(config_path, plugins)
            stores = Stores(plugins, options=experiment.stores)
            targets = open_targets(experiment, plugins, stores, SilentProgress(), build=False)
            setups = enumerate_setups(targets, plugins, only, skip)
            ev = experiment.config.evaluation
            units = units_for(ev.relevance_field, targets, ev.by_document)
            _OPENED[key] = WorkerSetups(
                {s.key: s for s in setups}, units, own_models(targets[0].models) if targets else None
            )
            while len(_OPENED) > KEEP_OPENED:
                _OPENED.popitem(last=False)
        return _OPENED[key]


def _ready() -> None:
    """On a worker: the plugins loaded (their imports take a second), as every task of a run needs them."""

    load_plugins()


def _open_here(
    config_path: str, config_sha: str, only: tuple[str, ...], skip: tuple[str, ...], dask_worker: Any = None
) -> tuple[str, list[ServedUsage], list[ServedUsage]]:
    """On a worker (`Client.run`, which passes `dask_worker`): its targets opened now (once a config: a later
    run of it finds them open); its name as its tasks give it, what they had sent to served models before
    this run (the run's counts start from it) and after opening."""
    with _OPENED_LOCK:
        had = _OPENED.get((config_path, config_sha, only, skip))
    before = had.models.usage() if had is not None and had.models is not None else []
    opened = _worker_setups(config_path, config_sha, only, skip)
    name = dask_worker.address if dask_worker is not None else worker_name()  # outside a task: no get_worker
    return name, before, opened.models.usage() if opened.models is not None else []


def dask_search_part(
    config_path: str,
    config_sha: str,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    setup_key: str,
    shard: Shard,
    concurrency: int = 1,
) -> tuple[Part, str, list[ServedUsage]]:
    """A Dask task: one setup over one shard, on the worker's own targets (a first, untimed search warms the
    setup up in this process), `concurrency` searches at once; with the worker's name and what it has sent
    to served models so far (the report counts it)."""
    opened = _worker_setups(config_path, config_sha, only, skip)
    setup = opened.setups[setup_key]
    if setup_key not in opened.warm:
        search_one(setup, shard.texts[0], shard.depth, False, opened.unit_of)
        opened.warm.add(setup_key)
    part = ShardPart.empty(len(shard.span))
    me = worker_name()
    slots = _worker_slots(concurrency)

    def one(offset: int, index: int) -> None:
        with slots:  # at most `concurrency` searches at once in this worker, across the tasks it runs
            searched = search_one(setup, shard.texts[offset], shard.depth, shard.timing(index), opened.unit_of)
        part.put(offset, searched, me)

    if concurrency <= 1:
        for offset, index in enumerate(shard.span):
            one(offset, index)
    else:
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="vx-dask-search") as pool:
            for future in [pool.submit(contextvars.copy_context().run, one, o, i) for o, i in enumerate(shard.span)]:
                future.result()
    return part, me, opened.models.usage() if opened.models else []


@dataclass
class DaskExecutor:
    """(setup, shard) tasks on a Dask cluster: `address` of a scheduler, or a LocalCluster of `workers`."""

    config_path: str
    config_sha: str
    only: tuple[str, ...] = ()
    skip: tuple[str, ...] = ()
    address: str | None = None
    workers: int = 2
    concurrency: int = 1
    """Searches each task runs at once (each worker runs one task at a time)."""
    name: str = "dask"

    @property
    def concurrent(self) -> int:
        return self.workers * self.concurrency

    def __post_init__(self) -> None:
        try:
            # lazy: an optional dependency (vx-eval[dask]), loaded only where it is used
            from distributed import Client, LocalCluster
        except ImportError:
            raise PluginError("the dask executor needs dask[distributed]: pip install 'vx-eval[dask]'") from None
        self.cluster = None
        if self.address is None:
            # with searches at once, two tasks per worker keep its bound full while one task's last searches end
            threads = 2 if self.concurrency > 1 else 1
            self.cluster = LocalCluster(
                n_workers=self.workers, threads_per_worker=threads, host="127.0.0.1", dashboard_address=None
            )
            self.client = Client(self.cluster)
        else:
            self.client = Client(self.address)
        self.client.run(_ready)  # each worker loads the plugins now, once, not in the run's first task
        self.opened = False
        self.sent = WorkerCounts()
        self.before = WorkerCounts()
        """What each worker's searches had sent to served models before this run (a cluster outlives runs)."""
        self.work: ClusterWork | None = None

    def model_work(self) -> ClusterWork:
        """The run's model work (embedding, judging) on this cluster's workers (`core.run.work`): one for the
        run, so its workers make the run's models once."""

        if self.work is None:
            workers = len(self.client.scheduler_info().get("workers", {})) or self.workers
            self.work = ClusterWork(self.client, workers)
        return self.work

    def run(self, work: Work, unit_of: UnitOf, advance: Callable[[int], None]) -> Iterator[tuple[str, int, Part]]:
        """Every (setup, shard) task submitted at once; parts given back as they finish, in any order."""

        if not self.opened:  # every worker opens its targets first, as a serial run does before its first search
            said = self.client.run(_open_here, self.config_path, self.config_sha, self.only, self.skip)
            for worker, before, after in said.values():
                self.before.keep(worker, before)
                self.sent.keep(worker, after)  # a worker that opens and then searches nothing sent this
            self.opened = True

        futures = {
            self.client.submit(
                dask_search_part,
                self.config_path,
                self.config_sha,
                self.only,
                self.skip,
                s.key,
                shard,
                self.concurrency,
                pure=False,
            ): (s.key, shard)
            for shard, setups in work
            for s in setups
        }
        for future in _distributed.as_completed(futures):
            key, shard = futures[future]
            part, worker, served = future.result()
            self.sent.keep(worker, served)
            advance(len(shard.span))
            yield key, shard.number, part

    def served(self) -> list[tuple[str, ServedUsage]]:
        """What this run's searches on the workers sent: their counts less what each had sent before it."""
        counted = []
        for worker, sent in self.sent.items():
            before = self.before.get(worker, sent.name)
            counted.append((worker, sent.minus(before) if before is not None else sent))
        return counted

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
