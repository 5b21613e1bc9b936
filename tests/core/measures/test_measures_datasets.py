"""Every measure equals pytrec_eval's, question by question, on the shared collections' real judgements.

Runs are drawn (seeded) from each collection's judged and unjudged documents with ties in score, and
scored twice: through the run's path (`judge` + `Batch.of`) and through `vx-eval eval`'s (`trec.run_batch`).
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import pytrec_eval

from vx_eval.core.contracts.golden import Question
from vx_eval.core.golden.sources import read_qrels
from vx_eval.core.golden.units import judge
from vx_eval.core.measures.metrics import Batch, parse
from vx_eval.core.trec.files import Judgements, Run, run_batch

from ...conftest import shared

PAIRS = {
    "ndcg": "ndcg",
    "ndcg@10": "ndcg_cut_10",
    "ndcg@5": "ndcg_cut_5",
    "p@5": "P_5",
    "p@10": "P_10",
    "recall@10": "recall_10",
    "recall@100": "recall_100",
    "map": "map",
    "map@10": "map_cut_10",
    "mrr": "recip_rank",
    "rprec": "Rprec",
    "found@1": "success_1",
    "found@5": "success_5",
    "found@10": "success_10",
    "set_p": "set_P",
    "set_recall": "set_recall",
    "set_relative_p": "set_relative_P",
    "set_map": "set_map",
    "set_f": "set_F",
    "relative_p@10": "relative_P_10",
    "relative_p@100": "relative_P_100",
    "rprec_mult(m=0.4)": "Rprec_mult_0.40",
    "rprec_mult(m=2)": "Rprec_mult_2.00",
    "utility": "utility",
    "num_nonrel_judged_ret": "num_nonrel_judged_ret",
    "bin_g": "binG",
    "g": "G",
    "ndcg_rel": "ndcg_rel",
    "rndcg": "Rndcg",
    "infap": "infAP",
}
COLLECTIONS = {
    "scifact": "scifact/qrels/test.tsv",
    "msmarco-dl19-5k": "msmarco-dl19-5k/qrels/test.tsv",
    "cranfield": "cranfield/cranqrel",
    "vaswani": "vaswani/qrels",
}


def load_qrels(name: str) -> dict[str, dict[str, int]]:
    folder, _, inside = COLLECTIONS[name].partition("/")
    qrels = read_qrels((shared(folder) / inside).read_text(encoding="utf-8"), name)
    # Cranfield marks "no relevance" as -1; a grade is never below 0 here
    return {
        q: {d: max(g, 0) for d, g in docs.items()} for q, docs in qrels.items() if any(g > 0 for g in docs.values())
    }


def draw_run(qrels: dict[str, dict[str, int]], seed: int = 1) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    universe = sorted({d for docs in qrels.values() for d in docs})
    run = {}
    for i, (qid, judged) in enumerate(sorted(qrels.items())):
        if i % 17 == 0:
            continue  # some questions get no results: trec_eval -c scores them 0
        pool = rng.sample(sorted(judged), max(1, len(judged) // 2)) + rng.sample(universe, 60)
        run[qid] = {d: float(rng.randint(0, 40)) for d in pool}  # coarse scores: many ties
    return run


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
@pytest.mark.parametrize("threshold", [1, 2])
def test_measures_equal_pytrec_eval_per_question(name, threshold):
    qrels = load_qrels(name)
    run = draw_run(qrels)
    reference = pytrec_eval.RelevanceEvaluator(qrels, set(PAIRS.values()), relevance_level=threshold).evaluate(run)
    questions = [
        Question(q, "?", tuple(d for d, g in docs.items() if g > 0), grades=dict(docs)) for q, docs in qrels.items()
    ]
    # found@k reads results as they came back: hand them over in trec_eval's order (score, then id, descending)
    in_trec_order = {q: sorted(docs.items(), key=lambda r: (r[1], r[0]), reverse=True) for q, docs in run.items()}
    judged = [judge(in_trec_order.get(q.id, []), q, threshold) for q in questions]
    through_run = Batch.of(judged)
    rows = [(q, d, g) for q, docs in qrels.items() for d, g in docs.items()]
    lines = [(q, d, s) for q, docs in run.items() for d, s in docs.items()]
    random.Random(2).shuffle(lines)  # the file need not be sorted
    through_eval = run_batch(
        Judgements.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
        Run.of([r[0] for r in lines], [r[1] for r in lines], [r[2] for r in lines]),
        threshold,
    )
    if threshold > 1 and not any(g >= threshold for docs in qrels.values() for g in docs.values()):
        assert name in (
            "vaswani",
            "scifact",
        )  # binary judgements: at threshold 2 nothing is relevant, and every measure is 0
    for ours, theirs in PAIRS.items():
        expected = np.array([reference.get(q.id, {}).get(theirs, 0.0) for q in questions])
        measure = parse(ours)
        np.testing.assert_allclose(measure.compute(through_run), expected, atol=1e-9, err_msg=f"{name} {ours}")
        np.testing.assert_allclose(measure.compute(through_eval), expected, atol=1e-9, err_msg=f"{name} {ours} eval")


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_bpref_and_condensed_measures_equal_trec_eval_per_question(name):
    """bpref (trec_eval's), and nDCG′ / AP′ over condensed lists (trec_eval -J, judged documents only)."""
    qrels = load_qrels(name)
    run = draw_run(qrels, seed=3)
    questions = [
        Question(q, "?", tuple(d for d, g in docs.items() if g > 0), grades=dict(docs)) for q, docs in qrels.items()
    ]
    in_trec_order = {q: sorted(docs.items(), key=lambda r: (r[1], r[0]), reverse=True) for q, docs in run.items()}
    batch = Batch.of([judge(in_trec_order.get(q.id, []), q) for q in questions])
    plain = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}).evaluate(run)
    only_judged = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "map"}, judged_docs_only_flag=True)
    condensed = only_judged.evaluate(run)
    for ours, source, theirs in (
        ("bpref", plain, "bpref"),
        ("ndcg_condensed@10", condensed, "ndcg_cut_10"),
        ("map_condensed", condensed, "map"),
    ):
        expected = np.array([source.get(q.id, {}).get(theirs, 0.0) for q in questions])
        np.testing.assert_allclose(parse(ours).compute(batch), expected, atol=1e-9, err_msg=f"{name} {ours}")


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_err_and_rbp_equal_ir_measures_per_question(name):
    """ERR@k as TREC's gdeval computes it, and RBP (binary, p 0.8 and 0.95) as cwl_eval does, both through
    ir_measures; runs without tied scores, as those tools break ties each their own way."""
    import ir_measures
    from ir_measures import ERR, RBP

    qrels = load_qrels(name)
    numbered = {str(i): docs for i, docs in enumerate(sorted(qrels.values(), key=sorted), start=1)}  # gdeval: numbers
    rng = random.Random(5)
    run = {q: {d: s + rng.random() / 1000 for d, s in docs.items()} for q, docs in draw_run(numbered, seed=4).items()}
    questions = [
        Question(q, "?", tuple(d for d, g in docs.items() if g > 0), grades=dict(docs)) for q, docs in numbered.items()
    ]
    ordered = {q: sorted(docs.items(), key=lambda r: (r[1], r[0]), reverse=True) for q, docs in run.items()}
    batch = Batch.of([judge(ordered.get(q.id, []), q) for q in questions])
    asked = {"err@10": ERR @ 10, "err@20": ERR @ 20, "rbp": RBP(p=0.8, rel=1), "rbp(p=0.95)": RBP(p=0.95, rel=1)}
    found: dict = {}
    for metric in ir_measures.iter_calc(list(asked.values()), numbered, run):
        found.setdefault(metric.measure, {})[metric.query_id] = float(metric.value)
    for ours, measure in asked.items():
        values = parse(ours).compute(batch)
        scored = [(i, q.id) for i, q in enumerate(questions) if q.id in found[measure]]
        assert len(scored) >= len(run) - 1, ours
        tolerance = 1e-5 if ours.startswith("err") else 1e-9  # gdeval prints five decimals
        for i, qid in scored:
            assert values[i] == pytest.approx(found[measure][qid], abs=tolerance), (name, ours, qid)


LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_gm_map_and_interpolated_precision_equal_pytrec_eval(name):
    """gm_map over all questions as pytrec_eval's (the mean of its per-question logs, exponentiated); the
    interpolated precision at every level per question, wherever trec_eval 9 (inside pytrec_eval) and 10
    (what vx-eval follows) turn the level into the same number of relevant units: 9 added 0.9 and cut, 10
    rounds. Where they differ, trec_eval 10's own test output decides (`test_trec_format`)."""
    from vx_eval.core.measures.metrics import average

    qrels = load_qrels(name)
    run = draw_run(qrels)
    wanted = {f"iprec_at_recall_{level:.2f}" for level in LEVELS} | {"gm_map"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, wanted, relevance_level=1).evaluate(run)
    questions = [
        Question(q, "?", tuple(d for d, g in docs.items() if g > 0), grades=dict(docs)) for q, docs in qrels.items()
    ]
    in_trec_order = {q: sorted(docs.items(), key=lambda r: (r[1], r[0]), reverse=True) for q, docs in run.items()}
    batch = Batch.of([judge(in_trec_order.get(q.id, []), q, 1) for q in questions])
    gm = parse("gm_map")
    logs = [reference[q.id]["gm_map"] if q.id in reference else np.log(1e-5) for q in questions]
    assert average(gm, gm.compute(batch)) == pytest.approx(float(np.exp(np.mean(logs))), abs=1e-12)
    compared = 0
    for level in LEVELS:
        mine = parse(f"iprec(recall={level:g})").compute(batch)
        for i, q in enumerate(questions):
            r = int(batch.n_rel[i])
            if q.id not in reference or int(level * r + 0.9) != int(np.floor(level * r + 0.5)):
                continue
            assert mine[i] == pytest.approx(reference[q.id][f"iprec_at_recall_{level:.2f}"], abs=1e-12), (q.id, level)
            compared += 1
    assert compared > 5 * len(reference)
