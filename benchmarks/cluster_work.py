"""The run's model work on a Dask cluster against one process, through served models 50 ms away.

A stand-in for hosted APIs (OpenAI's wire format, on 127.0.0.1: `vx_eval.testing.served`) answers embeddings
and chat completions (a grader: one digit 0-3) after waiting `--latency` seconds per request, as a service
across a network does; each answer was computed once before, untimed, so a request costs its latency and not
this machine's model. Two stages of a run are timed, each from a cold cache:

- indexing: the quickstart corpus (95 documents) opened by the embedded engine with one served dense model,
  `--batch` texts a request. Reference: one process, one request at a time (``concurrency: 1``, the serial
  executor). Cluster: ``executor: dask`` with `--workers` LocalCluster workers, the endpoint's `--concurrency`
  requests in flight on each. The index (every table of the SQLite file, each row as SQL, the build's time
  aside) and the embeddings kept must be byte for byte the reference's.
- judging: the chat judge grades a pool of (question, passage) pairs (each quickstart question with the
  documents ranked 1-10 by the keyword setup). Reference: one request at a time in this process; cluster: the
  pool's batches as tasks on the workers, `--concurrency` requests in flight on each. The verdicts must be the
  reference's.

It prints each stage's wall time, the speed-up over the reference measured in the same run, the requests sent
and the most the stand-in answered at once, and whether the result is the same; the cluster's start is timed
apart (a run starts it once, before it opens its targets), and each way is warmed up once, untimed, so
neither pays for its first imports.

    python benchmarks/cluster_work.py [--latency 0.05] [--workers 2] [--concurrency 8] [--batch 1]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

KEY = "sk-benchmark-cluster-work"
ENV = "VX_BENCH_CLUSTER_KEY"
REPO = Path(__file__).resolve().parents[1]
TIMES: dict[str, float] = {}
"""Each indexing's own wall time: the targets opened (the config read and the plugins loaded before it)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the stand-in waits per request")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight on each worker")
    parser.add_argument("--batch", type=int, default=1, help="texts an embeddings request carries")
    args = parser.parse_args()
    os.environ[ENV] = KEY

    from vx_eval.testing.served import GRADER_MODEL, ServedStandIn

    class Remembering(ServedStandIn):
        """The stand-in with each vector and each grade computed once (in the untimed warm-up)."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.known: dict[str, np.ndarray] = {}
            self.logits: dict[tuple[str, str], float] = {}

        def _embed(self, texts: list[str]) -> np.ndarray:
            todo = [t for t in dict.fromkeys(texts) if t not in self.known]
            if todo:
                self.known.update(zip(todo, super()._embed(todo), strict=True))
            return np.stack([self.known[t] for t in texts])

        def _rerank(self, query: str, documents: list[str]) -> list[float]:
            todo = [d for d in documents if (query, d) not in self.logits]
            if todo:
                self.logits.update({(query, d): s for d, s in zip(todo, super()._rerank(query, todo), strict=True)})
            return [self.logits[(query, d)] for d in documents]

    with tempfile.TemporaryDirectory() as folder, Remembering(key=KEY) as server:
        root = Path(folder)
        shutil.copytree(REPO / "configs" / "quickstart", root / "quickstart")
        served = {
            "provider": "openai",
            "model": "all-MiniLM-L6-v2",
            "base_url": server.url + "/v1",
            "api_key": {"env": ENV},
            "batch": args.batch,
        }
        judge = {"url": server.url + "/v1", "model": GRADER_MODEL, "api_key": {"env": ENV}}
        print(
            f"quickstart corpus (95 documents, 42 questions), {args.latency * 1000:.0f} ms a request, "
            f"{args.batch} texts an embeddings request; cluster: {args.workers} Dask workers (LocalCluster), "
            f"{args.concurrency} requests in flight on each"
        )
        from vx_eval.core.run.cluster import DaskExecutor

        started = time.perf_counter()
        cluster = DaskExecutor(str(root / "unused.yaml"), "", workers=args.workers)
        work = cluster.model_work()
        print(f"cluster started in {time.perf_counter() - started:.1f} s (once a run, before its targets open)\n")
        # untimed, each way once: the stand-in computes every vector and grade, and each process (this one
        # and every worker) imports the clients and makes the models it will use
        server.latency = 0.0
        pool = judging_pool(root)
        for on in (None, work):
            index(root, "warm-up", served, args.concurrency, on)
            grade(root, pool, judge, args.concurrency, on)
        server.latency = args.latency
        print(f"{'stage':<9} {'where':<20} {'wall s':>7} {'speed-up':>8} {'requests':>8} {'most at once':>12}  same")
        try:
            rows = []
            for stage in ("indexing", "judging"):
                reference: Any = None
                baseline = 0.0
                for where, concurrency, on in (("one process, 1 at once", 1, None), ("dask", args.concurrency, work)):
                    server.requests = server.most_in_flight = 0
                    begin = time.perf_counter()
                    if stage == "indexing":
                        made: Any = index(root, where.split(",")[0], served, concurrency, on)
                        wall = TIMES[where.split(",")[0]]
                    else:
                        made = grade(root, pool, judge, concurrency, on)
                        wall = time.perf_counter() - begin
                    if reference is None:
                        reference, baseline = made, wall
                    label = where if on is None else f"dask {args.workers} x {args.concurrency}"
                    rows.append(
                        f"{stage:<9} {label:<20} {wall:>7.2f} {baseline / wall:>7.1f}x {server.requests:>8} "
                        f"{server.most_in_flight:>12}  {'yes' if made == reference else 'NO'}"
                    )
                    print(rows[-1], flush=True)
        finally:
            cluster.close()


def _config(root: Path, name: str, served: dict[str, Any], concurrency: int) -> Path:
    path = root / f"{name}.yaml"
    config = {
        "name": name,
        "golden": "quickstart/golden.jsonl",
        "corpus": "quickstart/docs.jsonl",
        "targets": [
            {
                "name": "Local",
                "engine": "sqlite",
                "options": {"path": f"{name}/index.db", "mode": "dense", "dense_models": ["served"]},
            }
        ],
        "models": {
            "endpoints": {"served": {**served, "concurrency": concurrency}},
            "embeddings": f"{name}/embeddings.db",
            "scores": f"{name}/scores.db",
        },
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def index(root: Path, name: str, served: dict[str, Any], concurrency: int, on: Any) -> tuple[str, list[Any]]:
    """The quickstart indexed from a cold cache; the index file's hash and the vectors kept."""
    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.contracts.engine import SilentProgress
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.targets import close_targets, open_targets
    from vx_eval.core.stores import Stores

    folder = root / name.replace(" ", "-")
    shutil.rmtree(folder, ignore_errors=True)
    plugins = load_plugins()
    experiment = load_config(_config(root, folder.name, served, concurrency), plugins)
    begin = time.perf_counter()  # the run's indexing stage: the targets opened, each built from the corpus
    close_targets(open_targets(experiment, plugins, Stores(plugins), SilentProgress(), work=on))
    TIMES[name] = time.perf_counter() - begin
    with sqlite3.connect(folder / "embeddings.db") as db:
        kept = sorted(db.execute("SELECT space, key, value FROM kept WHERE space LIKE '%:document'").fetchall())
    with sqlite3.connect(folder / "index.db") as db:  # every table, the build's time aside
        dump = "\n".join(line for line in db.iterdump() if "'indexed_at'" not in line)
    return hashlib.sha256(dump.encode()).hexdigest(), kept


