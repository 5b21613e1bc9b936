"""Executors: a thread pool and a real Dask cluster (scheduler + two workers on 127.0.0.1) give the same
measures as a serial run; per-engine bounds and rate limits hold."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.run.executors import RateLimit, ThreadExecutor
from vx_eval.core.run.pipeline import RunOptions, run_experiment
from vx_eval.testing.processes import free_port, start_server


def measures(report: dict) -> dict:
    return {
        s["key"]: (s["summary"], s["per_question"]["metrics"], s["per_question"]["results"]) for s in report["setups"]
    }


def test_a_thread_pool_gives_the_serial_measures(project, plugins):
    config = load_config(
        project.write_config(evaluation={"metrics": ["found@10", "mrr", "ndcg@10"], "depth": 10, "shard_size": 2}),
        plugins,
    )
    serial = run_experiment(config, plugins, RunOptions(save=False)).report.model_dump(mode="json")
    threaded = run_experiment(config, plugins, RunOptions(save=False, executor="thread")).report.model_dump(mode="json")
    assert measures(threaded) == measures(serial)
    (setup,) = threaded["setups"]
    assert sum(w["searches"] for w in setup["workers"].values()) == 5
    assert all("vx-search" in name for name in setup["workers"])


def test_per_engine_bounds_and_rate_limits_hold():
    limit = RateLimit(20.0)
    start = time.monotonic()
    for _ in range(30):  # 20 in the first second's bucket, then 10 more at 20 a second
        limit.wait()
    assert time.monotonic() - start >= 0.45
    executor = ThreadExecutor(concurrency=8, per_engine={"slow": 2})
    inside, peak, lock = [0], [0], threading.Lock()
    slot, _ = executor._gate("slow")

    def work() -> None:
        with slot:
            with lock:
                inside[0] += 1
                peak[0] = max(peak[0], inside[0])
            time.sleep(0.05)
            with lock:
                inside[0] -= 1

    for future in [executor.pool.submit(work) for _ in range(12)]:
        future.result()
    executor.close()
    assert peak[0] == 2


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory) -> Iterator[str]:
    """A real Dask scheduler and two single-threaded workers on 127.0.0.1, each stopped by its PID."""
    folder = tmp_path_factory.mktemp("dask")
    port = free_port()
    dask = Path(sys.executable).with_name("dask")
    scheduler = [dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"]
    worker = [dask, "worker", f"tcp://127.0.0.1:{port}", "--nworkers", "1", "--nthreads", "1", "--host", "127.0.0.1"]
    servers = [start_server(scheduler, port=port, what="dask scheduler", cwd=folder)]
    try:
        servers += [start_server([*worker, "--no-dashboard"], port=None, what="dask worker", cwd=folder) for _ in "ab"]
        from distributed import Client

        with Client(f"tcp://127.0.0.1:{port}", timeout=30) as client:
            client.wait_for_workers(2, timeout=60)
        yield f"tcp://127.0.0.1:{port}"
    finally:
        for server in reversed(servers):
            server.stop()


def test_a_dask_cluster_gives_the_serial_measures_with_each_workers_times(project, plugins, dask_cluster):
    path = project.write_config(evaluation={"metrics": ["found@10", "mrr", "ndcg@10"], "depth": 10, "shard_size": 1})
    config = load_config(path, plugins)
    serial = run_experiment(config, plugins, RunOptions(save=False)).report.model_dump(mode="json")
    distributed = run_experiment(
        config, plugins, RunOptions(save=True, executor="dask", address=dask_cluster)
    ).report.model_dump(mode="json")
    assert measures(distributed) == measures(serial)
    (setup,) = distributed["setups"]
    assert all(name.startswith("tcp://127.0.0.1:") for name in setup["workers"])
    assert 1 <= len(setup["workers"]) <= 2  # the workers' own addresses: the searches ran on the cluster
    assert sum(w["searches"] for w in setup["workers"].values()) == 5


def test_a_throughput_pass_measures_queries_a_second_at_each_level(project, plugins, capsys):
    from vx_eval.cli import main

    path = project.write_config(evaluation={"metrics": ["found@10"], "depth": 10, "throughput": [1, 4]})
    report = run_experiment(load_config(path, plugins), plugins, RunOptions(save=False)).report.model_dump(mode="json")
    (setup,) = report["setups"]
    assert [t["concurrency"] for t in setup["throughput"]] == [1, 4]
    assert all(
        t["searches"] == 5 and t["failed"] == 0 and t["qps"] > 0 and t["median_ms"] > 0 for t in setup["throughput"]
    )
    with contextlib.suppress(SystemExit):
        main(["run", str(path), "--no-save"])
    assert "4 at once: q/s · median ms" in capsys.readouterr().out
