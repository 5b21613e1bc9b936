"""How close the run's plan comes to the time the work then takes.

For each model, on the same SciFact documents (`--documents` of them, whole abstracts), from a cold
embeddings cache, in one process: the plan's estimate of the embedding (`vx-eval run --dry-run` says the
same), then the real build of the embedded engine with only that model, timed; it prints both and their
ratio (real / estimated; 1.0 is exact, the goal is within 0.5-2). The model is loaded fresh for neither:
both load it once, as a run does.

    python benchmarks/plan_estimate.py [--documents 600] [--models minilm bge-small colbert-small]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path

import yaml

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=600)
    parser.add_argument("--models", nargs="+", default=["minilm", "bge-small", "colbert-small"])
    args = parser.parse_args()

    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.contracts.engine import SilentProgress
    from vx_eval.core.plugins import load_plugins
    from vx_eval.core.run.targets import close_targets, open_targets
    from vx_eval.core.stores import Stores
    from vx_eval.core.usecases.pipeline import plan_experiment

    lines = (SHARED / "scifact" / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in random.Random(0).sample(lines, args.documents)]
    plugins = load_plugins()
    print(f"SciFact, {args.documents} abstracts, one chunk each; cold cache per model; seconds")
    print(f"{'model':<14} {'estimated':>10} {'real':>8} {'real/est':>9}")
    for model in args.models:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            docs = root / "docs.jsonl"
            docs.write_text("".join(json.dumps({"id": r["_id"], "text": r["text"]}) + "\n" for r in rows))
            golden = root / "golden.jsonl"
            golden.write_text(json.dumps({"id": "q", "question": "cells", "expected": [rows[0]["_id"]]}) + "\n")
            late = model == "colbert-small"
            options = {
                "mode": "ultimate" if late else "dense",
                "dense_models": [] if late else [model],
                "chunk_words": 0,
                "reranker": None,
                **({"late_model": model} if late else {}),
            }
            config = {
                "name": "plan",
                "golden": "golden.jsonl",
                "corpus": "docs.jsonl",
                "targets": [{"name": "Local", "engine": "sqlite", "options": options}],
                "models": {"threads": 2, "embeddings": str(root / "emb.db")},
            }
            (root / "config.yaml").write_text(yaml.safe_dump(config))
            experiment = load_config(root / "config.yaml", plugins)
            started = time.perf_counter()
            plan = plan_experiment(experiment, plugins)
            estimated = sum(w.seconds or 0 for w in plan.work)
            planning = time.perf_counter() - started
            started = time.perf_counter()
            close_targets(open_targets(experiment, plugins, Stores(plugins), SilentProgress()))
            real = time.perf_counter() - started + planning  # the plan's sample is part of the work
            print(f"{model:<14} {estimated:>10.1f} {real:>8.1f} {real / estimated:>9.2f}")


if __name__ == "__main__":
    main()
