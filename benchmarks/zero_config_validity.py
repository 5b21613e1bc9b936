"""Do drafted questions and a judge rank setups as a collection's own questions and judgements do?

For each collection with human judgements in ``../shared/datasets`` (SciFact, the TREC DL 2019 MS MARCO
subset, Vaswani), on a slice of its corpus (every document the sampled human questions judge, plus
``--others`` drawn with the seed):

1. the zero-configuration path exactly as ``vx-eval run --docs`` takes it (`autoconfig.prepare` +
   `run_experiment`): questions drafted by the chosen writer, every setup's top 10 graded by the
   cross-encoder judge, DCG@10 with grade 2 counted relevant, the circular setups (reranked by the judge's
   own model) left out of the picks; its wall time;
2. the same index and setups (the reranker off: the circular setups are not compared) on ``--human``
   sampled human questions with their judgements: nDCG@10;
3. `vx-eval judge check` on those human questions: the judge's weighted kappa against the human grades.

It prints, per collection, Kendall's tau between the two orders of the setups the zero-configuration run
may pick from, whether its `finds_the_most` is the human run's best (or tied with it under the human run's
paired test), the judge's kappa, and the wall times.

    python benchmarks/zero_config_validity.py [--collections scifact,msmarco-dl19-5k,vaswani] [--writer local]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml
from scipy.stats import kendalltau

from vx_eval.autoconfig import choose_writer, from_docs, prepare
from vx_eval.core.config.experiment import load_config
from vx_eval.core.judging.check import check_judge
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run.engine import SilentProgress
from vx_eval.core.run.pipeline import RunOptions, run_experiment

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@dataclass
class Collection:
    docs: dict[str, tuple[str, str]]
    """id -> (title, text)"""
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def beir(folder: Path) -> Collection:
    docs = {}
    with (folder / "corpus.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            docs[str(row["_id"])] = (row.get("title") or "", row["text"])
    queries = {}
    with (folder / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            queries[str(row["_id"])] = row["text"]
    return Collection(docs, queries, qrels_of((folder / "qrels" / "test.tsv").read_text(encoding="utf-8")))


def qrels_of(text: str) -> dict[str, dict[str, int]]:
    """BEIR's (query, doc, grade) or TREC's (query, 0, doc, grade) lines; a header line is skipped."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[-1].lstrip("-").isdigit():
            continue
        query, doc, grade = parts[0], parts[-2], int(parts[-1])
        out.setdefault(query, {})[doc] = grade
    return out


def vaswani(folder: Path) -> Collection:
    text = (folder / "doc-text.trec").read_text(encoding="utf-8", errors="replace")
    docs = {
        m.group(1).strip(): ("", " ".join(m.group(2).split()))
        for m in re.finditer(r"<DOCNO>(.*?)</DOCNO>(.*?)</DOC>", text, re.S)
    }
    topics = (folder / "query-text.trec").read_text(encoding="utf-8", errors="replace")
    queries = {
        m.group(1).strip(): " ".join(m.group(2).split()).capitalize()
        for m in re.finditer(r"<num>(.*?)</num>\s*<title>(.*?)</title>", topics, re.S | re.I)
    }
    return Collection(docs, queries, qrels_of((folder / "qrels").read_text(encoding="utf-8")))


READERS = {"scifact": beir, "msmarco-dl19-5k": beir, "vaswani": vaswani}


