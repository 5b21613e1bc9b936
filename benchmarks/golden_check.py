"""`vx-eval golden check FOLDER --config CONFIG` on SciFact: what checking every judged id costs against
reading the corpus file alone (the least any check of the ids against it can cost), in one run.

It times, `--repeat` times each, the whole command in a fresh process (Python's start, the plugins, the
BEIR folder, the corpus file, every id) and a process that only reads the corpus file's lines as JSON, and
prints the medians and their ratio. The issue's goal: under 10 s, with no index built (the command says so).

    python benchmarks/golden_check.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCIFACT = REPO.parent / "shared" / "datasets" / "scifact"
READ_ONLY = "import json, sys\nfor line in open(sys.argv[1], encoding='utf-8'):\n    json.loads(line)\n"


def timed(argv: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=REPO)
    return time.perf_counter() - started, done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    check = [sys.executable, "-m", "vx_eval", "golden", "check", str(SCIFACT), "--config", "configs/scifact.yaml"]
    read = [sys.executable, "-c", READ_ONLY, str(SCIFACT / "corpus.jsonl")]
    checks, reads, said = [], [], ""
    for _ in range(args.repeat):
        seconds, said = timed(check)
        checks.append(seconds)
        reads.append(timed(read)[0])
    check_s, read_s = statistics.median(checks), statistics.median(reads)
    print(" ".join(said.split()))
    print(f"golden check --config: {check_s:.2f} s (median of {args.repeat}); reading the corpus alone {read_s:.2f} s")
    print(f"ratio: {check_s / read_s:.1f}x the corpus read; goal under 10 s: {'met' if check_s < 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
