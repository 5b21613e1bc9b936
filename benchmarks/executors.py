"""Executors against a remote engine whose every request takes 50 ms: serial, threads and Dask, from one run.

Starts osmem-server (an OpenSearch stand-in on 127.0.0.1) with a SciFact slice (260 questions; the first
2,000 abstracts and every abstract they expect), keyword search only (osmem runs no k-NN), and a proxy on
127.0.0.1 in front of it that delays every request by `--latency` seconds (`FaultProxy.latency`). Then runs
the same config serially, on the thread executor with 4, 8 and 16 searches at once, and on a 2-worker Dask
LocalCluster with 8 searches at once in each worker, and prints each one's searching time (from the first
search to the last: a cluster's start-up is not searching), its speed-up over serial, the whole run's time,
and whether its measures equal the serial run's.

    python benchmarks/executors.py [--latency 0.05] [--questions 260]
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.plugins import load_plugins
from vx_eval.core.report.schema import Report
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.testing.faults import FaultProxy

REPO = Path(__file__).resolve().parents[1]
SCIFACT = (REPO.parent / "shared" / "datasets" / "scifact").resolve()


class Stopwatch:
    """A `Progress` that notes when the searching stage starts and when its last search is done."""

    def __init__(self) -> None:
        self.began = self.ended = 0.0

    def start(self, description: str, total: int | None):
        if description != "Searching":
            return lambda advance: None
        self.began, done = time.perf_counter(), [0]

        def advance(n: int) -> None:
            done[0] += n
            if total is not None and done[0] >= total:
                self.ended = time.perf_counter()

        return advance

    def note(self, message: str) -> None:
        return None

    @property
    def seconds(self) -> float:
        return self.ended - self.began


def measures(report: Report) -> dict:
    return {s.key: s.per_question.metrics for s in report.setups}


def config(folder: Path, url: str, questions: int, build: str) -> Path:
    data = {
        "name": "executors",
        "golden": {"path": str(SCIFACT), "limit": questions},
        "corpus": {"path": str(SCIFACT), "limit": 2000},
        "targets": [
            {
                "name": "OpenSearch",
                "engine": "opensearch",
                "options": {
                    "url": url,
                    "collection": "scifact",
                    "mode": "dense",
                    "dense_models": [],
                    "chunk_words": 0,
                    "build": build,
                    "timeout": 30,
                },
            },
        ],
        "evaluation": {"metrics": ["ndcg@10", "mrr"], "depth": 10, "bootstrap": 100, "permutations": 0},
        "models": {"embeddings": str(folder / "embeddings.db"), "scores": str(folder / "scores.db")},
    }
    path = folder / f"executors-{build}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--questions", type=int, default=260)
    args = parser.parse_args()
    from osmem_server import OsmemServer

    plugins = load_plugins()
    folder = Path(tempfile.mkdtemp(prefix="vx-executors-"))
    server = OsmemServer.start(addr="127.0.0.1:0")
    try:
        built = load_config(config(folder, server.url, args.questions, "always"), plugins)
        run_experiment(built, plugins, RunOptions(save=False, only=("opensearch.keyword",)))  # the index, once
        with FaultProxy.latency(server.url, args.latency) as proxy:
            experiment = load_config(config(folder, proxy.url, args.questions, "never"), plugins)
            ways = [("serial", None, 1, 1), ("thread", None, 4, 1), ("thread", None, 8, 1), ("thread", None, 16, 1),
                    ("dask", None, 8, 2)]  # fmt: skip
            base = None
            reference: dict = {}
            print(f"{args.questions} questions, keyword search, every request {args.latency * 1000:.0f} ms longer")
            for executor, _, concurrency, workers in ways:
                execution = experiment.config.execution.model_copy(
                    update={"executor": executor, "concurrency": concurrency, "workers": workers}
                )
                execution = execution.model_validate(execution.model_dump())  # the fields given count as set
                ran = dataclasses.replace(
                    experiment, config=experiment.config.model_copy(update={"execution": execution})
                )
                watch = Stopwatch()
                options = RunOptions(save=executor == "dask", save_to=str(folder / "runs"), progress=watch)
                start = time.perf_counter()
                report = run_experiment(ran, plugins, options).report
                whole = time.perf_counter() - start
                seconds = watch.seconds
                base = base or seconds
                reference = reference or measures(report)
                label = f"{executor} ({workers} workers x {concurrency})" if executor == "dask" else (
                    f"{executor} ({concurrency} at once)" if executor == "thread" else executor)  # fmt: skip
                same = measures(report) == reference
                print(f"  {label:28} searching {seconds:6.2f} s  {base / seconds:5.1f}x serial  (whole run "
                      f"{whole:5.1f} s)  measures equal to serial: {same}; the report says "
                      f"{report.settings.timing.concurrent} at once")  # fmt: skip
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
