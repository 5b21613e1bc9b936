"""Do drafted questions and a judge rank setups as a collection's own questions and judgements do?

For each collection with human judgements in ``../shared/datasets`` (SciFact, the TREC DL 2019 MS MARCO
subset, Vaswani), on a slice of its corpus (every document the human questions judge, plus ``--others``
drawn with the seed):

1. the zero-configuration path exactly as ``vx-eval run --docs`` takes it (`autoconfig.prepare` +
   `drafted.run_drafted`): ``--questions`` drafted by the chosen writer, more drafted while the pick is not
   sure (up to ``--most``), every setup's top 10 graded by the cross-encoder judge, DCG@10 with grade 2
   counted relevant, the circular setups (reranked by the judge's own model) left out of the picks, how sure
   the pick is (the paired test; under the judge, from vx-eval's own check); its wall time;
2. the same index and setups (the reranker off: the circular setups are not compared) on the collection's
   human questions with their judgements (``--human``: all by default, so that the reference is as steady as
   the collection allows): nDCG@10;
3. `vx-eval judge check` on ``--check`` of those human questions: the judge's weighted kappa against the
   human grades, and its tau over the setups.

It prints, per collection, Kendall's tau between the two orders of the setups the zero-configuration run
may pick from (by its DCG@10, and by its nDCG@10 on the judge's grades), how steady the human order itself
is (tau between the orders two random halves of the human questions give, the mean of 50 splits: a ceiling
for any tau against it), how many pairs of setups people's questions tell apart (paired t-test, p < 0.05)
and how many of those the zero-configuration run orders the same way, whether its `finds_the_most` is the
human run's best (or tied with it under the human run's paired test), whether all three picks are among the
setups people's judgements cannot tell from their best, whether the run said it is not sure,
the judge's kappa, and the wall times.

    python benchmarks/zero_config_validity.py [--collections scifact,msmarco-dl19-5k,vaswani] [--writer local]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from scipy.stats import kendalltau, ttest_1samp

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.engine import SilentProgress
from vx_eval.core.plugins import load_plugins
from vx_eval.core.usecases.judge_check import check_judge
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.zeroconfig.autoconfig import choose_writer, from_docs, prepare
from vx_eval.zeroconfig.drafted import run_drafted

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


def _smart(text: str) -> list[tuple[str, dict[str, str]]]:
    """A SMART file's records: each ``.I id`` with its fields (``.T``, ``.A``, ``.B``, ``.W``) as text."""
    records: list[tuple[str, dict[str, str]]] = []
    field = None
    for line in text.replace("\r", "").splitlines():
        if line.startswith(".I "):
            records.append((line[3:].strip(), {}))
            field = None
        elif len(line) == 2 and line.startswith("."):
            field = line[1]
            records[-1][1][field] = ""
        elif records and field:
            records[-1][1][field] += line + " "
    return records


def cranfield(folder: Path) -> Collection:
    """Cranfield's SMART files: queries renumbered 1-225 in file order (as cranqrel numbers them); Cleverdon's
    codes made gains, the most relevant (1) highest: 1 -> 4, 2 -> 3, 3 -> 2, 4 -> 1, -1 (none) -> 0."""
    docs = {
        i: (" ".join(f.get("T", "").split()), " ".join(f.get("W", "").split()))
        for i, f in _smart((folder / "cran.all.1400").read_text(encoding="utf-8", errors="replace"))
    }
    docs = {i: (title, text) for i, (title, text) in docs.items() if title or text}  # 471 and 995 are empty
    queries = {
        str(n): " ".join(f.get("W", "").split()).rstrip(" .").capitalize()
        for n, (_, f) in enumerate(_smart((folder / "cran.qry").read_text(encoding="utf-8", errors="replace")), 1)
    }
    qrels: dict[str, dict[str, int]] = {}
    for line in (folder / "cranqrel").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 3:
            code = int(parts[2])
            qrels.setdefault(parts[0], {})[parts[1]] = 5 - code if 1 <= code <= 4 else 0
    return Collection(docs, queries, qrels)


