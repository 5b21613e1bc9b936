"""How far to trust the cross-encoder judge: its grades against TREC DL 2019's human grades (0-3).

Runs `vx-eval judge check configs/msmarco-dl19.yaml --judge cross-encoder` (every setup's top 10 graded by
the judge and by people), then fits the judge's three cut points on half of the queries (every other query
id, sorted) and reports the weighted kappa of the fitted and the default cut points on the other half, so
the number quoted is measured on queries the fit never saw.

    python benchmarks/judge_check.py [--depth N] [--ship]

With --ship, what the check measured with the judge's default cut points is written into the package
(`src/vx_eval/core/judging/measured/<judge identity>.json`): a run graded by this judge whose store has never
had a check of its own states this agreement, marked as vx-eval's own check on TREC DL 2019, and how sure its
pick is under the judge is read from this confusion matrix.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.metrics import cohen_kappa_score

from vx_eval.core.config.experiment import load_config
from vx_eval.core.judging.check import SHIPPED, agreement_of, judge_identity, midpoints
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.judge_check import check_judge
from vx_eval.plugins.judges.cross_encoder import DEFAULT_CUT_POINTS

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "msmarco-dl19.yaml"
PACKAGE = Path(__file__).resolve().parents[1] / "src" / "vx_eval" / "core" / "judging" / SHIPPED
CHECKED_ON = "TREC DL 2019 (43 queries, 5,000 MS MARCO passages)"
"""Graded 0-3 by TREC's assessors; the subsample's qrels hold no grade-0 pairs: unjudged results count 0."""


def kappa(human: np.ndarray, logits: np.ndarray, cuts: tuple[float, ...]) -> float:
    grades = np.searchsorted(np.asarray(cuts), logits, side="right")
    return float(cohen_kappa_score(human, grades, weights="quadratic", labels=[0, 1, 2, 3]))


def fit(human: np.ndarray, logits: np.ndarray) -> tuple[tuple[float, ...], float]:
    """The three rising cut points (a 0.5-logit grid) with the best quadratic kappa."""
    grid = np.arange(-10.0, 10.01, 0.5)
    best, score = DEFAULT_CUT_POINTS, -1.0
    for cuts in itertools.combinations(grid, 3):
        k = kappa(human, logits, cuts)
        if k > score:
            best, score = tuple(float(c) for c in cuts), k
    return best, score


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--ship", action="store_true", help="write the check into the package (see above)")
    args = parser.parse_args()
    plugins = load_plugins()
    started = time.perf_counter()
    result = check_judge(load_config(CONFIG, plugins), plugins, "cross-encoder", args.depth)
    took = time.perf_counter() - started
    pairs = result.pairs
    ids = sorted({p.id for p in pairs})
    fit_ids = set(ids[::2])
    human = np.array([p.human for p in pairs])
    logits = np.array([float(p.raw or "nan") for p in pairs])
    on_fit = np.array([p.id in fit_ids for p in pairs])
    cuts, fitted_kappa = fit(human[on_fit], logits[on_fit])
    middle = tuple(midpoints(human[on_fit].tolist(), logits[on_fit].tolist()) or DEFAULT_CUT_POINTS)
    agree, order = result.agreement, result.order
    print(f"judge check on {len(ids)} queries, {len(pairs)} pairs ({agree.assumed_zero} ungraded = 0), {took:.0f} s")
    print(
        f"  default cut points {list(DEFAULT_CUT_POINTS)}: kappa quadratic {agree.kappa_quadratic:.3f}, "
        f"linear {agree.kappa_linear:.3f}, exact {agree.exact:.1%}; Kendall's tau of {len(order.setups)} "
        f"setups {order.tau:.3f}"
    )
    print(f"  fitted on {len(fit_ids)} queries: {list(cuts)} (kappa there {fitted_kappa:.3f})")
    held = ~on_fit
    print(f"  medians' midpoints on the same queries: {list(middle)}")
    print(f"  held-out {len(ids) - len(fit_ids)} queries, {held.sum()} pairs, quadratic kappa:")
    for name, c in (("default", DEFAULT_CUT_POINTS), ("grid-fitted", cuts), ("midpoints", middle)):
        held_out, every = kappa(human[held], logits[held], c), kappa(human, logits, c)
        print(f"    {name:12s} {list(c)}: {held_out:.3f} (all pairs {every:.3f})")
    for g in range(4):
        row = logits[human == g]
        if len(row):
            quartiles = np.percentile(row, [25, 50, 75]).round(2).tolist()
            print(f"  people grade {g}: {len(row):4d} pairs, logit quartiles {quartiles}")
    if args.ship:
        kept = agreement_of(result).model_copy(
            update={"golden": CHECKED_ON, "golden_sha256": result.golden.sha256, "shipped": True}
        )
        PACKAGE.mkdir(exist_ok=True)
        where = PACKAGE / f"{judge_identity(result.judge)}.json"
        where.write_text(kept.model_dump_json(indent=1) + "\n", encoding="utf-8")
        print(f"  shipped: {where.relative_to(PACKAGE.parents[4])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
