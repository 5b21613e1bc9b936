"""Ranking and picks exactly as the seed defines them; the frontier; neighbours one change away."""

from __future__ import annotations

from types import SimpleNamespace

from vx_eval.core.report.picks import Scored, frontier, neighbours, picks, ranked


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


def timed(key, primary, at1, center, spread=0.15, seed=0, n=26, mrr=0.0):
    """A setup whose 26 searches took about `center` ms, with the noise of a shared machine."""
    import numpy as np

    rng = np.random.default_rng(seed)
    times = tuple(float(center * np.exp(rng.normal(0, spread))) for _ in range(n))
    return Scored(key, primary, at1, float(np.median(times)), mrr=mrr, times_ms=times)


def test_a_time_difference_inside_the_noise_is_a_tie_and_goes_to_the_better_setup():
    from vx_eval.core.report.picks import Picker

    # hybrid is better at 1 and takes as long as dense, give or take the machine's noise: whichever median
    # comes out lower in a run, the pick is the better setup
    for seed in range(8):
        rows = [
            timed("hybrid", 1.0, 0.9, 10.7, seed=seed),
            timed("dense", 1.0, 0.8, 10.1, seed=seed + 100),
            timed("slow-best", 1.0, 0.95, 200.0, seed=seed + 200),
        ]
        choice = Picker(rows, "found@10", seed=1).choose(balance=4, time=8)
        assert choice.picks["best_for_balance"] == "slow-best"  # found@1 decides: hybrid is 5 points behind
        assert Picker(rows, "found@10").choose(balance=5, time=8).picks["best_for_balance"] == "hybrid"
        assert Picker(rows, "found@10").choose(balance=15, time=15).picks["best_for_time"] == "hybrid"


def test_a_full_tie_goes_to_the_smaller_key_even_when_it_begins_the_other():
    from vx_eval.core.report.picks import Picker

    # level on every measure, times within the noise: the name decides, and the shorter key comes first
    for seed in range(4):
        rows = [
            timed("local.reranked.bge-small+minilm", 1.0, 0.5, 190.0, seed=seed),
            timed("local.reranked.bge-small", 1.0, 0.5, 192.0, seed=seed + 50),
            timed("local.reranked.minilm", 1.0, 0.5, 191.0, seed=seed + 100),
        ]
        choice = Picker(rows, "found@10").choose(balance=4, time=8)
        assert choice.picks["finds_the_most"] == "local.reranked.bge-small"


def test_a_real_difference_in_speed_still_picks_the_faster():
    from vx_eval.core.report.picks import Picker, compare_times

    fast, slow = timed("keyword", 1.0, 0.8, 0.5, seed=1), timed("reranked", 1.0, 0.9, 50.0, seed=2)
    comparison = compare_times(fast, slow)
    assert comparison.surely_faster and comparison.ci[1] < 0.05
    choice = Picker([fast, slow], "found@10").choose(balance=15, time=15)
    assert choice.picks["best_for_time"] == "keyword"
    reason = choice.reasons["best_for_time"].text
    assert "as fast as reranked (surely faster: time ratio 0.01" in reason and "26 questions" in reason


def test_noise_is_not_surely_faster_either_way():
    from vx_eval.core.report.picks import compare_times

    a, b = timed("a", 1, 1, 10.1, seed=3), timed("b", 1, 1, 10.7, seed=4)
    one, other = compare_times(a, b), compare_times(b, a)
    assert not one.surely_faster and not one.surely_slower and not other.surely_faster
    assert one.ci[0] < 1 < one.ci[1]


def test_a_saturated_primary_hands_the_picks_to_found_at_1_and_says_so():
    from vx_eval.core.report.picks import Picker, saturated

    rows = [S(f"s{i}", 1.0, at1=0.65 + 0.03 * i, ms=5.0 + i) for i in range(10)]  # the better, the slower
    rows += [S("keyword", 0.85, at1=0.65, ms=0.4), S("graph", 0.88, at1=0.8, ms=100)]
    assert saturated([r.primary for r in rows]) and not saturated([r.at1 for r in rows])
    choice = Picker(rows, "found@10").choose(balance=4, time=8)
    assert choice.measure == "found@1"
    assert choice.note == (
        "found@10 is 100% for 10 of 12 setups: it cannot tell the leaders apart, so the picks are decided by "
        "found@1 (then found@10)"
    )
    assert choice.picks["finds_the_most"] == "s9"  # found@1 0.92
    assert choice.picks["best_for_balance"] == "s8"  # found@1 0.89: within 4 points, and faster
    assert choice.picks["best_for_time"] == "s7"  # 0.86: within 8 points; found@10 alone would pick s0 (0.65)
    assert not saturated([1.0, 0.9, 0.8]) and saturated([0.5, 0.5]) and saturated([1, 1, 1, 0.2])