READERS = {"scifact": beir, "msmarco-dl19-5k": beir, "vaswani": vaswani, "cranfield": cranfield, "nq-utd": beir}


def slice_of(collection: Collection, humans: int, others: int, seed: int) -> tuple[list[str], list[str]]:
    """The human questions (those judging some document relevant; `humans` drawn with the seed, 0: all) and
    the documents kept: every one they judge, and `others` more drawn with the seed."""
    rng = random.Random(seed)
    asked = sorted(q for q, judged in collection.qrels.items() if q in collection.queries and max(judged.values()) > 0)
    asked = sorted(rng.sample(asked, min(humans or len(asked), len(asked))))
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
    checked_rows = sorted(
        random.Random(args.seed).sample(human_rows, min(args.check, len(human_rows))), key=lambda r: r["id"]
    )
    write_jsonl(work / "checked.jsonl", checked_rows)
    here = Path.cwd()
    os.chdir(work)
    rounds: list[str] = []
    try:
        started = time.perf_counter()
        writer = choose_writer(args.writer)
        made = prepare(from_docs(folder / "docs.jsonl"), questions=args.questions, writer=writer)
        drafted = time.perf_counter() - started
        zero = run_drafted(
            made,
            writer,
            lambda: load_config(made.path, plugins),
            plugins,
            RunOptions(save=False),
            most=args.most or 2 * args.questions,
            say=rounds.append,
        ).report
        zero_wall = time.perf_counter() - started

        data = yaml.safe_load(made.path.read_text(encoding="utf-8"))
        data["golden"] = os.path.relpath(work / "human.jsonl", made.path.parent)
        # people's judgements decide the measures; the judge grades every result too (as `judge check` asks),
        # for the runs with some human grades added
        data["evaluation"] = {"metrics": ["ndcg@10", "found@10", "mrr"], "primary": "ndcg@10", "depth": 20, "seed": 0,
                              "judge": "cross-encoder", "judge_depth": 10}  # fmt: skip
        data["targets"][0]["options"]["reranker"] = None  # the circular setups are not compared
        human_config = made.path.with_name("human.yaml")
        human_config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        began = time.perf_counter()
        human = run_experiment(
            load_config(human_config, plugins), plugins, RunOptions(save=False, judge_everything=True)
        ).report
        human_wall = time.perf_counter() - began
        del data["evaluation"]["judge"], data["evaluation"]["judge_depth"]

        data["golden"] = os.path.relpath(work / "checked.jsonl", made.path.parent)
        check_config = made.path.with_name("checked.yaml")
        check_config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
        began = time.perf_counter()
        checked = check_judge(load_config(check_config, plugins), plugins, "cross-encoder", 10, SilentProgress())
        check_wall = time.perf_counter() - began
    finally:
        os.chdir(here)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)

    circular = set(zero.judge.circular) if zero.judge else set()
    keys = [s.key for s in zero.setups if s.key not in circular and s.key in human.by_key and s.scored]
    by_judge = [zero.setup(k).summary["dcg@10"] or 0.0 for k in keys]
    by_judge_ndcg = [zero.setup(k).summary["ndcg@10"] or 0.0 for k in keys]
    by_people = [human.setup(k).summary["ndcg@10"] or 0.0 for k in keys]
    tau = float(kendalltau(by_judge, by_people).statistic)
    per_question = {k: np.asarray(human.setup(k).per_question.metrics["ndcg@10"], dtype=float) for k in keys}
    separated, agreeing = people_separate(keys, per_question, dict(zip(keys, by_judge, strict=True)))
    pick, best = zero.picks.finds_the_most, human.picks.finds_the_most
    noise = zero.picking.judge_noise if zero.picking else None
    agreed = checked.agreement
    mixed = with_human_grades(zero, human, keys, args)
    return {
        "collection": name,
        "documents": len(kept),
        "human_questions": len(asked),
        "drafted": zero.golden.drafts,
        "rounds": rounds,
        "setups": len(keys),
        "circular_left_out": len(circular),
        "tau": tau,
        "tau_ndcg": float(kendalltau(by_judge_ndcg, by_people).statistic),
        "human_split_half_tau": split_half(keys, per_question, args.seed),
        "pairs_people_separate": separated,
        "of_those_ordered_the_same": agreeing,
        "pick": pick,
        "human_best": best,
        "same_pick": pick == best,
        "pick_tied_with_human_best": bool(pick and human.setup(pick).tied_with_best),
        "balance_pick": zero.picks.best_for_balance,
        "time_pick": zero.picks.best_for_time,
        "picks_inside_people_group": inside_people_group(zero, human),
        "sure": zero.picking.sure if zero.picking else None,
        "says_not_sure": bool(zero.picking and (zero.picking.sure or (noise is not None and not noise.sure))),
        "under_the_judge": zero.picking.judge_sure if zero.picking else None,
        "judge_kappa_quadratic": agreed.kappa_quadratic,
        "judge_tau_on_human_questions": checked.order.tau if checked.order else None,
        "drafting_s": round(drafted, 1),
        "zero_config_wall_s": round(zero_wall, 1),
        "human_run_s": round(human_wall, 1),
        "judge_check_s": round(check_wall, 1),
        "order_by_judge": [k for _, k in sorted(zip(by_judge, keys, strict=True), reverse=True)],
        "order_by_people": [k for _, k in sorted(zip(by_people, keys, strict=True), reverse=True)],
        "with_human_grades": mixed,
    }


