"""How far tuning fusion on the scored questions overstates the gain: SciFact and TREC DL 2019 (MS MARCO).

Runs each collection's config (keyword, dense and hybrid setups only; the index and embeddings built or
reused as the config says) with `evaluation.tune` (convex and RRF, alpha 0.0-1.0 by 0.1, RRF's k 10, 60,
100, 5 folds), the components searched at `search.candidates` depth so that re-fusing the kept lists is
the live fusion, and prints per hybrid: the run's own setting, the in-sample best (optimistic), the
held-out score of the tuning procedure with its interval, how much in-sample overstates it, and what the
folds chose.

    python benchmarks/tuning.py [--collections scifact,msmarco-dl19]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

from vx_eval.python.commands import run
from vx_eval.views.format import setting_text

REPO = Path(__file__).resolve().parents[1]
TUNE = {"fusion": ["convex", "rrf"], "rrf_k": [10, 60, 100], "folds": 5, "timed": 20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", default="scifact,msmarco-dl19")
    args = parser.parse_args()
    for name in args.collections.split(","):
        source = REPO / "configs" / f"{name}.yaml"
        data = yaml.safe_load(source.read_text(encoding="utf-8"))
        depth = int(data["evaluation"].get("depth", 20))
        data["evaluation"]["tune"] = TUNE
        data["evaluation"]["timing_sample"] = 20
        data.setdefault("search", {})["candidates"] = depth
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", dir=source.parent, delete=False) as f:
            yaml.safe_dump(data, f)
            config = Path(f.name)
        try:
            start = time.perf_counter()
            only = ("local.keyword", "local.dense.*", "local.hybrid.*")
            report = run(config, save=False, only=only).report
        finally:
            config.unlink()
        took = time.perf_counter() - start
        print(f"\n{name}: {len(report.question_ids)} questions, {report.settings.primary}, run in {took:.0f} s")
        print(f"{'hybrid':34} {'default':>8} {'in-sample':>10} {'held-out':>9} {'95% interval':>16} {'overstated':>11}")
        for t in report.tuning.hybrids:
            print(
                f"{t.hybrid:34} {t.default_value:8.4f} {t.in_sample_value:10.4f} {t.held_out:9.4f} "
                f"{t.held_out_ci[0]:7.4f}–{t.held_out_ci[1]:7.4f} {t.overstated:+11.4f}"
            )
            chose = "; ".join(setting_text(c.setting.fusion, c.setting.alpha, c.setting.rrf_k) for c in t.folds)
            print(f"   folds chose: {chose} ({t.stable:.0%} alike); on every question: {t.config_lines}")
            d = t.vs_default
            print(f"   held-out against the default: {d.delta:+.4f} [{d.ci[0]:+.4f}, {d.ci[1]:+.4f}], p {d.p:.3g}")


if __name__ == "__main__":
    main()
