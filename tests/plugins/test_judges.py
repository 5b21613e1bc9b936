"""The cross-encoder judge against TREC DL 2019's human grades, on a slice (the whole collection is the
benchmark's: `python benchmarks/judge_check.py`)."""

from __future__ import annotations

import pytest
import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.usecases.judge_check import check_judge

from ..conftest import shared

# Measured on this slice (8 judged queries, 200 passages + every judged one, keyword / MiniLM / hybrid /
# hybrid reranked): quadratic kappa 0.203, linear 0.184, Kendall's tau 0.667 (4 setups: one pair swapped).
KAPPA_FLOOR = 0.19
TAU_FLOOR = 0.66


@pytest.mark.slow
def test_the_cross_encoder_judge_agrees_with_trec_assessors_above_the_measured_floor(tmp_path, plugins, shared_cache):
    dl19 = shared("msmarco-dl19-5k")
    config = tmp_path / "dl19.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "name": "dl19-slice",
                "golden": {"path": str(dl19), "format": "beir", "split": "test", "limit": 8},
                "corpus": {"path": str(dl19), "limit": 200},
                "save_to": "runs",
                "targets": [
                    {
                        "name": "Local",
                        "engine": "sqlite",
                        "options": {
                            "path": ".vx/dl19.db",
                            "mode": "hybrid",
                            "dense_models": ["minilm"],
                            "chunk_words": 0,
                            "cache": str(shared_cache / "embeddings.db"),
                        },
                    }
                ],
                "evaluation": {"metrics": ["found@10", "ndcg@10"], "depth": 20, "relevance_threshold": 2},
                "models": {"threads": 1, "scores": str(tmp_path / "scores.db")},
            }
        )
    )
    result = check_judge(load_config(config, plugins), plugins, "cross-encoder")
    agree, order = result.agreement, result.order
    assert agree.pairs > 100
    assert agree.kappa_quadratic >= KAPPA_FLOOR
    assert order.tau >= TAU_FLOOR
    keys = [s.key for s in order.setups]
    assert sorted(keys) == [
        "local.dense.minilm",
        "local.hybrid.minilm",
        "local.hybrid_reranked.minilm",
        "local.keyword",
    ]
    assert order.setups[-1].key == "local.keyword"  # people and judge agree keyword alone comes last
    judged_last = min(order.setups, key=lambda s: s.dcg_judge)
    assert judged_last.key == "local.keyword"
    assert result.pairs and all(p.raw is not None for p in result.pairs)
