"""Tie-aware measures: the expected score equals the mean over every ordering of the ties (brute force on
small random cases), the optimistic and pessimistic orders bound every ordering, and without ties all three
are trec_eval's own number."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest

from vx_eval.core.measures import ties
from vx_eval.core.measures.metrics import Batch, Judged, parse

EXACT = ["p@3", "recall@4", "f1@3", "dcg@4", "ndcg@3", "ndcg", "rprec", "mean_rel@4", "judged@3", "rbp",
         "rbp_residual", "mrr", "mrr@3", "map", "map@4", "recall@1r"]  # fmt: skip
SAMPLED = ["err@4", "bpref", "ndcg_condensed@3"]


def _case(rng: random.Random) -> Judged:
    """A ranked list of 3-7 units with a few distinct scores (ties), graded 0-3, some unjudged, and judged
    units that were not retrieved."""
    n = rng.randint(3, 7)
    units = [f"d{i}" for i in range(n)]
    scores = sorted((float(rng.choice([1, 2, 3])) for _ in range(n)), reverse=True)
    grades = {u: rng.choice([0, 1, 2, 3]) for u in units if rng.random() < 0.75}
    grades.update({f"x{i}": rng.choice([1, 2]) for i in range(rng.randint(0, 2))})
    if not any(g > 0 for g in grades.values()):
        grades["x9"] = 1
    return Judged(tuple(units), tuple(units), grades, 1, tuple(scores))


def _orderings(judged: Judged):
    """Every ordering of the ranked list that permutes only tied units."""
    spans, start = [], 0
    scores = judged.scores
    while start < len(scores):
        end = start + 1
        while end < len(scores) and scores[end] == scores[start]:
            end += 1
        spans.append(judged.ranked[start:end])
        start = end
    for parts in itertools.product(*(itertools.permutations(span) for span in spans)):
        ranked = tuple(u for part in parts for u in part)
        yield Judged(ranked, ranked, judged.grades, judged.threshold, scores)


@pytest.mark.parametrize("name", EXACT + SAMPLED)
def test_expected_equals_the_mean_over_every_ordering_and_the_bounds_hold(name):
    rng = random.Random(11)
    measure = parse(name)
    cases = [_case(rng) for _ in range(25)]
    batch = Batch.of(cases)
    expected, sampled = ties.expected(measure, batch, seed=1)
    optimistic = ties.scores(measure, batch, "optimistic")
    pessimistic = ties.scores(measure, batch, "pessimistic")
    assert sampled == (name in SAMPLED)
    for i, case in enumerate(cases):
        every = [measure(j) for j in _orderings(case)]
        assert expected[i] == pytest.approx(np.mean(every), abs=0.02 if sampled else 1e-12), (name, case)
        best, worst = (min(every), max(every)) if name == "rbp_residual" else (max(every), min(every))
        assert optimistic[i] == pytest.approx(best, abs=1e-12), (name, case)
        assert pessimistic[i] == pytest.approx(worst, abs=1e-12), (name, case)


def test_without_ties_every_order_is_trec_evals():
    rng = random.Random(3)
    cases = []
    for _ in range(20):
        case = _case(rng)
        cases.append(
            Judged(case.returned, case.ranked, case.grades, 1, tuple(float(-i) for i in range(len(case.ranked))))
        )
    batch = Batch.of(cases)
    assert not ties.has_ties(batch).any()
    for name in EXACT + SAMPLED:
        measure = parse(name)
        plain = measure.compute(batch)
        for order in ties.ORDERS:
            np.testing.assert_allclose(ties.scores(measure, batch, order), plain, atol=1e-12, err_msg=f"{name} {order}")


def test_found_reads_the_engines_order_and_ignores_ties():
    case = Judged(("a", "b"), ("a", "b"), {"b": 1}, 1, (1.0, 1.0))
    batch = Batch.of([case])
    assert ties.has_ties(batch).all()
    assert ties.scores(parse("found@1"), batch, "optimistic")[0] == 0.0
    assert ties.scores(parse("mrr"), batch, "optimistic")[0] == 1.0
    assert ties.scores(parse("mrr"), batch, "expected")[0] == pytest.approx(0.75)


def test_a_run_with_heavy_ties_is_flagged_and_can_rank_by_the_expected_order(project):
    import vx_eval
    from vx_eval.views.display import tie_lines

    questions = [
        vx_eval.Question("Can a customer postpone a loan payment?", ("deferment",), "q1"),
        vx_eval.Question("What does a wire abroad cost?", ("wire",), "q2"),
    ]
    everything = ["card-lost", "deferment", "divestment", "emergency-fund", "wire", "zz-last"]

    def flat(text: str, k: int):  # one score for every document: the order is the tie-break's
        return [(d, 1.0) for d in everything]

    def ranked(text: str, k: int):
        return [(d, float(len(everything) - i)) for i, d in enumerate(everything)]

    settings = {"metrics": ["ndcg@10", "mrr"], "primary": "ndcg@10", "bootstrap": 0, "permutations": 0}
    report = vx_eval.evaluate({"flat": flat, "ranked": ranked}, questions, **settings)
    view = report.setup("flat.retriever").ties
    assert view is not None and view.flagged and view.questions == 2
    span = view.measures["mrr"]
    assert span.optimistic == 1.0 and span.pessimistic == pytest.approx(1 / 6)
    assert span.expected == pytest.approx(np.mean([1 / r for r in range(1, 7)]))
    # trec_eval breaks the tie by id, descending: deferment is 5th of 6, wire 2nd
    assert span.trec == pytest.approx((1 / 5 + 1 / 2) / 2)
    assert report.setup("ranked.retriever").ties is None
    (line,) = tie_lines(report)
    assert "flat.retriever" in line and "of its ndcg@10 depends on how ties are broken" in line
    fair = vx_eval.evaluate({"flat": flat}, questions, ties="expected", **settings)
    assert fair.setup("flat.retriever").summary["mrr"] == pytest.approx(span.expected)
