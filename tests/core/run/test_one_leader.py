"""What a run prints agrees with itself: the first row is the pick, the graded block and the lists name no
other leader, the measure that decided the picks draws the frontier, a judge never picks its own ranking,
and a lead inside the noise is said to be one."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from vx_eval.core.contracts.golden import Question
from vx_eval.core.judging.grading import circular_setups, setup_relations, writer_families
from vx_eval.core.models.families import families_of, family_of
from vx_eval.core.report.picks import Scored, frontier
from vx_eval.core.report.schema import Counts, Graded, PerQuestion, Settings, SetupResult, Times
from vx_eval.core.run import assembly, ranking

SETTINGS = Settings(primary="dcg@10", metrics=["dcg@10", "found@1", "mrr"], bootstrap=200, permutations=2000)


def setup(key, dcg, ms, at1=None, ranker=None):
    dcg = [float(v) for v in dcg]
    at1 = [float(v > 0) for v in dcg] if at1 is None else at1
    n = len(dcg)
    return SetupResult(
        key=key,
        target="local",
        engine="sqlite",
        method=key.split(".")[0],
        ranker=ranker,
        label=key,
        summary={"dcg@10": float(np.mean(dcg)), "found@1": float(np.mean(at1)), "mrr": float(np.mean(at1))},
        times_ms=Times(median=ms),
        per_question=PerQuestion(
            metrics={"dcg@10": dcg, "found@1": at1, "mrr": at1},
            times_ms=[ms] * n,
            grades=[[3] if v else [0] for v in dcg],
        ),
        counts=Counts(total=n, evaluated=n),
        graded=Graded(dcg=float(np.mean(dcg)), dcg_per_question=dcg),
    )


def test_the_first_row_is_the_pick_when_setups_are_level_on_every_measure():
    """Level on every measure and within the noise on time: the pick is the fastest, and it is row 1 (a run
    once marked row 1 tied while the star went to row 2 by name)."""
    same = [3, 1, 0, 2, 1, 3, 0, 2]
    setups = [setup("hybrid.b", same, ms=6.5), setup("hybrid.a", same, ms=20.0), setup("dense.a", same, ms=40.0)]
    ranked = ranking.rank(setups, SETTINGS)
    assert ranked.setups[0].key == ranked.picks.finds_the_most == "hybrid.b"
    dashboard = assembly.graded_questions(ranked.setups, [f"q{i}" for i in range(8)], ranked.picks.finds_the_most)
    assert dashboard is not None and dashboard.best.key == "hybrid.b"


def test_strongest_and_weakest_share_no_question_and_an_unfound_question_is_never_strongest():
    dcg = [6.5, 5.5, 4.5, 3.0, 1.0, 1.0, 0.0]
    (only,) = ranking.rank([setup("keyword", dcg, ms=1.0)], SETTINGS).setups
    ids = [f"q{i}" for i in range(7)]
    found_by = [0, 1, 1, 1, 1, 1, 0]  # q0 scores high on grade-1 results, but nothing relevant is found
    dashboard = assembly.graded_questions([only], ids, "keyword", found_by)
    assert dashboard is not None
    strongest, weakest = [q.id for q in dashboard.strongest], [q.id for q in dashboard.weakest]
    assert "q0" not in strongest and not set(strongest) & set(weakest)
    assert strongest == ["q1", "q2", "q3"] and weakest[0] == "q6"


def test_the_frontier_is_drawn_on_the_primary_the_picks_follow():
    """found@10 level for every setup: nothing finds more than the fastest, so it alone is on the frontier
    (found@1 breaks the tie for the pick, but the frontier is found@10 against time, as the seed draws it)."""
    rows = [Scored("keyword", 1.0, 0.5, 1.0), Scored("dense", 1.0, 0.8, 5.0), Scored("hybrid", 1.0, 0.9, 9.0)]
    assert frontier(rows) == ["keyword"]


def test_a_setup_the_judges_own_model_reranks_is_circular_ranked_last_and_never_picked():
    judge = SimpleNamespace(describe=lambda: {"judge": "cross-encoder", "model": "ms-marco-minilm"})
    models = SimpleNamespace(
        cache_space=lambda name: "ce" if name in ("ms-marco-minilm", "my-ce") else name,
        family=lambda name: family_of(name),
        families=lambda name: families_of(name),
    )
    runs = [
        SimpleNamespace(setup=SimpleNamespace(key="hybrid_reranked.a", ranker="my-ce", models=())),  # renamed
        SimpleNamespace(setup=SimpleNamespace(key="hybrid.a", ranker=None, models=("bge-small",))),
        SimpleNamespace(setup=SimpleNamespace(key="reranked.other", ranker="bge-reranker", models=())),
        SimpleNamespace(setup=SimpleNamespace(key="dense.minilm", ranker=None, models=("minilm",))),  # its family
    ]
    circular = circular_setups(runs, judge, models)
    assert circular == ["dense.minilm", "hybrid_reranked.a"]
    # the judge's own model under another name is circular; a model of its family, related
    relations = setup_relations(runs, judge, models)
    assert relations == {"dense.minilm": "related", "hybrid_reranked.a": "circular"}
    assert circular_setups(runs, SimpleNamespace(describe=lambda: {"model": "qwen2.5-7b"}), models) == []
    # questions a BGE model drafted favour the setups a BGE model embeds or reranks: circular too
    qwen = SimpleNamespace(describe=lambda: {"model": "qwen2.5-7b"})
    assert circular_setups(runs, qwen, models, ["BGE"]) == ["hybrid.a", "reranked.other"]
    drafted = [Question("q0", "a?", ("d1",), drafted_by="bge-writer"), Question("q1", "b?", ("d2",))]
    assert writer_families(drafted, models) == ["BGE"] and writer_families(drafted[1:], models) == []
    setups = [setup("hybrid_reranked.a", [3, 3, 3, 3, 3, 3], ms=250), setup("hybrid.a", [3, 2, 0, 1, 3, 2], ms=6)]
    ranked = ranking.rank(setups, SETTINGS, circular)
    assert ranked.picks.finds_the_most == "hybrid.a" and "hybrid_reranked.a" not in dict(ranked.picks.items()).values()
    assert [s.key for s in ranked.setups] == ["hybrid.a", "hybrid_reranked.a"]
    ids = [f"q{i}" for i in range(6)]
    dashboard = assembly.graded_questions(ranked.setups, ids, ranked.picks.finds_the_most, left_out=circular)
    assert dashboard is not None and dashboard.best.key == "hybrid.a"  # not the circular setup's higher DCG


def test_a_lead_inside_the_noise_is_said_with_the_questions_that_would_settle_it():
    leader = [3, 2, 3, 1, 2, 3, 0, 2, 3, 1]
    close = [3, 2, 2, 1, 2, 3, 0, 2, 3, 1]
    far = [0, 0, 1, 0, 0, 0, 0, 1, 0, 0]
    ranked = ranking.rank([setup("a", leader, 5), setup("b", close, 5), setup("c", far, 5)], SETTINGS)
    sure = ranked.picking.sure
    assert sure is not None and "cannot tell a from 1 other setup (b)" in sure and "questions would tell it" in sure
    alone = ranking.rank([setup("a", [3, 3, 3, 3, 3, 3, 3, 3, 3, 3], 5), setup("c", far, 5)], SETTINGS)
    assert alone.picking.sure is None


def test_a_run_that_is_not_sure_picks_for_balance_and_time_only_within_the_group_it_cannot_separate():
    """A leader in doubt (a rival level with it within the noise) and a fast setup surely worse than it on
    every question, yet within the balance points: the balance and time picks come from the group the paired
    test cannot separate, and the run names that group's fastest member; with no paired test (permutations
    0) the fast setup is picked as before."""
    rng = np.random.default_rng(0)
    leader = rng.uniform(0.5, 1.0, 40)
    level = leader - 0.01 + np.tile([-0.1, 0.1], 20)  # a rival in the noise: differs both ways
    worse = leader - 0.03  # surely worse (every question), yet within 4 points
    setups = [setup("a", leader, ms=50.0), setup("b", level, ms=20.0), setup("c", worse, ms=1.0)]
    ranked = ranking.rank(setups, SETTINGS)
    assert ranked.picks.finds_the_most == "a"
    assert {s.key for s in ranked.setups if s.tied_with_best} == {"a", "b"}
    assert ranked.picks.best_for_balance == ranked.picks.best_for_time == "b"
    sure = ranked.picking.sure or ""
    assert "the 2 setups cannot be told apart here, the fastest of them is b" in sure
    assert (
        "among the 2 setups a paired test cannot tell from the leader"
        in ranked.picking.reasons["best_for_balance"].text
    )
    untested = ranking.rank(setups, SETTINGS.model_copy(update={"permutations": 0}))
    assert untested.picks.best_for_balance == untested.picks.best_for_time == "c"


def test_picks_follow_peoples_correction_of_the_judge():
    """The judge's leader is not the corrected best: the corrected best finds the most, and a balance or time
    pick people's grades tell from it is made again as the fastest of those they cannot."""
    from vx_eval.core.report.views import Corrected, CorrectedLead, CorrectedMean

    setups = [
        setup("keyword.a", [1, 1, 1, 1, 1, 1], ms=1),
        setup("dense.a", [3, 2, 3, 2, 3, 2], ms=20),
        setup("hybrid.a", [3, 3, 3, 2, 3, 3], ms=30),
    ]
    ranked = ranking.rank(setups, SETTINGS)
    assert ranked.picks.finds_the_most == "hybrid.a"
    ranked = replace(ranked, picks=ranked.picks.model_copy(update={"best_for_time": "keyword.a"}))
    mean = CorrectedMean(mean=0.5, low=0.4, high=0.6, weight=0.8)
    fixed = Corrected(
        measure="dcg@10",
        labelled=30,
        unlabelled=70,
        leader="hybrid.a",
        setups={"keyword.a": mean, "dense.a": mean, "hybrid.a": mean},
        leads={
            "hybrid.a": CorrectedLead(mean=0.01, low=-0.02, high=0.04),  # level with the corrected best
            "keyword.a": CorrectedLead(mean=0.30, low=0.20, high=0.40, settle_with=30),  # surely worse
        },
        best="dense.a",
    )
    assert fixed.level_with_best() == ["dense.a", "hybrid.a"]
    fixed_ranking = ranking.picked_by_people(ranked, fixed)
    chosen = fixed_ranking.picks
    assert chosen.finds_the_most == "dense.a" and chosen.best_for_time == "dense.a"  # the faster of the two
    assert chosen.best_for_balance in ("dense.a", "hybrid.a")
    reasons = fixed_ranking.picking.reasons
    assert "the judge alone put hybrid.a first" in reasons["finds_the_most"].text
    assert "keyword.a, is surely worse" in reasons["best_for_time"].text
    assert fixed_ranking.picking.corrected == fixed


def test_families_by_lineage_not_only_by_name():
    """multilingual-e5-small is an E5 model initialised from Multilingual-MiniLM: related to a MiniLM judge,
    which its name alone does not say; all-mpnet-base-v2 shares all-MiniLM's training pairs."""
    assert "MiniLM" in families_of("intfloat/multilingual-e5-small") and family_of("multilingual-e5-small") == "E5"
    assert families_of("sentence-transformers/all-mpnet-base-v2") & families_of("all-MiniLM-L6-v2")
    assert not families_of("bge-small") & families_of("ms-marco-minilm")
    judge = SimpleNamespace(describe=lambda: {"judge": "cross-encoder", "model": "ms-marco-minilm"})
    runs = [SimpleNamespace(setup=SimpleNamespace(key="dense.e5", ranker=None, models=("multilingual-e5-small",)))]
    assert setup_relations(runs, judge, None) == {"dense.e5": "related"}