def with_human_grades(zero, human, keys: list[str], args: argparse.Namespace) -> list[dict[str, float]]:
    """The zero-configuration run with people's grades added, as a run whose golden file holds `n` of the
    collection's questions with their judgements beside the drafts does it (`core.judging.corrected`): 200
    times, `n` human questions drawn (0, 30, 100), each setup's nDCG@10 estimated from the judge's on the
    drafts corrected by the judge's error on those `n` (PPI++; the order under one shared weight), against
    people's nDCG@10 on every human question. Coverage of the 95% intervals, tau, and whether the best is one
    people's judgements cannot tell from theirs."""
    from ppi_coverage import ndcg10, resampled  # beside this file; it imports this module's readers

    judged: dict[str, dict[str, int]] = {}
    for qid, unit, grade, _ in human.judge.verdicts or []:
        judged.setdefault(qid, {})[unit] = grade
    people = np.zeros((len(keys), len(human.question_ids)))
    judge = np.zeros_like(people)
    for i, key in enumerate(keys):
        setup = human.setup(key)
        people[i] = np.nan_to_num(np.asarray(setup.per_question.metrics["ndcg@10"], dtype=float))
        for j, qid in enumerate(human.question_ids):
            judge[i, j] = ndcg10([u for u, _ in setup.per_question.results[j] if u], judged.get(qid, {}))
    drafted = np.stack(
        [np.nan_to_num(np.asarray(zero.setup(k).per_question.metrics["ndcg@10"], dtype=float)) for k in keys]
    )
    out = []
    for n in (int(x) for x in args.labelled.split(",")):
        if n > people.shape[1] - 5:
            continue
        out.append(resampled(people, judge, n, args.seed, drafted=drafted))
    return out


def inside_people_group(zero, human) -> bool | None:
    """Whether every pick of the zero-configuration run is one of the setups people's judgements cannot tell
    from their best (the human run's best, or tied with it under its paired test); None where a pick is a
    setup the human run does not compare (a circular one)."""
    chosen = [k for k in (zero.picks.finds_the_most, zero.picks.best_for_balance, zero.picks.best_for_time) if k]
    if any(k not in human.by_key for k in chosen):
        return None
    group = {s.key for s in human.setups if s.tied_with_best} | {human.picks.finds_the_most}
    return all(k in group for k in chosen)


