"""Every method of the embedded engine on the quickstart collection: modes, keys, composition, reuse."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from vx_eval.core.config.experiment import load_config
from vx_eval.core.contracts.engine import LATE_PREFIX, Hit, Query, reuse_allowed
from vx_eval.core.run.selection import enumerate_setups
from vx_eval.core.run.targets import open_targets
from vx_eval.core.stores import Stores
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.plugins.engines.sqlite.graph import EntityGraph, build, entities_of
from vx_eval.plugins.setups.compose import Reranker, rrf
from vx_eval.plugins.setups.rerank import ultimate_search

from ..conftest import REPO


class Bars:
    def __init__(self):
        self.bars = []

    def start(self, description, total):
        self.bars.append(description)
        return lambda n: None

    def note(self, message):
        pass


@pytest.fixture(scope="module")
def folder(tmp_path_factory, shared_cache) -> Path:
    root = tmp_path_factory.mktemp("methods")
    shutil.copytree(REPO / "configs" / "quickstart", root / "quickstart")
    (root / "cache").symlink_to(shared_cache)
    return root


def write(folder: Path, mode: str, **options) -> Path:
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config["targets"][0]["options"] = {
        "path": f".vx/{mode}.db",
        "mode": mode,
        "cache": "cache/embeddings.db",
        "dense_models": ["minilm", "bge-small"],
        **options,
    }
    config["save_to"] = "runs"
    config["models"] = {"scores": "cache/scores.db"}
    path = folder / f"{mode}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def targets_of(path: Path, plugins, progress=None):
    return open_targets(load_config(path, plugins), plugins, Stores(plugins), progress or Bars())


EXPECTED = {
    "dense": ["local.dense.bge-small", "local.dense.bge-small+minilm", "local.dense.minilm", "local.keyword"],
    "hybrid": [
        "local.hybrid.bge-small",
        "local.hybrid.bge-small+minilm",
        "local.hybrid.minilm",
        "local.hybrid_reranked.bge-small",
        "local.hybrid_reranked.bge-small+minilm",
        "local.hybrid_reranked.minilm",
    ],
    "ultimate": ["local.ultimate.bge-small+minilm"],
    "graph": ["local.graph"],
}


@pytest.mark.parametrize("mode", ["dense", "hybrid", "ultimate", "graph"])
def test_a_mode_limits_the_setups_as_the_seed_says(folder, plugins, mode):
    targets = targets_of(write(folder, mode), plugins)
    keys = sorted(s.key for s in enumerate_setups(targets, plugins))
    levels = ["dense", "hybrid", "ultimate", "graph"]
    assert keys == sorted(k for level in levels[: levels.index(mode) + 1] for k in EXPECTED[level])


def test_labels_are_readable_and_methods_models_rankers_are_recorded(folder, plugins):
    setups = {s.key: s for s in enumerate_setups(targets_of(write(folder, "graph"), plugins), plugins)}
    reranked = setups["local.hybrid_reranked.bge-small+minilm"]
    assert reranked.label == "Hybrid, reranked by ms-marco MiniLM — BGE + MiniLM"
    assert (reranked.method, reranked.models, reranked.ranker) == ("hybrid", ("bge-small", "minilm"), "ms-marco-minilm")
    assert setups["local.ultimate.bge-small+minilm"].label.startswith("Hybrid → ColBERT-style (approximate) →")
    assert setups["local.dense.minilm"].label == "Dense — MiniLM"


def test_embeddings_are_computed_once_and_reused_by_content(folder, plugins):
    options = {"path": ".vx/cache-test.db", "cache": ".vx/cache-test-embeddings.db"}
    first = Bars()
    targets_of(write(folder, "ultimate", **options), plugins, first)
    assert [b for b in first.bars if b.startswith("Embedding")] == [
        "Embedding Local · BGE",
        "Embedding Local · MiniLM",
        "Embedding Local · ColBERT-style (approximate)",
    ]
    reused = Bars()
    targets_of(write(folder, "ultimate", tokenizer="unicode61", **options), plugins, reused)
    assert "Indexing Local" in reused.bars  # a setting changed: indexed again...
    assert not [b for b in reused.bars if b.startswith("Embedding")]  # ...with every vector from the cache
    untouched = Bars()
    targets_of(write(folder, "ultimate", tokenizer="unicode61", **options), plugins, untouched)
    assert untouched.bars == []  # nothing changed: the index is reused as it is


def test_late_interaction_shapes_the_ultimate_ranking(folder, plugins):
    (target,) = targets_of(write(folder, "ultimate"), plugins)
    late = next(c.removeprefix(LATE_PREFIX) for c in target.capabilities if c.startswith(LATE_PREFIX))
    changed = 0
    for question in [
        "My wallet was taken on the bus, what do I do about my plastic?",
        "Why did my monthly house payment go up when my rate is fixed?",
        "What does it cost to pull cash from a machine that is not yours?",
    ]:
        with_late = [h.chunk_id for h in ultimate_search(target, None, late, question, 20)]
        without = [h.chunk_id for h in ultimate_search(target, None, None, question, 20)]
        assert sorted(with_late) != [] and set(with_late) <= set(
            h.chunk_id for h in ultimate_search(target, None, None, question, 100)
        )
        changed += with_late != without
    assert changed >= 2  # MaxSim really reorders the candidates the cross-encoder reads


def test_the_cross_encoder_reuses_scores_only_for_untimed_searches(folder, plugins):
    (target,) = targets_of(write(folder, "hybrid"), plugins)
    calls = []
    model = target.models.get("ms-marco-minilm", "reranker")
    original = model.score

    def counting(query, passages):
        calls.append(len(passages))
        return original(query, passages)

    model.score = counting
    try:
        reranker = Reranker(target, "ms-marco-minilm")
        hits = target.handle.search(Query("lost card", 10))
        reranker.rerank("lost card", hits, 5, 10)
        reranker.rerank("lost card", hits, 5, 10)  # timed: computed again
        token = reuse_allowed.set(True)
        reranked = reranker.rerank("lost card", hits, 5, 10)  # untimed: reused
        reuse_allowed.reset(token)
    finally:
        model.score = original
    assert calls == [5, 5]
    assert reranked[0].doc_id == "card-lost" and [h.score for h in reranked] == sorted(
        (h.score for h in reranked), reverse=True
    )


def test_rrf_sums_reciprocal_ranks():
    a = [Hit("x", 1, chunk_id="x"), Hit("y", 1, chunk_id="y")]
    b = [Hit("y", 1, chunk_id="y"), Hit("z", 1, chunk_id="z")]
    fused = rrf([a, b], 10, constant=60)
    assert [h.chunk_id for h in fused] == ["y", "x", "z"]
    assert fused[0].score == pytest.approx(1 / 62 + 1 / 61)


def test_entities_and_graph_expansion():
    assert entities_of("The BRCA1 gene and IL-6 levels. Patients with Crohn Disease had TNF.") == {
        "brca1",
        "il-6",
        "crohn",
        "disease",
        "crohn disease",
        "tnf",
    }
    chunks = [
        (1, "TNF drives Crohn inflammation."),
        (2, "TNF and IL-6 in Crohn patients."),
        (3, "IL-6 rises."),
        (4, "Unrelated text about Loans."),
        (5, "More about Loans and IL-6."),
    ]
    df, edges = build(chunks)
    graph = EntityGraph(df, edges, len(chunks))
    assert graph.seeds("what does tnf do in crohn") == ["tnf", "crohn"]
    weights = graph.expand(["tnf"])
    assert weights["tnf"] == 1.0 and "crohn" in weights
    assert [row for row, _ in graph.search("tnf", 10)][:2] == [1, 2]


@pytest.mark.slow
def test_a_timing_sample_times_only_its_questions_and_says_so(folder, plugins):
    config = yaml.safe_load(write(folder, "hybrid").read_text())
    config["evaluation"]["timing_sample"] = 5
    path = folder / "sampled.yaml"
    path.write_text(yaml.safe_dump(config))
    report = run_experiment(load_config(path, plugins), plugins, RunOptions(save=False)).report.model_dump(mode="json")
    timing = report["settings"]["timing"]
    assert {k: timing[k] for k in ("questions_timed", "questions", "sample", "concurrent")} == {
        "questions_timed": 5,
        "questions": 42,
        "sample": "sample (evaluation.seed 0)",
        "concurrent": 1,
    }
    assert timing["cores"] >= 1 and set(timing["unsteady"]) <= {s["key"] for s in report["setups"]}
    for setup in report["setups"]:
        assert sum(t is not None for t in setup["per_question"]["times_ms"]) == 5
        assert setup["counts"]["evaluated"] == 42


def test_convex_fusion_normalises_each_list_and_weighs_it():
    from vx_eval.plugins.setups.compose import convex

    keyword = [Hit("a", 12.0, chunk_id="a"), Hit("b", 6.0, chunk_id="b"), Hit("c", 2.0, chunk_id="c")]
    dense = [Hit("c", 0.9, chunk_id="c"), Hit("a", 0.5, chunk_id="a")]
    fused = convex([keyword, dense], 10, [0.5, 0.5])
    # a: 0.5*1 + 0.5*0 ; c: 0.5*0 + 0.5*1 ; b: 0.5*0.4
    assert [(h.chunk_id, round(h.score, 3)) for h in fused] == [("a", 0.5), ("c", 0.5), ("b", 0.2)]
    assert convex([keyword, dense], 10, [0.2, 0.8])[0].chunk_id == "c"
