"""Executors: a thread pool and a real Dask cluster (scheduler + two workers on 127.0.0.1) give the same
measures as a serial run; per-engine bounds and rate limits hold."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.remote import RateLimit
from vx_eval.core.run.executors import ThreadExecutor
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.testing.processes import free_port, start_server
from vx_eval.testing.served import DENSE_MODEL, ServedStandIn

KEY = "sk-cluster-test-0123456789abcdef"
ENV = "VX_TEST_CLUSTER_KEY"


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
    env = {**os.environ, ENV: KEY}  # the served stand-in's key, read by the workers from their environment
    try:
        servers += [
            start_server([*worker, "--no-dashboard"], port=None, what="dask worker", cwd=folder, env=env) for _ in "ab"
        ]
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


def _cache_rows(path: Path) -> list[tuple]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return sorted(db.execute("SELECT * FROM kept").fetchall())


def test_a_dask_cluster_embeds_the_corpus_and_grades_the_pool_on_its_workers(
    project, plugins, dask_cluster, monkeypatch
):
    """The corpus is embedded through a served model and the judge's pool graded by the workers: the vectors
    kept are byte for byte a serial run's, the measures (judged grades included) the same, every request the
    workers sent is in the report's count of what was sent, and a second run embeds and grades nothing again."""
    monkeypatch.setenv(ENV, KEY)
    with ServedStandIn(key=KEY) as server:
        served = {"provider": "openai", "model": DENSE_MODEL, "base_url": server.url + "/v1"}
        served |= {"api_key": {"env": ENV}, "batch": 2, "concurrency": 3}

        def config(name: str) -> Path:
            return project.write_config(
                f"{name}.yaml",
                targets=[
                    {
                        "name": "Local",
                        "engine": "sqlite",
                        "options": {"path": f".vx/{name}.db", "mode": "dense", "dense_models": ["served"]},
                    }
                ],
                evaluation={"metrics": ["found@10", "ndcg@10"], "depth": 10, "judge": "cross-encoder"},
                models={
                    "endpoints": {"served": served},
                    "embeddings": f".vx/{name}/embeddings.db",
                    "scores": f".vx/{name}/scores.db",
                },
            )

        serial = run_experiment(load_config(config("serial"), plugins), plugins, RunOptions(save=False)).report
        server.requests = 0
        distributed = run_experiment(
            load_config(config("cluster"), plugins),
            plugins,
            RunOptions(save=False, executor="dask", address=dask_cluster),
        ).report
        sent = server.requests
        server.embedded.clear()
        again = run_experiment(
            load_config(config("cluster"), plugins),
            plugins,
            RunOptions(save=False, executor="dask", address=dask_cluster),
        ).report
        resent, second = list(server.embedded), server.requests - sent
    # a second run on the cluster embeds no chunk again (each is "title\ntext"; it sends its questions only)
    assert resent and all("\n" not in text for text in resent)
    assert again.judge is not None and again.judge.asked == 0  # and every grade comes from the cache
    (counted,) = again.provenance.served  # this run's requests only: the workers' earlier ones are not its
    assert counted.requests == second > 0
    assert _cache_rows(project / ".vx/cluster/embeddings.db") == _cache_rows(project / ".vx/serial/embeddings.db")
    assert measures(distributed.model_dump(mode="json")) == measures(serial.model_dump(mode="json"))
    assert distributed.judge is not None and distributed.judge.asked == serial.judge.asked > 0
    (usage,) = distributed.provenance.served
    assert usage.requests == sent  # the workers' requests, the searches' and the embedding's, all counted
    from distributed import Client

    def on_workers() -> dict[str, object]:  # sent to the workers by value (a function of this test)
        """On a worker: what its model work for runs did (the served models' counts, the judges it made)."""
        from vx_eval.core.run import work

        return {
            "texts": sum(u.texts for models in work._WORKER_MODELS.values() for u in models.usage()),
            "judges": sorted(name for _, name in work._JUDGES),
        }

    with Client(dask_cluster, timeout=30) as client:
        done = client.run(on_workers).values()
    chunks = sum(1 for row in _cache_rows(project / ".vx/cluster/embeddings.db") if row[0].endswith(":document"))
    assert (
        chunks == 8 and sum(d["texts"] for d in done) == chunks
    )  # every chunk was embedded by a worker, none by the driver
    assert any(d["judges"] == ["cross-encoder"] for d in done)


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


def test_a_worker_keeps_a_few_configs_open_each_with_its_own_setup_selection(project, plugins, monkeypatch):
    """What a Dask worker keeps open (`core.run.cluster._worker_setups`): one entry per config and setup
    selection (a run with `--only` and a run without on the same cluster each search their own setups), the
    least recently used let go beyond `KEEP_OPENED`."""
    from vx_eval.core.run import cluster

    monkeypatch.setattr(cluster, "_OPENED", type(cluster._OPENED)())
    monkeypatch.setattr(cluster, "KEEP_OPENED", 2)
    options = {"path": ".vx/t.db", "dense_models": ["minilm"], "mode": "hybrid"}
    config = project.write_config(targets=[{"name": "Local", "engine": "sqlite", "options": options}])
    run_experiment(load_config(config, plugins), plugins, RunOptions(save=False))  # the driver builds the index
    every = cluster._worker_setups(str(config), "sha", (), ())
    only = cluster._worker_setups(str(config), "sha", ("*keyword*",), ())
    assert set(only.setups) == {"local.keyword"} and len(every.setups) > 1 and "local.keyword" in every.setups
    assert cluster._worker_setups(str(config), "sha", (), ()) is every  # kept: opened once
    cluster._worker_setups(str(config), "sha2", (), ())  # a third: the least recently used (--only) goes
    assert list(cluster._OPENED) == [(str(config), "sha", (), ()), (str(config), "sha2", (), ())]
    assert cluster._worker_setups(str(config), "sha", ("*keyword*",), ()) is not only  # opened again
