"""Qdrant beyond the conformance suite: reuse and rebuild by fingerprint, BM25 sparse weights, the
ColBERT-style multivector, a server's retries and refused keys (over HTTP, against a recording server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vx_eval.core.contracts.engine import LATE_PREFIX, OpenContext, Query
from vx_eval.core.errors import ConfigError, EngineError
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.plugins.engines import qdrant
from vx_eval.plugins.engines.qdrant import QdrantEngine, QdrantOptions
from vx_eval.plugins.engines.qdrant_calls import bm25_documents, bm25_query, term_id
from vx_eval.testing.conformance import collection
from vx_eval.testing.replay import Replay

from ..conftest import Recording


@pytest.fixture(scope="module")
def corpus() -> FileCorpus:
    docs, _ = collection()
    return FileCorpus("".join(json.dumps(d) + "\n" for d in docs[:12]).encode(), "docs.jsonl")


@pytest.fixture
def models(plugins) -> Models:
    return Models(plugins.models)


def open_qdrant(tmp_path: Path, corpus, models, progress=None, **options):
    opts = QdrantOptions.model_validate(
        {"path": str(tmp_path / "q"), "dense_models": ["minilm"], "cache": str(tmp_path / "emb.db"), **options}
    )
    context = OpenContext("Qdrant", tmp_path, corpus, progress or Recording(), models)
    return QdrantEngine().open(opts, context)


def test_a_folder_is_reused_while_the_corpus_and_settings_match_and_built_again_when_they_change(
    tmp_path, corpus, models
):
    first = Recording()
    open_qdrant(tmp_path, corpus, models, first).close()
    assert any(s.startswith("Writing Qdrant") for s in first.started)
    again = Recording()
    handle = open_qdrant(tmp_path, corpus, models, again)
    assert not any(s.startswith("Writing") for s in again.started) and handle.describe()["documents"] == 12
    handle.close()
    changed = Recording()
    open_qdrant(tmp_path, corpus, models, changed, chunk_words=20, chunk_overlap=5).close()
    assert any("changed" in n for n in changed.notes) and any(s.startswith("Writing") for s in changed.started)


def test_a_build_that_crashes_leaves_no_fingerprint_so_the_next_run_builds_again(tmp_path, corpus, models, monkeypatch):
    def crash(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(qdrant, "build_words", crash)
    with pytest.raises(RuntimeError, match="disk full"):
        open_qdrant(tmp_path, corpus, models)
    monkeypatch.undo()
    progress = Recording()
    handle = open_qdrant(tmp_path, corpus, models, progress)
    assert any(s.startswith("Writing") for s in progress.started)
    assert handle.describe()["fingerprint"] is not None
    handle.close()


def test_bm25_weights_saturate_term_frequency_normalise_length_and_stem():
    short, long_, other = bm25_documents(
        ["loan payments loan", "loan " + " ".join(f"filler{i}" for i in range(30)), "the wire transfer"]
    )
    weight = dict(zip(*short, strict=True))
    assert weight[term_id("loan")] > dict(zip(*long_, strict=True))[term_id("loan")]  # shorter document, more weight
    assert weight[term_id("loan")] < 2 * weight[term_id("payment")]  # tf 2 is less than twice tf 1
    assert term_id("the") not in dict(zip(*other, strict=True))  # stop words dropped
    assert bm25_query("Loan PAYMENT?")[0] == sorted({term_id("loan"), term_id("payment")})
    assert bm25_query("the of and") == ([], [])


def test_the_multivector_maxsim_reorders_the_candidates(tmp_path, corpus, models):
    handle = open_qdrant(tmp_path, corpus, models, mode="ultimate", late_model="colbert-small")
    assert LATE_PREFIX + "colbert-small" in handle.capabilities()
    question = "Can a customer postpone a loan payment after a wildfire?"
    candidates = tuple(reversed(handle.search(Query(question, 8, "dense:minilm"))))
    rescored = handle.search(Query(question, 8, LATE_PREFIX + "colbert-small", candidates))
    assert {h.chunk_id for h in rescored} == {h.chunk_id for h in candidates}
    assert [h.chunk_id for h in rescored] != [h.chunk_id for h in candidates]
    assert [h.score for h in rescored] == sorted((h.score for h in rescored), reverse=True)
    handle.close()


def test_a_server_is_retried_when_busy_and_a_refused_key_is_one_clear_error(tmp_path, models, monkeypatch):
    monkeypatch.setenv("VX_TEST_QDRANT_KEY", "qdrant-key-not-to-be-shown")
    exists = {"result": {"exists": False}, "status": "ok", "time": 0.0001}
    with Replay() as server:
        server.route("GET", r"/collections/absent/exists", (503, {"status": {"error": "busy"}}), (200, exists))
        opts = QdrantOptions.model_validate(
            {"url": server.url, "api_key": {"env": "VX_TEST_QDRANT_KEY"}, "collection": "absent", "retries": 2}
        )
        with pytest.raises(EngineError, match="has no collection 'absent'"):
            QdrantEngine().open(opts, OpenContext("Qdrant", tmp_path, None, models=models))
        calls = [r for r in server.requests if r.path.endswith("/exists")]
        assert len(calls) == 2 and calls[0].headers["api-key"] == "qdrant-key-not-to-be-shown"
    with Replay() as server:
        server.route("GET", r"/collections/absent/exists", (401, {"status": {"error": "Invalid api-key"}}))
        with pytest.raises(EngineError) as caught:
            QdrantEngine().open(
                opts.model_copy(update={"url": server.url}), OpenContext("Qdrant", tmp_path, None, models=models)
            )
        assert "refused the request (401)" in str(caught.value) and "not-to-be-shown" not in str(caught.value)
        assert len(server.requests) == 1


def test_exactly_one_place_is_named():
    with pytest.raises(ValueError, match="exactly one of location"):
        QdrantOptions.model_validate({"location": ":memory:", "path": "q"})
    with pytest.raises(ValueError, match="exactly one of location"):
        QdrantOptions.model_validate({})
    with pytest.raises(ValueError, match="location must be ':memory:'"):
        QdrantOptions.model_validate({"location": "somewhere"})


def test_discover_reads_a_folders_collection_and_its_options_search_it_as_it_is(tmp_path, corpus, models):
    open_qdrant(tmp_path, corpus, models, collection="docs", mode="ultimate", late_model="colbert-small").close()
    found = QdrantEngine().discover(f"{tmp_path / 'q'}/docs")
    options = found.options
    assert isinstance(options, QdrantOptions) and found.name == "docs"
    assert (options.path, options.collection, options.build) == ((tmp_path / "q").resolve(), "docs", "never")
    assert (options.dense_models, options.late_model, options.mode, options.sparse) == (
        ["minilm"], "colbert-small", "ultimate", True
    )  # fmt: skip
    assert found.found[0].endswith("points in collection docs (built by vx-eval)")
    assert found.found[1] == "dense vectors: minilm (384 dims)"
    assert found.found[2] == "BM25 sparse vector: yes; multivectors: colbert-small"
    # no corpus and no words index: Qdrant's own BM25, dense and ColBERT-style, from what the collection holds
    handle = QdrantEngine().open(options, OpenContext("docs", tmp_path / "elsewhere", None, Recording(), models))
    assert {"dense:minilm", "sparse:bm25", LATE_PREFIX + "colbert-small"} <= handle.capabilities()
    assert "keyword" not in handle.capabilities()
    hits = handle.search(Query("Can a customer postpone a loan payment after a wildfire?", 5, "sparse:bm25"))
    assert len(hits) == 5 and all(h.doc_id for h in hits)
    handle.close()


def test_discover_says_what_is_wrong_with_a_target_in_one_line(tmp_path, corpus, models, monkeypatch):
    open_qdrant(tmp_path, corpus, models, collection="docs").close()
    with pytest.raises(EngineError, match=r"has no collection 'nosuch'"):
        QdrantEngine().discover(f"{tmp_path / 'q'}/nosuch")
    with pytest.raises(EngineError, match=r"no folder .*missing"):
        QdrantEngine().discover(f"{tmp_path / 'missing'}/docs")
    with pytest.raises(ConfigError, match=r"write qdrant:ADDRESS/NAME"):
        QdrantEngine().discover("docs")
    with pytest.raises(ConfigError, match=r"carries a password") as caught:
        QdrantEngine().discover("http://admin:Pa55-word-x@127.0.0.1:6333/docs")
    assert "Pa55-word-x" not in str(caught.value)
    monkeypatch.setenv("QDRANT_API_KEY", "discovery-key-not-shown")
    exists = {"result": {"exists": False}, "status": "ok", "time": 0.0001}
    with Replay() as server:
        server.route("GET", r"/collections/docs/exists", (503, {"status": {"error": "busy"}}), (200, exists))
        with pytest.raises(EngineError, match=r"--target qdrant:.*has no collection 'docs'"):
            QdrantEngine().discover(f"{server.url}/docs")
        asked = [r.headers["api-key"] for r in server.requests if r.path.endswith("/exists")]
        assert asked == ["discovery-key-not-shown"] * 2  # the busy answer tried again, the key by the environment
