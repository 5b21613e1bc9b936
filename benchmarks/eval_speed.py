"""Scoring TREC files as whole processes: `vx-eval eval` against pytrec_eval (and trec_eval's C binary when
one is on the PATH), side by side in one run, and `vx-eval --help` beside `python -c pass`.

Every side starts from the same two files on disk and ends with per-question values of ndcg@10, map,
recall@100 and MRR printed: starting the interpreter, importing, reading and scoring are all part of the
work. Each command runs `--repeat` times, interleaved; wall time and peak memory (maximum resident set, from
`/usr/bin/time`) are the medians, with ratios against pytrec_eval and trec_eval measured in the same run.
vx-eval's per-question values are checked against pytrec_eval's to 1e-9.

Then `-m all_trec` (every measure of trec_eval's all_trec set, `--trec-format -c -q`) at one and ten million
lines: vx-eval's wall time and peak memory beside trec_eval's, and whether the two outputs are the same bytes.
trec_eval must be on the PATH for that comparison (build it from https://github.com/usnistgov/trec_eval with
`make`); without it, vx-eval's side alone is printed.

    python benchmarks/eval_speed.py [--sizes 323x1000,10000x100,10000x1000] [--all-trec 1000x1000,10000x1000]
        [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OURS = ["ndcg@10", "map", "recall@100", "mrr"]
THEIRS = ["ndcg_cut_10", "map", "recall_100", "recip_rank"]
TREC_EVAL = ["ndcg_cut.10", "map", "recall.100", "recip_rank"]
PYTREC = """
import sys, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
result = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map", "recall_100", "recip_rank"}).evaluate(run)
out = sys.stdout
for q, values in result.items():
    for name, value in values.items():
        out.write(f"{name}\\t{q}\\t{value:.4f}\\n")
