"""Headroom (the oracle over setups, what no setup finds, where each wins, overlaps, per kind) and the
all-pairs randomised Tukey HSD, on runs whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

import vx_eval
from vx_eval.core.report.headroom import randomised_tukey

QUESTIONS = [
    vx_eval.Question("postpone a loan payment", ("deferment",), "q1", kind="fact"),
    vx_eval.Question("wire money abroad", ("wire",), "q2", kind="fact"),
    vx_eval.Question("sell investments early", ("divestment",), "q3", kind="why"),
    vx_eval.Question("annual report risks", ("report.pdf",), "q4", kind="why"),
]
ANSWER = {q.question: q.expected[0] for q in QUESTIONS}


def _finder(found: set[str]):
    def search(text: str, k: int):
        hit = [ANSWER[text]] if ANSWER[text] in found else []
        return [*hit, "noise-1", "noise-2"]

    return search


def test_the_oracle_the_unfound_and_where_each_setup_wins():
    report = vx_eval.evaluate(
        {"a": _finder({"deferment", "wire"}), "b": _finder({"divestment", "wire"})},
        QUESTIONS,
        metrics=["mrr"],
        primary="mrr",
        bootstrap=200,
        permutations=500,
    )
    head = report.headroom
    assert head is not None and head.measure == "mrr" and head.questions == 4
    assert head.best_value == pytest.approx(0.5)  # each setup finds two of four, first
    assert head.oracle == pytest.approx(0.75) and head.gain == pytest.approx(0.25)
    assert head.oracle_ci[0] <= head.oracle <= head.oracle_ci[1]
    assert head.found_by == [1, 2, 1, 0] and head.unfound == ["q4"] and head.unfound_count == 1
    assert head.only == {"a.retriever": ["q1"], "b.retriever": ["q3"]}
    assert head.wins == {"a.retriever": 1, "b.retriever": 1}
    (overlap,) = head.overlaps
    assert overlap.questions == 4 and overlap.overlap == pytest.approx((2 / 3 + 1 + 2 / 3 + 1) / 4)
    assert set(head.kinds) == {"fact", "why"}
    assert head.kinds["fact"].oracle == pytest.approx(1.0) and head.kinds["fact"].best == "a.retriever"
    assert head.kinds["why"].means == {"a.retriever": 0.0, "b.retriever": 0.5}
    pairs = report.pairs
    assert pairs is not None and pairs.method == "randomised Tukey HSD" and len(pairs.pairs) == 1
    assert pairs.pairs[0].delta == pytest.approx(0.0) and pairs.pairs[0].p == pytest.approx(1.0)
    from vx_eval.html.render import render_page
    from vx_eval.views.display import headroom_lines

    page = render_page(report)
    assert '<b id="headroom-oracle">0.750</b>' in page and '<p id="unfound">q4</p>' in page
    assert 'id="pairs-title"' in page and "randomised Tukey HSD" in page
    first, unfound = headroom_lines(report)
    assert "the oracle) gives 0.750" in first and unfound.endswith("q4")


def test_randomised_tukey_tells_real_differences_and_holds_its_error_rate_under_the_null():
    rng = np.random.default_rng(0)
    apart = np.column_stack([rng.normal(0.5, 0.1, 60), rng.normal(0.5, 0.1, 60), rng.normal(0.8, 0.1, 60)])
    p = randomised_tukey(apart, 1000, seed=1)
    assert p[0, 2] < 0.01 and p[1, 2] < 0.01 and p[0, 1] > 0.05
    assert np.allclose(p, p.T) and np.all(np.diag(p) == 1.0)
    false_alarms = 0
    for trial in range(60):  # five setups alike: any pair below 0.05 is a false alarm of the whole family
        same = rng.normal(0.5, 0.2, (40, 5))
        false_alarms += bool((randomised_tukey(same, 400, seed=trial) < 0.05).any())
    assert false_alarms / 60 <= 0.12  # family-wise 5%, with room for 60 draws
