"""Serial against Dask, and the framework's own overhead, on the SciFact run.

Runs `configs/scifact.yaml` (warm: its index and embeddings built by an earlier run or by
`benchmarks/scifact.py`) three ways in one process and prints the ratios:

1. serial, every search timed by a wrapper around each setup, so the run's time splits into opening the
   targets (indexes, models), the engines' and models' own search time, and the rest: the framework's
   overhead (reading, checking, scheduling, scoring, intervals, the report), as a share of the whole;
2. the same on a 2-worker Dask LocalCluster on this machine: the wall-time ratio against serial, and
   whether the measures are equal.

    python benchmarks/executors.py [--only 'local.keyword' --only 'local.dense.*'] [--workers 2]
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from vx_eval.core import run as run_module
from vx_eval.core.config import load_config
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run import RunOptions, run_experiment
from vx_eval.core.schema import Report

REPO = Path(__file__).resolve().parents[1]


class Clock:
    """Adds up how long the targets took to open and every search took, wherever they ran in this process."""

    def __init__(self) -> None:
        self.searching = 0.0
        self.opening = 0.0

    def install(self) -> None:
        opened = run_module.open_targets
        enumerate_setups = run_module.enumerate_setups
        clock = self

        def timed_open(*args, **kwargs):
            start = time.perf_counter()
            try:
                return opened(*args, **kwargs)
            finally:
                clock.opening += time.perf_counter() - start

        def timed_setups(*args, **kwargs):
            setups = enumerate_setups(*args, **kwargs)
            for setup in setups:
                inner = setup.run

                def run(text, k, inner=inner):
                    start = time.perf_counter()
                    try:
                        return inner(text, k)
                    finally:
                        clock.searching += time.perf_counter() - start

                object.__setattr__(setup, "run", run)
            return setups

        run_module.open_targets = timed_open
        run_module.enumerate_setups = timed_setups


def measures(report: Report) -> dict:
    return {s.key: s.per_question.metrics for s in report.setups}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "scifact.yaml"))
    parser.add_argument("--only", action="append", default=[], help="Setup keys (globs) to run; default all.")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    plugins = load_plugins()
    experiment = load_config(args.config, plugins)
    only = tuple(args.only)

    clock = Clock()
    clock.install()
    start = time.perf_counter()
    serial = run_experiment(experiment, plugins, RunOptions(save=False, only=only)).report
    serial_s = time.perf_counter() - start
    overhead = serial_s - clock.opening - clock.searching
    parts = f"opening {clock.opening:.1f} s + searching {clock.searching:.1f} s + framework {overhead:.1f} s"
    print(f"serial: {serial_s:.1f} s = {parts}")
    size = f"{len(serial.setups)} setups, {serial.golden.labelled} questions"
    print(f"  framework overhead: {overhead / serial_s:.1%} of the run ({size})")

    start = time.perf_counter()
    options = RunOptions(save=True, only=only, executor="dask")  # checkpoints on, as a real Dask run has them
    execution = experiment.config.execution.model_copy(update={"workers": args.workers})
    experiment = dataclasses.replace(experiment, config=experiment.config.model_copy(update={"execution": execution}))
    distributed = run_experiment(experiment, plugins, options).report
    dask_s = time.perf_counter() - start
    same = measures(distributed) == measures(serial)
    ratio = dask_s / serial_s
    print(f"dask ({args.workers}-worker LocalCluster, same machine): {dask_s:.1f} s; dask / serial = {ratio:.2f}")
    print(f"  measures equal to the serial run's: {same}")


if __name__ == "__main__":
    main()
