"""Ranking and picks exactly as the seed defines them; the frontier; neighbours one change away."""

from __future__ import annotations

from types import SimpleNamespace

from vx_eval.core.picks import Scored, frontier, neighbours, picks, ranked


def S(key, primary, at1=0.5, ms=10.0, failed=False):
    return Scored(key, primary, at1, ms, failed)


def test_within_is_inclusive_at_four_and_eight_points():
    rows = [S("best", 0.96, ms=100), S("near", 0.92, ms=20), S("far", 0.88, ms=5), S("out", 0.8799, ms=1)]
    chosen = picks(rows, balance=4, time=8)
    assert chosen == {"finds_the_most": "best", "best_for_balance": "near", "best_for_time": "far"}


def test_a_tie_goes_to_more_right_at_one_then_to_the_faster():
    rows = [S("a", 0.9, at1=0.5, ms=1), S("b", 0.9, at1=0.6, ms=50), S("c", 0.9, at1=0.6, ms=40)]
    assert picks(rows, balance=0, time=0)["finds_the_most"] == "c"
    assert [r.key for r in ranked(rows)] == ["c", "b", "a"]


def test_all_three_can_be_the_same_setup_and_points_are_settings():
    rows = [S("a", 0.9, ms=1), S("b", 0.85, ms=0.5)]
    assert set(picks(rows, balance=4, time=4).values()) == {"a"}
    assert picks(rows, balance=4, time=5)["best_for_time"] == "b"


def test_a_failed_setup_is_never_picked_and_ranks_last():
    rows = [S("broken", 1.0, ms=0.1, failed=True), S("ok", 0.5)]
    assert set(picks(rows, balance=100, time=100).values()) == {"ok"}
    assert ranked(rows)[-1].key == "broken"
    assert picks([S("x", 1, failed=True)], balance=4, time=8) == {
        "finds_the_most": None,
        "best_for_balance": None,
        "best_for_time": None,
    }


def test_frontier_keeps_what_nothing_beats_on_both():
    rows = [
        S("slow-best", 0.9, ms=100),
        S("mid", 0.8, ms=10),
        S("dominated", 0.7, ms=20),
        S("fast", 0.5, ms=1),
    ]
    assert frontier(rows) == ["fast", "mid", "slow-best"]


def test_neighbours_are_one_change_away():
    def setup(key, target="Local", method="hybrid", models=("minilm",), ranker=None):
        return SimpleNamespace(key=key, target=target, method=method, models=list(models), ranker=ranker)

    setups = [
        setup("h"),
        setup("h-rr", ranker="ms-marco"),
        setup("h2", models=("minilm", "bge")),
        setup("q-h", target="Qdrant"),
        setup("kw", method="keyword", models=()),
    ]
    near = neighbours(setups)
    assert near["h"] == [
        ("h-rr", "the same search reranked by ms-marco"),
        ("h2", "one model more: with bge"),
        ("q-h", "the same search on Qdrant"),
    ]
    assert near["h2"] == [("h", "one model fewer: without bge")]
    assert near["kw"] == []
