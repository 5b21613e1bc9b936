"""The SciFact run's kept rankings, exported as TREC files and scored by trec_eval's own code: equal to the report.

Runs `configs/scifact.yaml` (every setup, or those `--only` names; warm when `benchmarks/scifact.py` built its
index and embeddings) or reads a saved run (`--run ID --runs DIR`), writes one TREC run file per setup and the
qrels with `vx-eval runs export`, scores them with pytrec_eval (trec_eval's C code) and, when a `trec_eval`
binary is on the PATH, with it too, and prints per setup the largest difference from the report's own
per-question nDCG@10, MAP, recall@100 and MRR, and the time the export and a rescore took.

    python benchmarks/export_check.py [--only 'local.keyword' --only 'local.dense.*'] [--run ID --runs DIR]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytrec_eval

import vx_eval
from vx_eval.core.golden.sources import read_qrels
from vx_eval.python.commands import run

REPO = Path(__file__).resolve().parents[1]
MEASURES = {"ndcg@10": "ndcg_cut_10", "map@100": "map_cut_100", "recall@100": "recall_100", "mrr": "recip_rank"}


def read_run(path: Path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, doc, _, score, _ = line.split()
        out.setdefault(qid, {})[doc] = float(score)
    return out


def binary_scores(qrels: Path, run_file: Path) -> dict[str, dict[str, float]] | None:
    """trec_eval's per-question numbers (``-q -c``), when a trec_eval binary is on the PATH."""
    binary = shutil.which("trec_eval")
    if binary is None:
        return None
    names = sorted(MEASURES.values())
    args = [binary, "-q", "-c", *(f"-m{n.replace('_cut_', '_cut.').replace('recall_', 'recall.')}" for n in names)]
    out = subprocess.run([*args, str(qrels), str(run_file)], capture_output=True, text=True, check=True).stdout
    scores: dict[str, dict[str, float]] = {}
    for line in out.splitlines():
        name, qid, value = line.split()
        scores.setdefault(qid, {})[name] = float(value)
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="setup key patterns (default: every setup)")
    parser.add_argument("--run", help="a saved run id instead of a new run")
    parser.add_argument("--runs", default=str(REPO / "runs"), help="where the runs are kept")
    args = parser.parse_args()
    if args.run:
        report = vx_eval.load_report(args.run, runs=args.runs)
    else:
        start = time.perf_counter()
        report = run(REPO / "configs" / "scifact.yaml", save_to=args.runs, only=tuple(args.only)).report
        print(
            f"ran {len(report.setups)} setups over {len(report.question_ids)} questions in "
            f"{time.perf_counter() - start:.0f} s (run {report.id})"
        )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "vx_eval", "runs", "export", report.id, args.runs, "--trec", str(folder)],
            check=True,
        )
        exported = time.perf_counter() - start
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "vx_eval", "runs", "rescore", report.id, args.runs, "-m", "p@5", "--no-save"],
            check=True,
            capture_output=True,
        )
        rescored = time.perf_counter() - start
        qrels = read_qrels((folder / "qrels.txt").read_text(encoding="utf-8"), "qrels.txt")
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(MEASURES.values()))
        worst_all = 0.0
        print(f"\n{'setup':45} {'questions':>9} " + " ".join(f"{m:>11}" for m in MEASURES) + "  binary")
        for setup in report.setups:
            run_file = folder / f"{setup.key}.trec"
            if not setup.scored or not run_file.exists():
                continue
            theirs = evaluator.evaluate(read_run(run_file))
            binary = binary_scores(folder / "qrels.txt", run_file)
            worst = []
            for measure, name in MEASURES.items():
                ours = setup.per_question.metrics[measure]
                gaps = [
                    abs(ours[i] - theirs[q][name])
                    for i, q in enumerate(report.question_ids)
                    if ours[i] is not None and q in theirs
                ]
                if binary is not None:
                    gaps += [abs(ours[i] - binary[q][name]) for i, q in enumerate(report.question_ids) if q in binary]
                worst.append(max(gaps, default=0.0))
            worst_all = max(worst_all, *worst)
            print(
                f"{setup.key:45} {len(theirs):9} "
                + " ".join(f"{w:11.1e}" for w in worst)
                + ("  yes" if binary is not None else "  (none on PATH)")
            )
    print(f"\nlargest difference from the report, any setup, measure or question: {worst_all:.1e} (bound 1e-9)")
    print(f"export of {len(report.setups)} setups: {exported:.2f} s; rescore with one more measure: {rescored:.2f} s")
    if worst_all > 1e-9:
        sys.exit(1)


if __name__ == "__main__":
    main()
