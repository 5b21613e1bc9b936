"""Fusion tuning by cross-validation over kept rankings: the run's own setting re-fused from the kept
component lists equals the live hybrid, each fold's choice is scored only on its own questions, and the
tuned setup joins the ranking with its held-out numbers and real timed searches."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from vx_eval.core.run.tuning import folds_of
from vx_eval.python.commands import run

from ...conftest import quickstart_copy


@pytest.mark.slow
def test_tuning_is_scored_on_held_out_questions_and_joins_the_ranking(tmp_path, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache, keyword_only=False)
    data = yaml.safe_load(config.read_text())
    data["targets"][0]["options"].update(mode="hybrid", dense_models=["minilm"])
    data["search"] = {"candidates": 20}  # the components' depth: re-fusing the kept lists is the live fusion
    data["evaluation"].update(
        primary="ndcg@10",
        tune={
            "fusion": ["convex", "rrf"],
            "alpha": [0.0, 0.3, 0.5, 0.8, 1.0],
            "rrf_k": [10, 60],
            "folds": 3,
            "timed": 5,
        },
    )
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    only = ("local.keyword", "local.dense.minilm", "local.hybrid.minilm")
    report = run(config, save=False, only=only).report
    (tuned,) = report.tuning.hybrids
    live = report.setup("local.hybrid.minilm")
    assert tuned.default.fusion == "convex" and tuned.default.alpha == 0.5
    assert tuned.default_value == pytest.approx(live.summary["ndcg@10"], abs=1e-12)
    assert tuned.tried == 2 * 5 + 5 and tuned.questions == 42 and len(tuned.folds) == 3
    assert sum(f.questions for f in tuned.folds) == 42
    assert tuned.in_sample_value >= tuned.default_value  # the default is among the settings tried
    assert tuned.overstated == pytest.approx(tuned.in_sample_value - tuned.held_out)
    assert tuned.held_out_ci[0] <= tuned.held_out <= tuned.held_out_ci[1]
    assert 1 / 3 <= tuned.stable <= 1
    assert tuned.config_lines.startswith("search: {fusion: ")
    setup = report.setup("local.hybrid_tuned.minilm")
    assert setup.method == "hybrid_tuned" and "held-out" in setup.label
    assert setup.summary["ndcg@10"] == pytest.approx(tuned.held_out)
    assert sum(t is not None for t in setup.per_question.times_ms) == tuned.timed == 5
    assert setup.times_ms.median is not None and setup.rank >= 1
    from vx_eval.html.render import render_page

    text = report.table(width=200)
    assert "tuned by 3-fold cross-validation over 42 questions (15 settings): held-out ndcg@10" in text
    assert tuned.config_lines in text and "optimistic" in text
    assert 'id="tuning-title"' in render_page(report)


def test_folds_are_seeded_and_as_equal_as_can_be():
    a, b = folds_of(42, 5, seed=3), folds_of(42, 5, seed=3)
    assert np.array_equal(a, b) and sorted(np.bincount(a)) == [8, 8, 8, 9, 9]
    assert not np.array_equal(a, folds_of(42, 5, seed=4))
