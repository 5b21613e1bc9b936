"""A run's model work on its Dask cluster: the corpus embedded and the judge's pool graded by the workers.

With ``execution: {executor: dask}`` the run starts its cluster before it opens its targets, and every slice of
texts a model embeds (`core.corpus.prepare`) and every batch of pairs a judge grades (`core.judging.grading`)
is a task there, not only the searches. Each worker makes the run's models once from a `ModelsRecipe` (the
run's model settings and served endpoints): an in-process model encodes one slice at a time per worker; a
served model has the endpoint's ``concurrency`` requests in flight per worker, each worker within its share
of the endpoint's ``rate`` (the rate divided by the workers), so the cluster as a whole stays within it.

What comes back is kept by the driver exactly as a serial run keeps it: vectors in the embeddings cache by
content, slice by slice as they arrive, and grades in the grades cache. So the index is the same bytes
whichever executor embedded it, a killed run resumes where it stopped, and a second run asks nothing. What
the workers sent to served models is counted in the run's report with what the driver sent.
"""

from __future__ import annotations

import itertools
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from vx_eval.core.contracts.endpoints import ModelEndpoint, ServedUsage
from vx_eval.core.contracts.judge import GradeOn
from vx_eval.core.contracts.models import ModelSettings
from vx_eval.core.judging.grading import judge_maker
from vx_eval.core.models.loading import Models
from vx_eval.core.optional import on_first_use
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.executors import worker_name

_distributed = on_first_use("distributed", "dask")

if TYPE_CHECKING:
    from vx_eval.core.contracts.judge import Judge, Verdict

Item = TypeVar("Item")


@dataclass(frozen=True)
class ModelsRecipe:
    """What a worker needs to make a run's models as the driver made them: the settings, and the served
    endpoints with each `rate` already shared among the workers. `run` tells one run's models from another's."""

    run: str
    settings: ModelSettings
    endpoints: Mapping[str, ModelEndpoint]

    @classmethod
    def of(cls, models: Models, run: str, workers: int) -> ModelsRecipe:
        shared = {
            name: e.model_copy(update={"rate": e.rate / workers}) if e.rate else e
            for name, e in models.endpoints.items()
        }
        return cls(run, models.settings, shared)

    def models(self) -> Models:
        """This worker's models for the run: made once per process, loaded models shared across runs."""
        with _WORKER_LOCK:
            made = _WORKER_MODELS.get(self.run)
            if made is None:
                plugins = load_plugins()
                made = Models(
                    plugins.models, self.settings, endpoints=dict(self.endpoints), providers=plugins.providers
                )
                _WORKER_MODELS[self.run] = made
                while len(_WORKER_MODELS) > _KEPT_RUNS:  # the oldest run's counters, judges and bounds let go
                    oldest = next(iter(_WORKER_MODELS))
                    del _WORKER_MODELS[oldest]
                    for kept in (_JUDGES, _SLOTS):
                        for key in [k for k in kept if k[0] == oldest]:
                            del kept[key]
            return made


_WORKER_MODELS: dict[str, Models] = {}
_WORKER_LOCK = threading.Lock()
_KEPT_RUNS = 4
_IN_PROCESS = threading.Semaphore(1)
"""One in-process model batch at a time in a worker process, whatever tasks it runs at once: its threads
setting is what the machine was sized for."""
_JUDGES: dict[tuple[str, str], Judge] = {}
_SLOTS: dict[tuple[str, str], threading.Semaphore] = {}


@dataclass(frozen=True)
class Done:
    """A task's answer: its values in the order asked, the worker that computed them, and what that worker has
    sent so far in this run to each served model it loaded (the driver keeps the latest per worker)."""

    values: list[Any]
    worker: str
    usage: list[ServedUsage]


