"""The run's own scoring, linear in questions: `score_setup` (measures, intervals, the graded view, ties)
and the ranking over 1,000, 10,000 and 100,000 synthetic questions, with the growth exponent.

Each size builds one setup's searches (20 results a question, graded judgements, a few ties) and times
scoring it and ranking three such setups, best of three; the exponent is the slope of log time against log
questions between the smallest and the largest size (1.0: linear; the bound is 1.1).

    python benchmarks/scoring_scale.py [--sizes 1000,10000,100000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from vx_eval.core.contracts.engine import Setup
from vx_eval.core.contracts.golden import Question
from vx_eval.core.report.schema import Settings
from vx_eval.core.run import ranking, scoring
from vx_eval.core.run.search import SetupRun

DEPTH = 20


def questions(n: int, rng: np.random.Generator) -> list[Question]:
    out = []
    for i in range(n):
        relevant = [f"d{int(x)}" for x in rng.choice(5000, size=3, replace=False)]
        grades = {d: int(g) for d, g in zip(relevant, rng.integers(1, 4, size=3), strict=True)}
        out.append(Question(f"q{i}", "?", tuple(relevant), grades=grades))
    return out


def searches(key: str, asked: list[Question], rng: np.random.Generator) -> SetupRun:
    results = []
    for q in asked:
        docs = [f"d{int(x)}" for x in rng.integers(0, 5000, size=DEPTH)]
        if rng.random() < 0.6:
            docs[int(rng.integers(0, DEPTH))] = q.expected[0]
        scores = np.round(np.sort(rng.random(DEPTH))[::-1], 2)  # two decimals: some ties
        results.append([(d, float(s)) for d, s in zip(docs, scores, strict=True)])
    n = len(asked)
    setup = Setup(key, "T", "sqlite", "keyword", key, lambda text, k: [])
    times: list[float | None] = [float(t) for t in rng.gamma(4.0, 3.0, size=n)]
    return SetupRun(setup, results=results, times_ms=times, server_ms=[None] * n, workers=[None] * n, errors=[None] * n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    from vx_eval.core.measures.metrics import parse

    measures = [parse(m) for m in ("found@1", "found@10", "mrr", "recall@10", "ndcg@10", "map")]
    settings = Settings(metrics=[m.name for m in measures], primary="ndcg@10", depth=DEPTH, graded=True)
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        rng = np.random.default_rng(n)
        asked = questions(n, rng)
        runs = [searches(f"t.s{i}", asked, rng) for i in range(3)]
        best = math.inf
        for _ in range(3):
            start = time.perf_counter()
            results = [scoring.score_setup(r, asked, measures, settings) for r in runs]
            ranking.rank(results, settings)
            best = min(best, time.perf_counter() - start)
        rows.append((n, best))
        print(
            f"{n:>8,} questions: scoring 3 setups and ranking them {best:8.2f} s ({best / n * 1e6:7.1f} µs a question)"
        )
    (n0, t0), (n1, t1) = rows[0], rows[-1]
    exponent = math.log(t1 / t0) / math.log(n1 / n0)
    print(f"growth exponent from {n0:,} to {n1:,} questions: {exponent:.2f} (linear 1.00; bound 1.1)")


if __name__ == "__main__":
    main()