def slice_of(collection: Collection, humans: int, others: int, seed: int) -> tuple[list[str], list[str]]:
    """The sampled human questions (those judging some document relevant) and the documents kept: every one
    they judge, and `others` more drawn with the seed."""
    rng = random.Random(seed)
    asked = sorted(q for q, judged in collection.qrels.items() if q in collection.queries and max(judged.values()) > 0)
    asked = sorted(rng.sample(asked, min(humans, len(asked))))
    judged = {d for q in asked for d in collection.qrels[q] if d in collection.docs}
    rest = sorted(set(collection.docs) - judged)
    kept = sorted(judged | set(rng.sample(rest, min(others, len(rest)))))
    return asked, kept


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def one(name: str, args: argparse.Namespace, plugins) -> dict[str, object]:
    collection = READERS[name](DATASETS / name)
    asked, kept = slice_of(collection, args.human, args.others, args.seed)
    work = Path(tempfile.mkdtemp(prefix=f"vx-validity-{name}-"))
    folder = work / name
    folder.mkdir()
    write_jsonl(
        folder / "docs.jsonl",
        [{"id": d, "title": collection.docs[d][0], "text": collection.docs[d][1]} for d in kept],
    )
    human_rows = []
    for q in asked:
        grades = {d: g for d, g in collection.qrels[q].items() if d in set(kept)}
        human_rows.append(
            {"id": f"h{q}", "question": collection.queries[q], "expected": [d for d, g in grades.items() if g > 0]}
            | {"grades": {d: max(g, 0) for d, g in grades.items()}}
        )
    write_jsonl(work / "human.jsonl", human_rows)
    here = Path.cwd()
    os.chdir(work)
    try:
        started = time.perf_counter()
        made = prepare(from_docs(folder / "docs.jsonl"), questions=args.questions, writer=choose_writer(args.writer))
        drafted = time.perf_counter() - started
        zero = run_experiment(load_config(made.path, plugins), plugins, RunOptions(save=False)).report
        zero_wall = time.perf_counter() - started

        data = yaml.safe_load(made.path.read_text(encoding="utf-8"))
        data["golden"] = os.path.relpath(work / "human.jsonl", made.path.parent)
        data["evaluation"] = {"metrics": ["ndcg@10", "found@10", "mrr"], "primary": "ndcg@10", "depth": 20, "seed": 0}
        data["targets"][0]["options"]["reranker"] = None  # the circular setups are not compared
        human_config = made.path.with_name("human.yaml")
        human_config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        began = time.perf_counter()
        human = run_experiment(load_config(human_config, plugins), plugins, RunOptions(save=False)).report
        human_wall = time.perf_counter() - began

        began = time.perf_counter()
        checked = check_judge(load_config(human_config, plugins), plugins, "cross-encoder", 10, SilentProgress())
        check_wall = time.perf_counter() - began
    finally:
        os.chdir(here)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    circular = set(zero.judge.circular) if zero.judge else set()
    keys = [s.key for s in zero.setups if s.key not in circular and s.key in human.by_key and s.scored]
    by_judge = [zero.setup(k).summary["dcg@10"] or 0.0 for k in keys]
    by_people = [human.setup(k).summary["ndcg@10"] or 0.0 for k in keys]
    tau = float(kendalltau(by_judge, by_people).statistic)
    pick, best = zero.picks.finds_the_most, human.picks.finds_the_most
    agreed = checked.agreement
    return {
        "collection": name,
        "documents": len(kept),
        "human_questions": len(asked),
        "drafted": zero.golden.drafts,
        "setups": len(keys),
        "circular_left_out": len(circular),
        "tau": tau,
        "pick": pick,
        "human_best": best,
        "same_pick": pick == best,
        "pick_tied_with_human_best": bool(pick and human.setup(pick).tied_with_best),
        "sure": zero.picking.sure if zero.picking else None,
        "judge_kappa_quadratic": agreed.kappa_quadratic,
        "judge_tau_on_human_questions": checked.order.tau if checked.order else None,
        "drafting_s": round(drafted, 1),
        "zero_config_wall_s": round(zero_wall, 1),
        "human_run_s": round(human_wall, 1),
        "judge_check_s": round(check_wall, 1),
        "order_by_judge": [k for _, k in sorted(zip(by_judge, keys, strict=True), reverse=True)],
        "order_by_people": [k for _, k in sorted(zip(by_people, keys, strict=True), reverse=True)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default="scifact,msmarco-dl19-5k,vaswani")
    parser.add_argument("--writer", default=None, help="as --writer of vx-eval run (default: local if installed)")
    parser.add_argument("--questions", type=int, default=30, help="questions drafted")
    parser.add_argument("--human", type=int, default=50, help="human questions sampled")
    parser.add_argument("--others", type=int, default=800, help="documents no sampled question judges, kept too")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the working folders")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    plugins = load_plugins()
    results = []
    for name in args.collections.split(","):
        print(f"--- {name}", flush=True)
        result = one(name.strip(), args, plugins)
        results.append(result)
        print(json.dumps(result, indent=1), flush=True)
    print("\ncollection         setups  tau    same pick  tied  judge kappa  judge tau  zero-config wall")
    for r in results:
        kappa = r["judge_kappa_quadratic"]
        jtau = r["judge_tau_on_human_questions"]
        print(
            f"{r['collection']:<18} {r['setups']:>6}  {r['tau']:+.2f}  {r['same_pick']!s:<9}  "
            f"{r['pick_tied_with_human_best']!s:<5} {kappa if kappa is None else f'{kappa:.2f}':>11}  "
            f"{jtau if jtau is None else f'{jtau:+.2f}':>9}  {r['zero_config_wall_s'] / 60:.1f} min"
        )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
