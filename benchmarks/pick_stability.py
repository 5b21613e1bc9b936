"""Do the picks hold still? The shipped quickstart run `--runs` times, unchanged, and how often each pick
changed: with vx-eval's picks (a time difference inside the noise is a tie) beside the rule they replaced
(the fastest median within the points, however small the difference), both on the same runs. Then a run
whose setups really differ in speed (keyword against a reranked hybrid, within 30 points of each other)
must still pick the faster one every time.

    python benchmarks/pick_stability.py [--runs 5] [--config configs/quickstart.yaml]
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from vx_eval.core.report.schema import PICK_NAMES, Report, load_report

REPO = Path(__file__).resolve().parents[1]


def run(config: Path, *extra: str) -> Report:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(config), "--json", "--no-save", *extra],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return load_report(done.stdout, "stdout")


def naive_picks(report: Report) -> dict[str, str | None]:
    """The rule before picks knew about noise: the fastest median within the points of the best primary."""
    primary = report.settings.primary
    rows = [s for s in report.setups if s.pickable and s.times_ms.median is not None]
    if not rows:
        return dict.fromkeys(PICK_NAMES)
    best = max(rows, key=lambda s: (s.summary.get(primary) or 0, s.summary.get("found@1") or 0, -s.times_ms.median))
    top = best.summary.get(primary) or 0

    def fastest(points: float) -> str:
        near = [s for s in rows if (top - (s.summary.get(primary) or 0)) * 100 <= points + 1e-9]
        return min(near, key=lambda s: (s.times_ms.median, s.key)).key

    return {
        "finds_the_most": best.key,
        "best_for_balance": fastest(report.settings.balance_points),
        "best_for_time": fastest(report.settings.time_points),
    }


def changes(picks: list[dict[str, str | None]]) -> dict[str, int]:
    """Per pick, how many runs picked something other than the run before."""
    return {name: sum(1 for a, b in itertools.pairwise(picks) if a[name] != b[name]) for name in PICK_NAMES}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--config", type=Path, default=REPO / "configs" / "quickstart.yaml")
    args = parser.parse_args()
    run(args.config)  # build the index and load the models once, outside the measured runs
    reports, started = [], time.perf_counter()
    for i in range(args.runs):
        reports.append(run(args.config))
        print(f"run {i + 1}: {json.dumps(dict(reports[-1].picks.items()))}", flush=True)
    ours = [dict(r.picks.items()) for r in reports]
    theirs = [naive_picks(r) for r in reports]
    print(f"\n{args.runs} identical runs of {args.config.name} ({time.perf_counter() - started:.0f} s):")
    print(f"{'pick':18} {'changes (noise-aware)':>22} {'changes (fastest median)':>26}  picked (noise-aware)")
    ours_changes, theirs_changes = changes(ours), changes(theirs)
    for name in PICK_NAMES:
        seen = collections.Counter(p[name] for p in ours)
        print(f"{name:18} {ours_changes[name]:>22} {theirs_changes[name]:>26}  {dict(seen)}")
    print("\nsetups that really differ in speed (keyword against a reranked hybrid, points 30):")
    fast = []
    for _ in range(args.runs):
        report = run(
            args.config, "--only", "local.keyword", "--only", "local.hybrid_reranked.minilm", "--balance", "30",
            "--time", "30",
        )  # fmt: skip
        fast.append(report.picks.best_for_time)
        reason = report.picking.reasons["best_for_time"].text if report.picking else ""
        print(f"  best_for_time: {report.picks.best_for_time} — {reason[:140]}")
    held = all(f == "local.keyword" for f in fast)
    print(f"the faster setup picked in {sum(f == 'local.keyword' for f in fast)} of {len(fast)} runs")
    return 0 if held and not any(ours_changes.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