"""


def write_collection(folder: Path, questions: int, depth: int, seed: int = 0) -> tuple[Path, Path]:
    """Graded qrels (20 judged documents a question) and a run whose lists mix judged and unjudged ids,
    scores as BM25 gives them, with one tie in score per list."""
    rng = random.Random(seed)
    docs = [f"D{i}" for i in range(200_000)]
    qrels, run = folder / f"qrels-{questions}x{depth}.txt", folder / f"run-{questions}x{depth}.txt"
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


VX_EVAL = shutil.which("vx-eval") or str(Path(sys.executable).with_name("vx-eval"))
"""vx-eval's command: on the PATH, else beside this Python (its venv not activated)."""
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Every side runs from compiled bytecode, as an installed package does (pip compiles it at install): with
PYTHONDONTWRITEBYTECODE set, an editable checkout would compile its modules on every start, 20 ms here."""


def timed(argv: list[str], out: Path | None = None) -> tuple[float, float]:
    """Wall seconds (measured here, to the microsecond) and peak resident MB (GNU time's %M) of one whole
    process."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        sink = out.open("w") if out else subprocess.DEVNULL
        try:
            start = time.perf_counter()
            subprocess.run(
                ["/usr/bin/time", "-f", "%M", "-o", report.name, *argv], stdout=sink, check=True, env=CHILD_ENV
            )
            seconds = time.perf_counter() - start
        finally:
            if out:
                sink.close()
        kb = report.read().split()[-1]
    return seconds, float(kb) / 1024


def commands(qrels: Path, run: Path) -> dict[str, list[str]]:
    vx = VX_EVAL
    found = {
        "vx-eval eval": [vx, "eval", str(qrels), str(run), "-q", *(a for m in OURS for a in ("-m", m))],
        "pytrec_eval": [sys.executable, "-c", PYTREC, str(qrels), str(run)],
    }
    trec = shutil.which("trec_eval")
    if trec:
        found["trec_eval (C)"] = [trec, "-c", "-q", *(a for m in TREC_EVAL for a in ("-m", m)), str(qrels), str(run)]
    return found


def per_question(path: Path, names: list[str]) -> dict[tuple[str, str], float]:
    values = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split("\t")[:3]
        name = name.strip()
        if qid != "all" and name in names:
            values[(names.index(name), qid)] = float(value)
    return values


def compare(size: str, repeat: int, folder: Path) -> None:
    questions, depth = (int(x) for x in size.split("x"))
    qrels, run = write_collection(folder, questions, depth)
    lines = sum(1 for _ in run.open())
    runs = commands(qrels, run)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    outputs = {name: folder / f"{name.split()[0]}.out" for name in runs}
    for _ in range(repeat):
        for name, argv in runs.items():
            results[name].append(timed(argv, outputs[name]))
    mine = per_question(outputs["vx-eval eval"], OURS)
    theirs = per_question(outputs["pytrec_eval"], THEIRS)
    worst = max(abs(mine[k] - theirs[k]) for k in theirs)  # both print 4 decimals
    print(f"\n{questions:,} questions x {depth:,} results ({lines:,} run lines), median of {repeat}:")
    medians = {
        name: (statistics.median(t for t, _ in rows), statistics.median(m for _, m in rows))
        for name, rows in results.items()
    }
    for name, (seconds, mb) in medians.items():
        print(f"  {name:<15} {seconds:6.2f} s  {mb:7.0f} MB")
    ours_s, ours_mb = medians["vx-eval eval"]
    for other in [n for n in medians if n != "vx-eval eval"]:
        s, mb = medians[other]
        print(f"  vx-eval / {other}: time {ours_s / s:.2f}x, memory {ours_mb / mb:.2f}x")
    print(f"  largest per-question difference from pytrec_eval (4 decimals printed): {worst:.1e}")


def all_trec(size: str, repeat: int, folder: Path) -> None:
    """`-m all_trec -c -q` through both tools: time, memory and whether the bytes agree."""
    questions, depth = (int(x) for x in size.split("x"))
    qrels, run = write_collection(folder, questions, depth)
    lines = sum(1 for _ in run.open())
    flags = ["-c", "-q", "-m", "all_trec", str(qrels), str(run)]
    runs = {"vx-eval eval": [VX_EVAL, "eval", "--trec-format", *flags]}
    if trec := shutil.which("trec_eval"):
        runs["trec_eval (C)"] = [trec, *flags]
    outputs = {name: folder / f"all-{name.split()[0]}.out" for name in runs}
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, argv in runs.items():
            results[name].append(timed(argv, outputs[name]))
    print(f"\n-m all_trec, {questions:,} questions x {depth:,} results ({lines:,} run lines), median of {repeat}:")
    medians = {n: (statistics.median(t for t, _ in r), statistics.median(m for _, m in r)) for n, r in results.items()}
    for name, (seconds, mb) in medians.items():
        print(f"  {name:<15} {seconds:6.2f} s  {mb:7.0f} MB")
    if "trec_eval (C)" not in medians:
        print("  trec_eval is not on the PATH: vx-eval's side alone")
        return
    (ours_s, ours_mb), (s, mb) = medians["vx-eval eval"], medians["trec_eval (C)"]
    same = outputs["vx-eval eval"].read_bytes() == outputs["trec_eval (C)"].read_bytes()
    print(f"  vx-eval / trec_eval (C): time {ours_s / s:.2f}x, memory {ours_mb / mb:.2f}x; same bytes: {same}")


def startup(repeat: int) -> None:
    vx = VX_EVAL
    rows: dict[str, list[float]] = {"python -c pass": [], "vx-eval --help": []}
    for _ in range(repeat):
        rows["python -c pass"].append(timed([sys.executable, "-c", "pass"])[0])
        rows["vx-eval --help"].append(timed([vx, "--help"])[0])
    base, ours = statistics.median(rows["python -c pass"]), statistics.median(rows["vx-eval --help"])
    print(
        f"start-up, median of {repeat}: python -c pass {base:.2f} s, vx-eval --help {ours:.2f} s ({ours / base:.1f}x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="323x1000,10000x100,10000x1000")
    parser.add_argument("--all-trec", default="1000x1000,10000x1000", help="sizes for -m all_trec ('' for none)")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    startup(args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        for size in filter(None, args.sizes.split(",")):
            compare(size, args.repeat, Path(tmp))
        for size in filter(None, args.all_trec.split(",")):
            all_trec(size, args.repeat, Path(tmp))
    print(json.dumps({"trec_eval on PATH": shutil.which("trec_eval")}))


if __name__ == "__main__":
    main()
