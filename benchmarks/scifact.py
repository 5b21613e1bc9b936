"""The SciFact run with every local setup: quality, search times, indexing time and memory, warm rerun.

Runs `configs/scifact.yaml` twice in a fresh folder (index and embedding cache built from nothing, then
reused), and measures each model's raw encoding throughput on a sample of the same documents in the same
process, so the indexing pipeline's throughput is read as a ratio against the model alone, and the cold
run's wall time beside the sum of its models' raw times on the texts it embedded.

    python benchmarks/scifact.py [--sample 300] [--threads 2]
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path

import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.models import DENSE, LATE, ModelSettings
from vx_eval.core.golden.sources import read_corpus
from vx_eval.core.models.loading import Models
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

REPO = Path(__file__).resolve().parents[1]


class Stopwatch:
    """A `Progress` that records how long each stage took and how many items it moved."""

    def __init__(self) -> None:
        self.stages: dict[str, list[float]] = {}

    def start(self, description: str, total: int | None):
        stage = self.stages.setdefault(description, [time.perf_counter(), time.perf_counter(), 0])

        def advance(n: int) -> None:
            stage[1] = time.perf_counter()
            stage[2] += n

        return advance

    def note(self, message: str) -> None:
        print("  note:", message)


def raw_throughput(models: Models, texts: list[str]) -> dict[str, float]:
    rates = {}
    for name, kind in (("minilm", DENSE), ("bge-small", DENSE), ("colbert-small", LATE)):
        model = models.get(name, kind)
        model.encode_documents(texts[:8])  # load and warm
        best = float("inf")
        for _ in range(2):  # the better of two: the first large batch also grows the runtime's buffers
            start = time.perf_counter()
            model.encode_documents(texts)
            best = min(best, time.perf_counter() - start)
        rates[models.label(name)] = len(texts) / best
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=300, help="documents for the raw model throughput")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cold-only", action="store_true", help="skip the warm rerun")
    args = parser.parse_args()
    plugins = load_plugins()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "configs"
        folder.mkdir()
        config = yaml.safe_load((REPO / "configs" / "scifact.yaml").read_text())
        shared = (REPO / "configs" / config["golden"]).resolve()
        config.update(golden=str(shared), corpus=str(shared), save_to=str(Path(tmp) / "runs"))
        config["targets"][0]["options"]["path"] = str(Path(tmp) / "scifact.db")
        config["models"]["threads"] = args.threads
        path = folder / "scifact.yaml"
        path.write_text(yaml.safe_dump(config))
        experiment = load_config(path, plugins)

        corpus = read_corpus(str(shared), Stores(plugins))
        documents = list(corpus)
        texts = [f"{d.title}\n{d.text}" if d.title else d.text for d in random.Random(0).sample(documents, args.sample)]
        settings = experiment.config.models
        same = ModelSettings(
            args.threads, settings.batch_size, settings.passage_tokens
        )  # the run's models, loaded once
        rates = raw_throughput(Models(plugins.models, same), texts)

        runs = []
        for attempt in ("cold",) if args.cold_only else ("cold", "warm"):
            watch = Stopwatch()
            start = time.perf_counter()
            report = run_experiment(experiment, plugins, RunOptions(progress=watch, save=False)).report
            runs.append((attempt, time.perf_counter() - start, watch, report))
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        shutil.rmtree(tmp, ignore_errors=True)

    cold_time, cold_watch, cold = runs[0][1], runs[0][2], runs[0][3]
    print(
        f"SciFact: {len(documents):,} documents, {cold.golden.labelled} questions, "
        f"{len(cold.setups)} setups, threads {args.threads}"
    )
    print(f"{'setup':<44} {'nDCG@10':>8} {'R@100':>7} {'found@10':>9} {'median ms':>10} {'p95 ms':>8}")
    for s in cold.setups:
        summary, times = s.summary, s.times_ms
        print(
            f"{s.key:<44} {summary.get('ndcg@10') or 0:8.4f} {summary.get('recall@100') or 0:7.4f} "
            f"{summary.get('found@10') or 0:9.3f} {times.median or 0:10.1f} {times.p95 or 0:8.1f}"
            + (f"  ERROR {s.error}" if s.error else "")
        )
    timing = cold.settings.timing
    print(f"(times: {timing.questions_timed} of {timing.questions} questions, {timing.sample})")
    print("\nIndexing (cold run):")
    for stage, (began, ended, count) in cold_watch.stages.items():
        if stage == "Searching":
            continue
        rate = count / (ended - began) if ended > began else float("nan")
        label = stage.split(" · ")[-1]
        raw = rates.get(label)
        ratio = f", raw model {raw:.1f} docs/s, pipeline/raw {rate / raw:.2f}" if raw else ""
        print(f"  {stage:<50} {count:6d} in {ended - began:7.1f} s = {rate:8.1f}/s{ratio}")
    search = cold_watch.stages.get("Searching")
    if search:
        print(f"  searching: {search[1] - search[0]:.0f} s")
    print(f"\nWhole cold run: {cold_time / 60:.1f} min")
    if len(runs) > 1:
        print(
            f"Warm run (index and embeddings cached): {runs[1][1] / 60:.1f} min, ratio warm/cold "
            f"{runs[1][1] / cold_time:.2f}"
        )
    alone = sum(
        count / rates[stage.split(" · ")[-1]]
        for stage, (_, _, count) in cold_watch.stages.items()
        if stage.startswith("Embedding") and stage.split(" · ")[-1] in rates
    )
    print(
        f"The models alone on the texts the cold run embedded (texts / raw throughput, summed over the models): "
        f"{alone / 60:.1f} min; the whole cold run {cold_time / 60:.1f} min, {cold_time / alone:.2f}x that"
        if alone
        else "No text was embedded in the cold run (the embeddings cache already held them)"
    )
    print(f"Peak memory (RSS): {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
