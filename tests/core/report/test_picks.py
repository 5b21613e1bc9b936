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
    # comes out lower in a run, the balance pick is the better of the two; every setup finds the same share
    # in the top 10, so every one is within 4 points, and the slow one is surely slower
    for seed in range(8):
        rows = [
            timed("hybrid", 1.0, 0.9, 10.7, seed=seed),
            timed("dense", 1.0, 0.8, 10.1, seed=seed + 100),
            timed("slow-best", 1.0, 0.95, 200.0, seed=seed + 200),
        ]
        choice = Picker(rows, "found@10", seed=1).choose(balance=4, time=8)
        assert choice.picks["finds_the_most"] == "slow-best"  # more right answers first (found@1)
        assert choice.picks["best_for_balance"] == choice.picks["best_for_time"] == "hybrid"
        assert "as fast as dense within the noise, and better" in choice.reasons["best_for_balance"].text


def test_a_full_tie_goes_to_the_faster_and_on_equal_times_to_the_smaller_key_even_when_it_begins_the_other():
    from vx_eval.core.report.picks import Picker

    # level on found@10 and found@1: the seed's rule gives it to the faster (the lower median, even within the
    # noise, and the reason says they are level within it); on equal medians the shorter key comes first
    for seed in range(4):
        rows = [
            timed("local.reranked.bge-small+minilm", 1.0, 0.5, 190.0, seed=seed),
            timed("local.reranked.bge-small", 1.0, 0.5, 192.0, seed=seed + 50),
            timed("local.reranked.minilm", 1.0, 0.5, 191.0, seed=seed + 100),
        ]
        choice = Picker(rows, "found@10").choose(balance=4, time=8)
        assert choice.picks["finds_the_most"] == min(rows, key=lambda r: r.median_ms).key
        assert "level on found@1 too with" in choice.reasons["finds_the_most"].text
    rows = [S("local.reranked.bge-small+minilm", 1.0, ms=190.0), S("local.reranked.bge-small", 1.0, ms=190.0)]
    assert picks(rows, balance=4, time=8)["finds_the_most"] == "local.reranked.bge-small"


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


def test_a_primary_level_for_most_setups_decides_among_the_leaders_only_and_says_so():
    """No run-wide switch of measure: found@10 at 100% for 10 of 12 setups leaves the other two where found@10
    puts them; found@1 decides among the ten level on it, and the balance and time picks are measured on
    found@10 against the one that finds the most."""
    from vx_eval.core.report.picks import Picker

    rows = [S(f"s{i}", 1.0, at1=0.65 + 0.03 * i, ms=5.0 + i) for i in range(10)]  # the better, the slower
    rows += [S("keyword", 0.85, at1=0.65, ms=0.4), S("graph", 0.88, at1=0.8, ms=100)]
    choice = Picker(rows, "found@10").choose(balance=4, time=8)
    assert choice.measure == "found@10"
    assert choice.note == (
        "found@10 is 100% for 10 of 12 setups: among those 10 only, the one with more right answers first "
        "(found@1) leads, then the faster"
    )
    assert choice.picks["finds_the_most"] == "s9"  # found@1 0.92
    assert choice.picks["best_for_balance"] == "s0"  # within 4 points of found@10 (every s), the fastest
    assert choice.picks["best_for_time"] == "s0"  # graph (88%) and keyword (85%) are more than 8 points behind
    assert "more right answers first (found@1 0.920) than" in choice.reasons["finds_the_most"].text
    assert [r.key for r in ranked(rows, choice)][:10] == [f"s{i}" for i in range(9, -1, -1)]
    assert [r.key for r in ranked(rows, choice)][10:] == ["graph", "keyword"]  # by found@10, not by found@1


def test_the_issues_four_retrievers_the_most_found_wins_whatever_found_at_1_says():
    """96%, 96%, 92% and 88% found in the top 10 (25 questions): the pick is one at 96%, never the one at 92%
    with the best found@1, and the table ranks both 96% setups above it."""
    rows = [S("a", 0.96, at1=0.60, ms=30), S("b", 0.96, at1=0.64, ms=40), S("c", 0.92, at1=0.80, ms=20)]
    rows.append(S("d", 0.88, at1=0.84, ms=5))
    chosen = picks(rows, balance=4, time=8)
    assert chosen == {"finds_the_most": "b", "best_for_balance": "c", "best_for_time": "d"}
    assert [r.key for r in ranked(rows)] == ["b", "a", "c", "d"]


def by_hand(rows, n, balance, time):
    """The seed's rule written out in whole questions, as a reader of it would: the most found in the top 10;
    a tie to more found first, then to the faster (then the name); the fastest within the points of it."""
    count = {r.key: round(r.primary * n) for r in rows if not r.failed}
    first = {r.key: round(r.at1 * n) for r in rows if not r.failed}
    ms = {r.key: r.median_ms for r in rows if not r.failed}
    if not count:
        return dict.fromkeys(("finds_the_most", "best_for_balance", "best_for_time"))
    most = sorted(count, key=lambda k: (-count[k], -first[k], ms[k], k))[0]

    def fastest_within(points):
        near = [k for k in count if count[k] * 100 >= count[most] * 100 - points * n]
        return sorted(near, key=lambda k: (ms[k], -count[k], -first[k], k))[0]

    return {"finds_the_most": most, "best_for_balance": fastest_within(balance), "best_for_time": fastest_within(time)}


def test_the_picks_follow_the_seeds_rule_in_every_pattern_of_ties():
    """4,000 drawn runs of 2 to 7 setups over 25 questions, drawn to tie: found@10 from three counts, found@1
    from two, times from three values (so setups tie on one, two or all three), a failed setup now and then;
    the picks equal the rule written out by hand in every one, and the table's first row is the pick."""
    import random

    draw, n = random.Random(5), 25
    patterns = set()
    for _ in range(4000):
        tops = draw.sample(range(18, 26), 3)
        rows = []
        for i in range(draw.randint(2, 7)):
            found = draw.choice(tops)
            rows.append(
                S(
                    f"s{draw.randint(0, 99):02d}-{i}",
                    found / n,
                    at1=draw.choice((found - 6, found - 3)) / n,
                    ms=draw.choice((4.0, 9.0, 30.0)),
                    failed=draw.random() < 0.05,
                )
            )
        balance, time = draw.choice((0, 4, 8)), draw.choice((4, 8, 12))
        chosen = picks(rows, balance=balance, time=time)
        assert chosen == by_hand(rows, n, balance, time), rows
        assert chosen["finds_the_most"] is None or ranked(rows)[0].key == chosen["finds_the_most"]
        alive = [r for r in rows if not r.failed]
        if alive:
            best = max(r.primary for r in alive)
            level = [r for r in alive if r.primary == best]
            patterns.add(
                (
                    len(level) > 1,
                    len({r.at1 for r in level}) < len(level),
                    len({r.median_ms for r in level}) < len(level),
                )
            )
    assert patterns >= {(False, False, False), (True, False, False), (True, True, False), (True, True, True)}