def embed_task(recipe: ModelsRecipe, name: str, kind: str, slices: list[list[str]], concurrency: int) -> Done:
    """On a worker: each slice's vectors (a matrix for a dense model, a list of token matrices for a late one),
    `concurrency` slices at once for a served model, one at a time for an in-process one."""
    models = recipe.models()
    encoder = models.get(name, kind)
    if name in recipe.endpoints:
        slots = _served_slots(recipe.run, name, concurrency)

        def one(texts: list[str]) -> Any:
            with slots:  # the endpoint's `concurrency` in flight in this worker, whatever tasks overlap
                return encoder.encode_documents(texts)

        with ThreadPoolExecutor(max_workers=min(concurrency, len(slices)), thread_name_prefix="vx-embed") as pool:
            values = list(pool.map(one, slices))
    else:
        with _IN_PROCESS:
            values = [encoder.encode_documents(s) for s in slices]
    return Done(values, worker_name(), models.usage())


def _served_slots(run: str, name: str, concurrency: int) -> threading.Semaphore:
    with _WORKER_LOCK:
        return _SLOTS.setdefault((run, name), threading.Semaphore(max(1, concurrency)))


def grade_task(recipe: ModelsRecipe, judge: str, settings: BaseModel | None, pairs: list[tuple[str, str]]) -> Done:
    """On a worker: the judge's verdicts on the pairs, in order (the judge made once per run and process)."""

    models = recipe.models()
    with _WORKER_LOCK:
        made = _JUDGES.get((recipe.run, judge))
        if made is None:
            made = judge_maker(load_plugins(), judge, settings)(models)
            _JUDGES[(recipe.run, judge)] = made
    return Done(list(made.grade(pairs)), worker_name(), models.usage())


@dataclass
class ClusterWork:
    """The driver's side: model work sent to a Dask client's workers as tasks, at most `ahead` tasks a worker
    submitted at once (one waiting while one runs: no worker idles between tasks), answers given back as they
    finish; each answer's served counts kept on `models`."""

    client: Any
    workers: int
    ahead: int = 2
    run: str = field(default_factory=lambda: uuid.uuid4().hex)

    def recipe(self, models: Models) -> ModelsRecipe:
        return ModelsRecipe.of(models, self.run, self.workers)

    def embed(
        self, models: Models, name: str, kind: str, slices: Sequence[list[str]], concurrency: int
    ) -> Iterator[tuple[int, Any]]:
        """Each slice's place in `slices` with its vectors, as they come back. A served model's slices go
        `concurrency` to a task (each worker then has that many requests in flight); an in-process model's one
        slice a task."""
        recipe = self.recipe(models)
        served = name in models.endpoints
        per_task = concurrency if served else 1
        starts = list(range(0, len(slices), per_task))

        def task(start: int) -> tuple[Any, ...]:
            return (embed_task, recipe, name, kind, list(slices[start : start + per_task]), concurrency)

        for start, values in self._stream(models, starts, task):
            yield from enumerate(values, start)

    def judging(self, models: Models, judge: str, settings: BaseModel | None) -> GradeOn:
        """How the judge `judge` (with `settings`, as the config gives them) grades batches on the workers."""

        def grade(batches: Sequence[list[tuple[str, str]]]) -> Iterator[tuple[int, list[Verdict]]]:
            recipe = self.recipe(models)
            yield from self._stream(
                models, list(range(len(batches))), lambda i: (grade_task, recipe, judge, settings, batches[i])
            )

        return grade

    def _stream(
        self, models: Models, items: list[Item], task: Callable[[Item], tuple[Any, ...]]
    ) -> Iterator[tuple[Item, list[Any]]]:
        """Each item with its task's values, as tasks finish, the served counts each answer carries kept on
        `models`; never more than `ahead` tasks a worker submitted and not done, so a failure stops the work
        after those (the rest are cancelled) and it is raised here."""

        ahead = self.workers * self.ahead
        waiting = iter(items)
        pending: dict[str, tuple[Any, Item]] = {}

        def submit(item: Item) -> Any:
            fn, *args = task(item)
            future = self.client.submit(fn, *args, pure=False)
            pending[future.key] = (future, item)
            return future

        running = _distributed.as_completed([submit(item) for item in itertools.islice(waiting, max(1, ahead))])
        try:
            for future in running:
                done: Done = future.result()
                _, item = pending.pop(future.key)
                following = next(waiting, None)
                if following is not None:
                    running.add(submit(following))
                models.absorb(f"{done.worker} model work", done.usage)
                yield item, done.values
        finally:
            if pending:  # a failure, or the caller stopped reading: nothing more is computed for it
                self.client.cancel([f for f, _ in pending.values()])