def split_half(keys: list[str], per_question: dict[str, np.ndarray], seed: int, splits: int = 50) -> float:
    """How steady the human order is: the mean tau between the setups' orders on two random halves of the
    human questions."""
    rng = np.random.default_rng(seed)
    n = len(per_question[keys[0]])
    taus = []
    for _ in range(splits):
        half = rng.permutation(n) < n // 2
        a = [float(np.nanmean(per_question[k][half])) for k in keys]
        b = [float(np.nanmean(per_question[k][~half])) for k in keys]
        taus.append(float(kendalltau(a, b).statistic))
    return float(np.nanmean(taus))


def people_separate(keys: list[str], per_question: dict[str, np.ndarray], judged: dict[str, float]) -> tuple[int, int]:
    """The pairs of setups people's questions tell apart (paired t-test, p < 0.05), and how many of those the
    zero-configuration run orders the same way."""
    separated = agreeing = 0
    for a, b in itertools.combinations(keys, 2):
        diff = per_question[a] - per_question[b]
        diff = diff[~np.isnan(diff)]
        if len(diff) < 2 or not diff.any() or ttest_1samp(diff, 0.0).pvalue >= 0.05:
            continue
        separated += 1
        agreeing += int((diff.mean() > 0) == (judged[a] > judged[b]))
    return separated, agreeing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--collections", default="scifact,msmarco-dl19-5k,vaswani,cranfield")
    parser.add_argument("--writer", default=None, help="as --writer of vx-eval run (default: local if installed)")
    parser.add_argument("--questions", type=int, default=30, help="questions drafted first")
    parser.add_argument("--most", type=int, default=0, help="questions drafted at most (default: twice --questions)")
    parser.add_argument("--human", type=int, default=0, help="human questions sampled (0: all)")
    parser.add_argument("--check", type=int, default=50, help="human questions the judge check grades")
    parser.add_argument("--others", type=int, default=800, help="documents no sampled question judges, kept too")
    parser.add_argument("--labelled", default="0,30,100", help="human questions added to the drafts' judged pool")
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
    print(
        "\ncollection       drafts setups  tau   tau(ndcg) human halves  separated  same pick  tied   "
        "says not sure  picks in people's group  judge kappa  judge tau  zero-config wall"
    )
    for r in results:
        kappa = r["judge_kappa_quadratic"]
        jtau = r["judge_tau_on_human_questions"]
        print(
            f"{r['collection']:<16} {r['drafted']:>6} {r['setups']:>6}  {r['tau']:+.2f}  {r['tau_ndcg']:+.2f}     "
            f"{r['human_split_half_tau']:+.2f}        {r['of_those_ordered_the_same']}/{r['pairs_people_separate']:<7} "
            f"{r['same_pick']!s:<9}  {r['pick_tied_with_human_best']!s:<5}  {r['says_not_sure']!s:<13} "
            f"{r['picks_inside_people_group']!s:<21} "
            f"{kappa if kappa is None else f'{kappa:.2f}':>11}  {jtau if jtau is None else f'{jtau:+.2f}':>9}  "
            f"{r['zero_config_wall_s'] / 60:.1f} min"
        )
    print(
        "\nwith people's grades added to the drafts' judged pool (200 draws; tau and picks as a run orders: guarded)"
        "\ncollection        n  coverage means  coverage leads  tau    human halves  best in people's group"
    )
    for r in results:
        for m in r["with_human_grades"]:
            print(
                f"{r['collection']:<16} {m['n']:>3}  {m['coverage']:>14.1%}  {m['coverage_diff']:>14.1%}  "
                f"{m['tau_guarded']:+.2f}  {r['human_split_half_tau']:+.2f}         {m['pick_near_best_guarded']:.0%}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
