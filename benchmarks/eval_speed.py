"""`vx-eval eval` against pytrec_eval on 10,000 questions x 100 results, side by side in one run.

Both sides start from the same two files on disk (TREC qrels and a TREC run) and end with per-question
values of ndcg@10, map, recall@100 and MRR: reading the files is part of the work on both sides. Each side
runs `--repeat` times, interleaved; the medians and their ratio are printed, and the per-question values
are checked to agree to 1e-9.

    python benchmarks/eval_speed.py [--questions 10000] [--depth 100] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytrec_eval

from vx_eval.core.trec import evaluate_run, read_judgements, read_run

OURS = ["ndcg@10", "map", "recall@100", "mrr"]
THEIRS = ["ndcg_cut_10", "map", "recall_100", "recip_rank"]


def write_collection(folder: Path, questions: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Graded qrels (20 judged documents a question) and a run whose lists mix judged and unjudged ids,
    scores as BM25 gives them, with one tie in score per list."""
    rng = random.Random(seed)
    docs = [f"D{i}" for i in range(200_000)]
    qrels, run = folder / "qrels.txt", folder / "run.txt"
    with qrels.open("w") as q, run.open("w") as r:
        for i in range(questions):
            qid = f"q{i}"
            judged = rng.sample(docs, 20)
            q.writelines(f"{qid} 0 {d} {rng.choice([0, 1, 1, 2, 3])}\n" for d in judged)
            pool = list(dict.fromkeys(judged[:10] + rng.sample(docs, depth)))[:depth]
            rng.shuffle(pool)
            scores = sorted((round(rng.uniform(0, 30), 4) for _ in pool), reverse=True)
            scores[5] = scores[6]  # a tie in every list, as engines with coarse scores give
            r.writelines(
                f"{qid} Q0 {d} {rank + 1} {s} bench\n" for rank, (d, s) in enumerate(zip(pool, scores, strict=True))
            )
    return qrels, run


def ours(qrels: Path, run: Path) -> dict[str, np.ndarray]:
    evaluation = evaluate_run(read_judgements(qrels), read_run(run), OURS)
    return dict(zip(evaluation.question_ids, evaluation.values, strict=True))


def theirs(qrels: Path, run: Path) -> dict[str, dict[str, float]]:
    with qrels.open() as handle:
        judged = pytrec_eval.parse_qrel(handle)
    with run.open() as handle:
        ranked = pytrec_eval.parse_run(handle)
    return pytrec_eval.RelevanceEvaluator(judged, set(THEIRS)).evaluate(ranked)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_collection(Path(tmp), args.questions, args.depth)
        # first use, each in a fresh interpreter: no warm-up hides an import or a compile
        first: dict[str, list[float]] = {"ours": [], "theirs": []}
        for name in ("ours", "theirs", "ours", "theirs", "ours", "theirs"):
            code = (
                f"import time,sys;sys.argv=['x'];t=time.perf_counter();import benchmarks.eval_speed as b;"
                f"b.{name}(b.Path({str(qrels)!r}),b.Path({str(run)!r}));print(time.perf_counter()-t)"
            )
            done = subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                cwd=Path(__file__).resolve().parents[1],
            )
            first[name].append(float(done.stdout.split()[-1]))
        times: dict[str, list[float]] = {"ours": [], "theirs": []}
        for _ in range(args.repeat):
            for name, fn in (("ours", ours), ("theirs", theirs)):
                start = time.perf_counter()
                result = fn(qrels, run)
                times[name].append(time.perf_counter() - start)
                if name == "ours":
                    mine = result
                else:
                    reference = result
        worst = max(abs(mine[q][i] - reference[q][m]) for q in reference for i, m in enumerate(THEIRS))
    o, t = statistics.median(times["ours"]), statistics.median(times["theirs"])
    o_min, t_min = min(times["ours"]), min(times["theirs"])
    print(f"{args.questions:,} questions x {args.depth} results, files read and 4 measures computed per question")
    fo, ft = statistics.median(first["ours"]), statistics.median(first["theirs"])
    print(f"  first use (fresh interpreter, imports included, median of 3): vx-eval {fo:.2f} s, pytrec_eval {ft:.2f} s")
    print(f"  median of {args.repeat}: vx-eval {o:.2f} s, pytrec_eval {t:.2f} s, ratio vx-eval/pytrec_eval {o / t:.2f}")
    print(f"  best of {args.repeat}:   vx-eval {o_min:.2f} s, pytrec_eval {t_min:.2f} s, ratio {o_min / t_min:.2f}")
    print(f"  largest per-question difference: {worst:.2e}")


if __name__ == "__main__":
    main()
