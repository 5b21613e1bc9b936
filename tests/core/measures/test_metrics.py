"""Measures: values derived from their formulas, names parsed with aliases, and agreement with pytrec_eval."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import pytrec_eval

from vx_eval.core.contracts.golden import Question
from vx_eval.core.errors import MetricError
from vx_eval.core.golden.units import first_position, judge
from vx_eval.core.measures import metrics
from vx_eval.core.measures.metrics import Judged, parse


def J(returned, grades, ranked=None):
    ranked = ranked if ranked is not None else tuple(dict.fromkeys(returned))
    return Judged(tuple(returned), tuple(ranked), grades)


def test_found_counts_positions_as_results_came_back():
    # d1 fills the first three places: the relevant d2 is 4th as returned, 2nd once reduced.
    j = judge([("d1", 9), ("d1", 8), ("d1", 7), ("d2", 6)], Question("q", "?", ("d2",)))
    assert parse("found@3")(j) == 0.0
    assert parse("found@4")(j) == 1.0
    assert parse("recall@3")(j) == 1.0  # ranking measures read the first occurrence of each unit
    assert first_position(j) == 4


def test_formulas_on_a_hand_worked_list():
    # ranked: a(rel 3) x b(rel 1) y ; two more relevant (c grade 2, d grade 1) never retrieved
    j = J(["a", "x", "b", "y"], {"a": 3, "b": 1, "c": 2, "d": 1})
    assert parse("p@2")(j) == 0.5
    assert parse("recall@4")(j) == 0.5
    assert parse("mrr")(j) == 1.0
    assert parse("map")(j) == pytest.approx((1 / 1 + 2 / 3) / 4)
    dcg = 3 / math.log2(2) + 1 / math.log2(4)
    assert parse("dcg@4")(j) == pytest.approx(dcg)
    ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    assert parse("ndcg@4")(j) == pytest.approx(dcg / ideal)
    assert parse("ndcg@1")(j) == 1.0


def test_no_results_score_zero_and_precision_divides_by_k():
    j = J([], {"a": 1})
    for name in ("found@10", "mrr", "recall@10", "p@5", "map", "ndcg@10", "dcg@10"):
        assert parse(name)(j) == 0.0
    assert parse("p@10")(J(["a"], {"a": 1})) == 0.1


def test_ties_are_ordered_by_score_then_unit_id_descending():
    q = Question("q", "?", ("b",))
    j = judge([("a", 1.0), ("b", 1.0), ("c", 2.0)], q)
    assert j.ranked == ("c", "b", "a")
    assert parse("mrr")(j) == 0.5


def test_page_units_are_judged_by_page_and_document_units_by_document():
    hits = [("report.pdf#page=3", 2.0), ("report.pdf#page=2", 1.0)]
    by_page = judge(hits, Question("q", "?", ("report.pdf#page=2",)))
    by_doc = judge(hits, Question("q", "?", ("report.pdf",)))
    assert parse("mrr")(by_page) == 0.5
    assert parse("mrr")(by_doc) == 1.0 and by_doc.ranked == ("report.pdf",)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("ndcg@10", "ndcg@10"),
        ("nDCG@10", "ndcg@10"),
        ("ndcg_cut_10", "ndcg@10"),
        ("P_5", "p@5"),
        ("precision@5", "p@5"),
        ("recip_rank", "mrr"),
        ("recall_100", "recall@100"),
        ("hit@10", "found@10"),
        ("success@1", "found@1"),
        ("map_cut_10", "map@10"),
        ("map", "map"),
        ("mrr@10", "mrr@10"),
        ("11pt_avg", "iprec_avg"),  # an alias may start with a digit (it said: did you mean '11pt_avg'?)
    ],
)
def test_names_and_aliases_parse_to_one_canonical_name(text, name):
    assert parse(text).name == name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ndgc@10", "unknown measure 'ndgc@10'; did you mean 'ndcg'?"),
        ("recall", "measure 'recall' needs a cut-off: write recall@10"),
        ("found@0", "the cut-off must be at least 1"),
        ("bogus", "unknown measure 'bogus'"),
    ],
)
def test_bad_measure_names_say_what_to_write(text, message):
    with pytest.raises(MetricError, match=message.replace("(", r"\(").replace("?", r"\?")):
        parse(text)


TREC = {
    "ndcg@10": "ndcg_cut_10",
    "ndcg@5": "ndcg_cut_5",
    "recall@10": "recall_10",
    "recall@5": "recall_5",
    "mrr": "recip_rank",
    "p@5": "P_5",
    "p@10": "P_10",
    "map": "map",
    "map@10": "map_cut_10",
    "ndcg": "ndcg",
}


def _compare_with_pytrec(qrels, run):
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()))
    reference = evaluator.evaluate(run)
    for qid, judged_docs in qrels.items():
        question = Question(
            qid,
            "?",
            tuple(d for d, g in judged_docs.items() if g > 0),
            grades={d: g for d, g in judged_docs.items() if g != 1},
        )
        # hand our judge the run in an arbitrary order: it must order ties as trec_eval does
        results = list(run.get(qid, {}).items())
        random.Random(qid).shuffle(results)
        results.sort(key=lambda r: -r[1])
        judged = judge(results, question)
        for ours, theirs in TREC.items():
            expected = reference[qid][theirs] if qid in reference else 0.0
            assert parse(ours)(judged) == pytest.approx(expected, abs=1e-9), (qid, ours)


def test_agrees_with_pytrec_eval_on_random_graded_runs_with_ties():
    rng = random.Random(7)
    docs = [f"d{i:02d}" for i in range(40)]
    qrels, run = {}, {}
    for q in range(60):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 12))
        qrels[qid] = {d: rng.choice([0, 1, 1, 2, 3]) for d in judged}
        if not any(g > 0 for g in qrels[qid].values()):
            qrels[qid][judged[0]] = 1
        if q % 10 != 0:  # some questions get no results at all (trec_eval -c scores them 0)
            run[qid] = {d: float(rng.randint(0, 5)) for d in rng.sample(docs, rng.randint(1, 30))}
    _compare_with_pytrec(qrels, run)


def test_registry_holds_only_documented_measures():
    for definition in metrics.REGISTRY.values():
        assert definition.doc, definition.name


def test_f_scores_and_r_precision_follow_their_formulas():
    # ranked: a(rel) x b(rel) y ; relevant a, b, c (R = 3)
    j = J(["a", "x", "b", "y"], {"a": 1, "b": 1, "c": 1})
    p, r = 2 / 4, 2 / 3
    assert parse("f1@4")(j) == pytest.approx(2 * p * r / (p + r))
    assert parse("f2@4")(j) == pytest.approx(5 * p * r / (4 * p + r))
    assert parse("rprec")(j) == pytest.approx(2 / 3)  # two relevant in the top 3 (R = 3)
    assert parse("f2@1")(J(["x"], {"a": 1})) == 0.0


def test_cutoffs_at_multiples_of_the_relevant_count():
    j = J(["a", "x", "b", "y", "c"], {"a": 1, "b": 1})  # R = 2
    assert parse("recall@1r")(j) == 0.5  # k = 2
    assert parse("recall@2r")(j) == 1.0  # k = 4
    assert parse("p@2r")(j) == 0.5
    assert parse("recall_at_2r").name == "recall@2r"
    assert np.isnan(parse("recall@3r")(j, depth=5))  # k = 6 reaches past the 5 results searched
    assert parse("recall@3r").unscorable(j, 5) == "recall@3r needs 6 results (3 x 2 relevant); depth is 5"
    assert parse("recall@2r").unscorable(j, 5) is None


def test_mean_relevance_judged_and_the_relevance_distribution():
    j = J(["a", "x", "b"], {"a": 3, "b": 1, "c": 2})
    assert parse("mean_rel@2")(j) == 1.5  # (3 + 0) / 2
    assert parse("mean_rel@10")(j) == pytest.approx(4 / 10)  # ten places; the seven empty ones count 0
    assert parse("mean_rel")(j) == pytest.approx(4 / 3)  # no cut-off: over what came back
    short, full = J(["a"], {"a": 2}), J(["a", *"bcdefghij"], {"a": 2})  # the same grade at every place
    assert parse("mean_rel@10")(short) == parse("mean_rel@10")(full) == pytest.approx(0.2)
    assert parse("judged@10")(j) == pytest.approx(2 / 3)
    assert parse("judged@10")(J([], {"a": 1})) == 0.0
    shares = metrics.relevance_distribution(metrics.Batch.of([j, J(["c"], {"c": 2})]), 10)
    assert shares == {"1": 0.25, "2": 0.25, "3": 0.25, "unjudged": 0.25}


def test_a_grade_threshold_makes_low_grades_count_as_not_relevant():
    q = Question("q", "?", ("a", "b"), grades={"a": 1, "b": 3})
    j = judge([("a", 2.0), ("b", 1.0)], q, threshold=2)
    assert parse("mrr")(j) == 0.5 and parse("recall@1")(j) == 0.0 and parse("recall@2")(j) == 1.0
    assert parse("ndcg@2")(j) < 1.0  # graded measures keep every grade


def test_err_rbp_and_bpref_on_a_hand_worked_list():
    # ranked: a (grade 3) x (judged 0) b (grade 1) y (unjudged); c (grade 2) never retrieved
    j = J(["a", "x", "b", "y"], {"a": 3, "x": 0, "b": 1, "c": 2})
    stop_a, stop_b = (2**3 - 1) / 16, (2**1 - 1) / 16
    assert parse("err@10")(j) == pytest.approx(stop_a + (1 - stop_a) * 0 / 2 + (1 - stop_a) * stop_b / 3)
    assert parse("err@1")(j) == pytest.approx(stop_a)
    assert parse("rbp")(j) == pytest.approx(0.2 * (1 + 0.8**2))
    assert parse("rbp(p=0.5)")(j) == pytest.approx(0.5 * (1 + 0.5**2))
    assert parse("rbp@1")(j) == pytest.approx(0.2)
    # unjudged y at rank 4, and everything past the 4 places
    assert parse("rbp_residual")(j) == pytest.approx(0.2 * 0.8**3 + 0.8**4)
    # R = 3 relevant, N = 1 judged non-relevant: a has none above (1), b has x above (1 - 1/min(3, 1) = 0)
    assert parse("bpref")(j) == pytest.approx((1 + 0) / 3)
    early = J(["a", "y", "x", "b"], j.grades)  # the unjudged y second: the condensed list skips it
    assert parse("ndcg_condensed@3")(early) == pytest.approx(parse("ndcg@3")(J(["a", "x", "b"], j.grades)))
    assert parse("ndcg_condensed@3")(early) > parse("ndcg@3")(early)


def test_a_measures_own_parameter_is_named_and_checked():
    assert parse("rbp").name == "rbp" and parse("rbp(p=0.8)").name == "rbp"
    assert parse("RBP(p=0.95)@20").name == "rbp(p=0.95)@20"
    for bad, message in (
        ("rbp(q=0.9)", "takes \\(p="),
        ("rbp(p=1.5)", "strictly between 0 and 1"),
        ("ndcg(p=0.5)@10", "takes no parameter"),
        ("rbp(p=0.9.1)", "must be a number"),
    ):
        with pytest.raises(MetricError, match=message):
            parse(bad)
