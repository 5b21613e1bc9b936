"""The embedded engine against Qdrant (local mode) on the same SciFact slice: agreement and time.

Runs `configs/compare-engines.yaml` in a fresh folder (both targets built from nothing; the embedding cache
is shared, so the second target embeds nothing) and prints, for every setup the two targets both offer,
how often their top 10 are the same, each one's nDCG@10 and median search time, and Qdrant's time as a
ratio against the embedded engine's measured in the same run.

    python benchmarks/compare_engines.py
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import yaml

from vx_eval.core.config import load_config
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run import RunOptions, run_experiment

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vx-compare-"))
    try:
        config = yaml.safe_load((REPO / "configs" / "compare-engines.yaml").read_text())
        shared = (REPO.parent / "shared" / "datasets" / "scifact").resolve()
        config["golden"]["path"] = config["corpus"]["path"] = str(shared)
        for target in config["targets"]:
            target["options"]["path"] = str(work / Path(target["options"]["path"]).name)
        config["models"]["embeddings"] = str(work / "embeddings.db")
        config["models"]["scores"] = str(work / "scores.db")
        path = work / "compare-engines.yaml"
        path.write_text(yaml.safe_dump(config))
        plugins = load_plugins()
        start = time.perf_counter()
        report = run_experiment(load_config(path, plugins), plugins, RunOptions(save=False)).report
        elapsed = time.perf_counter() - start
    finally:
        shutil.rmtree(work, ignore_errors=True)

    setups = {s["key"]: s for s in report["setups"]}
    local_prefix, remote_prefix = "local.", "qdrant."
    print(f"compare-engines: {report['golden']['questions']} questions, {len(setups)} setups, {elapsed / 60:.1f} min")
    header = ("setup", "same top 10", "nDCG@10 local", "qdrant", "ms local", "qdrant", "ratio")
    print("{:32} {:>12} {:>14} {:>8} {:>9} {:>8} {:>6}".format(*header))
    for key in sorted(k for k in setups if k.startswith(local_prefix)):
        other = setups.get(remote_prefix + key.removeprefix(local_prefix))
        if other is None:
            continue
        ours, theirs = setups[key], other
        a, b = ours["per_question"]["results"], theirs["per_question"]["results"]
        same = sum([u for u, _ in x[:10]] == [u for u, _ in y[:10]] for x, y in zip(a, b, strict=True))
        ms_a, ms_b = ours["times_ms"]["median"], theirs["times_ms"]["median"]
        print(
            f"{key.removeprefix(local_prefix):32} {same / len(a):>11.1%} {ours['summary']['ndcg@10']:>14.4f} "
            f"{theirs['summary']['ndcg@10']:>8.4f} {ms_a:>9.1f} {ms_b:>8.1f} {ms_b / ms_a:>6.2f}"
        )
    for key in sorted(k for k in setups if k.startswith(remote_prefix)):
        if local_prefix + key.removeprefix(remote_prefix) not in setups:
            ndcg, median = setups[key]["summary"]["ndcg@10"], setups[key]["times_ms"]["median"]
            print(f"{key:32} (Qdrant only) nDCG@10 {ndcg:.4f}, median {median:.1f} ms")


if __name__ == "__main__":
    main()
