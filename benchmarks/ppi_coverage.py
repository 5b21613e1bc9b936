"""Do a few people's grades correct a judge? Prediction-powered estimates on real collections.

For each collection with human judgements in ``../shared/datasets`` (SciFact, the TREC DL 2019 MS MARCO subset,
Vaswani, Cranfield), on a slice of its corpus (every document its questions judge, plus ``--others`` drawn with
the seed):

1. every setup the embedded engine offers (keyword BM25, MiniLM and BGE dense, hybrids; no reranker: the
   judge's own model would be circular) searches the collection's own questions, and the cross-encoder judge
   grades every setup's first 10 results (`judge_everything`, as `vx-eval judge check` asks);
2. each question's nDCG@10 is computed twice per setup: with people's judgements (the qrels) and with the
   judge's grades alone. People's mean over every question is the truth;
3. 200 times, ``n`` questions (0, 30 and 100, where the collection has more) are drawn as if people had graded
   them and the judge the rest, and each setup's mean and the leader's paired difference to every other setup
   are estimated: with 0, the judge's own mean (and its bootstrap interval); else the prediction-powered
   estimate (PPI++, `core.measures.ppi`).

It prints, per collection and n: how often the 95% intervals cover the truth (each setup's mean, and the
paired differences), their mean width beside people's own n questions alone (what the judge buys), Kendall's
tau between the estimated and the true order of the setups (by the corrected means; under one shared weight;
and guarded, as a run orders them: the judge's order unless people's grades overturn it), and how often the
estimated best is the true best or one the truth cannot tell from it (paired t-test on every question, p >= 0.05).

    python benchmarks/ppi_coverage.py [--collections scifact,msmarco-dl19-5k,vaswani,cranfield,nq-utd] [--others 2000]

``--simulated`` measures the interval alone, in seconds and without a model: 2,000 draws of 30 person-graded
questions from a world whose true mean is known (per-question nDCG-like values, a quarter 0 and a fifth 1), for
four judges (biased, noisy, weak, flipping grades) and 70, 300 and 3,000 judge-only questions; it prints how
often `ppi_mean`'s 95% interval covers the truth beside the papers' own interval (a normal quantile, the weight
tuned on the same questions) measured on the same draws, and the ratio of their widths.

    python benchmarks/ppi_coverage.py --simulated
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import kendalltau, ttest_rel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from zero_config_validity import DATASETS, READERS, slice_of, split_half, write_jsonl

from vx_eval.core.config.experiment import load_config
from vx_eval.core.measures.ppi import guarded_order, ppi_mean, ppi_order
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

DRAWS = 200


def ndcg10(ranked: list[str], gains: dict[str, int]) -> float:
    dcg = sum(gains.get(u, 0) / math.log2(i + 2) for i, u in enumerate(ranked[:10]))
    ideal = sorted((g for g in gains.values() if g > 0), reverse=True)[:10]
    best = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / best if best > 0 else 0.0


def measured(name: str, args: argparse.Namespace, plugins) -> tuple[list[str], np.ndarray, np.ndarray, float]:
    """The setups, people's and the judge's nDCG@10 (setups x questions), and the wall time of the run."""
    collection = READERS[name](DATASETS / name)
    asked, kept = slice_of(collection, 0, args.others, args.seed)
    work = Path(tempfile.mkdtemp(prefix=f"vx-ppi-{name}-"))
    keep = set(kept)
    write_jsonl(work / "docs.jsonl", [{"id": d, "title": collection.docs[d][0], "text": collection.docs[d][1]}
                                      for d in kept])  # fmt: skip
    rows = []
    for q in asked:
        grades = {d: g for d, g in collection.qrels[q].items() if d in keep}
        rows.append({"id": q, "question": collection.queries[q], "expected": [d for d, g in grades.items() if g > 0],
                     "grades": {d: max(g, 0) for d, g in grades.items()}})  # fmt: skip
    write_jsonl(work / "golden.jsonl", rows)
    config = {
        "name": f"ppi-{name}",
        "golden": "golden.jsonl",
        "corpus": "docs.jsonl",
        "targets": [{"name": name, "engine": "sqlite", "options": {
            "path": "index.db", "mode": "hybrid", "dense_models": ["minilm", "bge-small"], "reranker": None}}],
        "evaluation": {"metrics": ["ndcg@10"], "primary": "ndcg@10", "depth": 10, "judge": "cross-encoder",
                       "judge_depth": 10, "seed": 0},
        "models": {"embeddings": str(Path(args.cache).resolve() / "embeddings.db"),
                   "scores": str(Path(args.cache).resolve() / "scores.db")},
    }  # fmt: skip
    (work / "ppi.yaml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    started = time.perf_counter()
    try:
        report = run_experiment(load_config(work / "ppi.yaml", plugins), plugins,
                                RunOptions(save=False, judge_everything=True)).report  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = time.perf_counter() - started
    judged: dict[str, dict[str, int]] = {}
    for qid, unit, grade, _ in report.judge.verdicts or []:
        judged.setdefault(qid, {})[unit] = grade
    people = {r["id"]: r["grades"] for r in rows}
    setups = [s for s in report.setups if s.scored]
    human = np.zeros((len(setups), len(report.question_ids)))
    judge = np.zeros_like(human)
    for i, setup in enumerate(setups):
        for j, qid in enumerate(report.question_ids):
            ranked = [u for u, _ in setup.per_question.results[j] if u]
            human[i, j] = ndcg10(ranked, people[qid])
            judge[i, j] = ndcg10(ranked, judged.get(qid, {}))
    return [s.key for s in setups], human, judge, wall


def _bootstrap(values: np.ndarray, rng: np.random.Generator, draws: int = 500) -> tuple[float, float]:
    means = values[rng.integers(0, len(values), size=(draws, len(values)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def _near_best(human: np.ndarray) -> set[int]:
    """The setups the truth cannot tell from its best (paired t-test over every question, p >= 0.05)."""
    best = int(np.argmax(human.mean(axis=1)))
    near = {best}
    for i in range(len(human)):
        same = np.allclose(human[i], human[best])
        if i != best and (same or ttest_rel(human[best], human[i]).pvalue >= 0.05):
            near.add(i)
    return near


def resampled(
    human: np.ndarray, judge: np.ndarray, n: int, seed: int, drafted: np.ndarray | None = None
) -> dict[str, float]:
    """200 draws of `n` questions people grade (setups x questions: `human` people's measure, `judge` the
    judge's). The judge-only questions are the others, or, given `drafted` (setups x drafted questions, the
    judge's measure on them), the drafted ones: the zero-configuration run with people's grades added."""
    rng = np.random.default_rng(seed)
    setups, questions = human.shape
    truth = human.mean(axis=1)
    leader = int(np.argmax(truth))
    near = _near_best(human)
    covered = covered_diff = intervals = diffs = 0
    widths: list[float] = []
    alone_widths: list[float] = []
    taus: list[float] = []
    taus_shared: list[float] = []
    taus_guarded: list[float] = []
    picks_near = picks_near_shared = picks_near_guarded = 0
    for _ in range(DRAWS):
        labelled = rng.choice(questions, size=n, replace=False) if n else np.array([], dtype=int)
        pool = drafted if drafted is not None else judge[:, np.setdiff1d(np.arange(questions), labelled)]
        estimates = []
        for s in range(setups):
            if n:
                e = ppi_mean(human[s, labelled], judge[s, labelled], pool[s])
                low, high, mean = e.low, e.high, e.mean
                a = ppi_mean(human[s, labelled], judge[s, labelled], pool[s][:0])
                alone_widths.append(a.high - a.low)
            else:
                mean = float(pool[s].mean())
                low, high = _bootstrap(pool[s], rng)
            estimates.append(mean)
            covered += low <= truth[s] <= high
            intervals += 1
            widths.append(high - low)
        for s in range(setups):
            if s == leader:
                continue
            d_h, d_j, d_pool = human[leader] - human[s], judge[leader] - judge[s], pool[leader] - pool[s]
            if n:
                e = ppi_mean(d_h[labelled], d_j[labelled], d_pool)
                low, high = e.low, e.high
            else:
                low, high = _bootstrap(d_pool, rng)
            covered_diff += low <= truth[leader] - truth[s] <= high
            diffs += 1
        taus.append(float(kendalltau(estimates, truth).statistic))
        picks_near += int(np.argmax(estimates)) in near
        order = ppi_order(human[:, labelled], judge[:, labelled], pool)[0] if n else pool.mean(axis=1)
        taus_shared.append(float(kendalltau(order, truth).statistic))
        picks_near_shared += int(np.argmax(order)) in near
        # what a run does: the judge's order unless people's grades overturn it
        order = guarded_order(human[:, labelled], judge[:, labelled], pool) if n else pool.mean(axis=1)
        taus_guarded.append(float(kendalltau(order, truth).statistic))
        picks_near_guarded += int(np.argmax(order)) in near
    return {
        "n": n,
        "coverage": covered / intervals,
        "coverage_diff": covered_diff / max(diffs, 1),
        "width": float(np.mean(widths)),
        "width_people_alone": float(np.mean(alone_widths)) if alone_widths else float("nan"),
        "tau": float(np.nanmean(taus)),
        "pick_near_best": picks_near / DRAWS,
        "tau_shared": float(np.nanmean(taus_shared)),
        "pick_near_best_shared": picks_near_shared / DRAWS,
        "tau_guarded": float(np.nanmean(taus_guarded)),
        "pick_near_best_guarded": picks_near_guarded / DRAWS,
    }


def _papers_interval(y: np.ndarray, f_n: np.ndarray, f_big: np.ndarray) -> tuple[float, float]:
    """The reference: PPI++'s 95% interval as its paper gives it (plug-in weight, normal quantile)."""
    n, big = len(y), len(f_big)
    pooled_var = float(np.var(np.concatenate([f_n, f_big]), ddof=1))
    covariance = float(np.cov(y, f_n, ddof=1)[0, 1])
    lam = 0.0 if pooled_var == 0 else min(1.0, max(0.0, covariance / ((1 + n / big) * pooled_var)))
    mean = float((y - lam * f_n).mean() + lam * f_big.mean())
    half = 1.959964 * math.sqrt(float(np.var(y - lam * f_n, ddof=1)) / n + lam**2 * float(np.var(f_big, ddof=1)) / big)
    return mean - half, mean + half


JUDGES = {
    "biased": lambda y, rng: np.clip(y + 0.15 + rng.normal(0, 0.1, len(y)), 0, 1),
    "noisy": lambda y, rng: np.clip(0.6 * y + 0.2 + rng.normal(0, 0.25, len(y)), 0, 1),
    "weak": lambda y, rng: np.clip(0.2 * y + 0.4 + rng.normal(0, 0.3, len(y)), 0, 1),
    "flipping": lambda y, rng: np.where(rng.random(len(y)) < 0.3, 1 - y, y),
}


def simulated(seed: int, labelled: int = 30, draws: int = 2000) -> list[dict[str, float | str | int]]:
    """Coverage and width of `ppi_mean` beside the papers' interval, on draws from known worlds."""
    rng = np.random.default_rng(seed)

    def people(size: int) -> np.ndarray:
        z = rng.random(size)
        return np.where(z < 0.25, 0.0, np.where(z < 0.45, 1.0, rng.beta(2, 2, size)))

    truth = 0.2 + 0.55 * 0.5  # a fifth at 1, a quarter at 0, the rest beta(2, 2) around 0.5
    rows = []
    for big in (70, 300, 3000):
        for name, judged in JUDGES.items():
            ours = papers = 0
            width_ours: list[float] = []
            width_papers: list[float] = []
            for _ in range(draws):
                y = people(labelled + big)
                f = judged(y, rng)
                e = ppi_mean(y[:labelled], f[:labelled], f[labelled:])
                low, high = _papers_interval(y[:labelled], f[:labelled], f[labelled:])
                ours += e.low <= truth <= e.high
                papers += low <= truth <= high
                width_ours.append(e.high - e.low)
                width_papers.append(high - low)
            rows.append({"judge": name, "judge_only": big, "labelled": labelled, "coverage": ours / draws,
                         "coverage_papers": papers / draws,
                         "width_ratio": float(np.mean(width_ours) / np.mean(width_papers))})  # fmt: skip
            row = rows[-1]
            print(f"{name:>8} judge, {labelled} person-graded + {big:>4} judge-only: coverage {row['coverage']:.1%} "
                  f"(the papers' interval {row['coverage_papers']:.1%}); width x{row['width_ratio']:.2f}")  # fmt: skip
    print(f"lowest coverage: {min(r['coverage'] for r in rows):.1%} (the papers': "
          f"{min(r['coverage_papers'] for r in rows):.1%})")  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default="scifact,msmarco-dl19-5k,vaswani,cranfield,nq-utd")
    parser.add_argument("--simulated", action="store_true", help="the interval alone, on simulated judges")
    parser.add_argument("--others", type=int, default=2000, help="documents no question judges, kept too")
    parser.add_argument("--labelled", default="0,30,100", help="questions people grade, drawn each time")
    parser.add_argument("--cache", default=".vx", help="where embeddings and cross-encoder scores are kept")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--matrices", type=Path, help="keep each collection's measures here, and reuse them")
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.simulated:
        rows = simulated(args.seed)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
        return
    plugins = load_plugins()
    results = []
    for name in args.collections.split(","):
        saved = args.matrices / f"{name}-{args.others}-{args.seed}.npz" if args.matrices else None
        if saved and saved.exists():
            kept = np.load(saved)
            keys, human, judge, wall = list(kept["keys"]), kept["human"], kept["judge"], float(kept["wall"])
        else:
            keys, human, judge, wall = measured(name, args, plugins)
            if saved:
                saved.parent.mkdir(parents=True, exist_ok=True)
                np.savez(saved, keys=np.asarray(keys), human=human, judge=judge, wall=wall)
        halves = split_half(keys, dict(zip(keys, human, strict=True)), args.seed)
        bias = float(np.mean(judge.mean(axis=1) - human.mean(axis=1)))
        print(f"{name}: {human.shape[1]} questions, {len(keys)} setups, run and judge {wall:.0f} s; the judge's "
              f"mean nDCG@10 minus people's: {bias:+.3f}; people's own split-half tau {halves:+.2f}")  # fmt: skip
        for n in (int(x) for x in args.labelled.split(",")):
            if n and n > human.shape[1] - 5:
                print(f"  n={n}: the collection has {human.shape[1]} questions; left out")
                continue
            row = resampled(human, judge, n, args.seed) | {
                "collection": name,
                "questions": human.shape[1],
                "human_split_half_tau": halves,
            }
            results.append(row)
            alone = "" if not n else f" (people's {n} alone: {row['width_people_alone']:.3f})"
            print(f"  n={n:>3}: coverage {row['coverage']:.1%} of setups' means, {row['coverage_diff']:.1%} of "
                  f"the leader's differences; width {row['width']:.3f}{alone}; tau {row['tau']:+.2f} "
                  f"(one shared weight: {row['tau_shared']:+.2f}; guarded, as a run orders: "
                  f"{row['tau_guarded']:+.2f}); best pick near the true best {row['pick_near_best']:.0%} "
                  f"({row['pick_near_best_shared']:.0%}; guarded {row['pick_near_best_guarded']:.0%})")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    random.seed(0)
    main()