def judging_pool(root: Path) -> list[tuple[str, str]]:
    """Each quickstart question with the documents BM25 puts first to tenth (a keyword-only index)."""
    import json

    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.contracts.engine import Query, SilentProgress
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.targets import close_targets, open_targets
    from vx_eval.core.stores import Stores

    path = root / "pool.yaml"
    config = {
        "name": "pool",
        "golden": "quickstart/golden.jsonl",
        "corpus": "quickstart/docs.jsonl",
        "targets": [{"name": "K", "engine": "sqlite", "options": {"path": "pool/index.db", "dense_models": []}}],
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    plugins = load_plugins()
    (target,) = open_targets(load_config(path, plugins), plugins, Stores(plugins), SilentProgress())
    try:
        questions = [json.loads(line)["question"] for line in (root / "quickstart/golden.jsonl").open()]
        docs = {d["id"]: d for d in map(json.loads, (root / "quickstart/docs.jsonl").open())}
        pool = []
        for question in questions:
            for hit in target.handle.search(Query(question, 10, "keyword")):
                doc = docs[hit.doc_id]
                pool.append((question, f"{doc.get('title', '')}\n{doc['text']}".strip()))
    finally:
        close_targets([target])
    return pool


def grade(root: Path, pool: list[tuple[str, str]], judge: dict[str, Any], concurrency: int, on: Any) -> list[Any]:
    """The pool graded by the chat judge (no cache): here, or as batches on the cluster."""
    from vx_eval.core.judging.grading import grade_pairs
    from vx_eval.core.models.loading import Models
    from vx_eval.core.plugins import load_plugins
    from vx_eval.llm.chat import ChatOptions
    from vx_eval.plugins.judges.chat import ChatJudge

    options = ChatOptions.model_validate({**judge, "concurrency": concurrency})
    plugins = load_plugins()
    models = Models(plugins.models, providers=plugins.providers)
    graded = grade_pairs(
        ChatJudge(options), pool, None, on=on.judging(models, "chat", options) if on is not None else None
    )
    return [graded.verdicts[p] for p in pool]


if __name__ == "__main__":
    main()
