"""Elasticsearch: the exact requests for BM25, kNN (num_candidates), the rrf and linear retrievers and the
text-similarity reranker against a recording server speaking Elasticsearch's wire format (no real cluster
runs here); building, retries, refused credentials; the conformance suite live on ELASTICSEARCH_URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vx_eval.core.contracts.engine import (
    DENSE_PREFIX,
    FUSION,
    KEYWORD,
    SERVICE_RANKER_PREFIX,
    OpenContext,
    Query,
    server_time,
)
from vx_eval.core.contracts.models import DENSE
from vx_eval.core.errors import EngineError
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.plugins.engines.elasticsearch import ElasticsearchEngine, ElasticsearchOptions
from vx_eval.testing.conformance import EngineConformance
from vx_eval.testing.replay import Replay

INDEX = "docs"
PRODUCT = {"X-Elastic-Product": "Elasticsearch"}  # the client refuses a server that does not say it
HITS = {
    "took": 4,
    "timed_out": False,
    "hits": {
        "total": {"value": 2, "relation": "eq"},
        "hits": [
            {"_index": INDEX, "_id": "a::0::0", "_score": 0.9, "_source": {"doc_id": "a", "chunk_id": "a::0::0"}},
            {"_index": INDEX, "_id": "b::0::0", "_score": 0.4, "_source": {"doc_id": "b", "chunk_id": "b::0::0"}},
        ],
    },
}
MAPPING = {
    INDEX: {
        "mappings": {
            "_meta": {"fingerprint": "f" * 64, "format": 1},
            "properties": {
                "body": {"type": "text"},
                "doc_id": {"type": "keyword"},
                "vector_minilm": {"type": "dense_vector", "dims": 384, "similarity": "cosine"},
            },
        }
    }
}
DOCS = [
    {"id": "a", "title": "Loans", "text": "Defer a loan payment after a disaster."},
    {"id": "b", "title": "Wires", "text": "Send money abroad by wire."},
]
SOURCE = ["doc_id", "chunk_id", "page"]


@pytest.fixture
def models(plugins) -> Models:
    return Models(plugins.models)


def route(server: Replay, method: str, path: str, *answers) -> None:
    server.route(method, path, *answers, headers=PRODUCT)


def existing_index(server: Replay) -> None:
    route(server, "GET", "/", {"version": {"number": "9.1.0"}, "tagline": "You Know, for Search"})
    route(server, "HEAD", f"/{INDEX}", {})
    route(server, "GET", f"/{INDEX}/_mapping", MAPPING)
    route(server, "POST", f"/{INDEX}/_count", {"count": 2})
    route(server, "POST", f"/{INDEX}/_search", HITS)


def open_handle(server: Replay, models: Models, tmp_path: Path, **options):
    opts = ElasticsearchOptions(url=server.url, collection=INDEX, build="never", retries=1, **options)
    return ElasticsearchEngine().open(opts, OpenContext("Elasticsearch", tmp_path, None, models=models))


def vector_of(models: Models, text: str) -> list[float]:
    return [float(x) for x in models.get("minilm", DENSE).encode_queries([text])[0]]


def test_keyword_and_knn_send_exactly_these_bodies(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path, num_candidates=50)
        assert {KEYWORD, DENSE_PREFIX + "minilm", FUSION} <= handle.capabilities()
        text = "postpone a loan payment"
        hits = handle.search(Query(text, 5, KEYWORD))
        assert [h.doc_id for h in hits] == ["a", "b"]
        assert server.last("POST", f"/{INDEX}/_search").json == {
            "size": 5,
            "retriever": {"standard": {"query": {"match": {"body": {"query": text}}}}},
            "_source": SOURCE,
        }
        handle.search(Query(text, 5, DENSE_PREFIX + "minilm"))
        sent = server.last("POST", f"/{INDEX}/_search").json
        vector = sent["retriever"]["knn"].pop("query_vector")
        assert sent == {
            "size": 5,
            "retriever": {"knn": {"field": "vector_minilm", "k": 5, "num_candidates": 50}},
            "_source": SOURCE,
        }
        assert np.allclose(vector, vector_of(models, text), atol=1e-6)


def test_hybrid_is_the_clusters_rrf_or_linear_retriever(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        parts = (KEYWORD, DENSE_PREFIX + "minilm")
        handle.search(Query("loan", 8, FUSION, parts=parts, fusion="rrf", rrf_k=60))
        rrf = server.last("POST", f"/{INDEX}/_search").json["retriever"]["rrf"]
        assert rrf["rank_constant"] == 60 and rrf["rank_window_size"] == 100
        keyword, knn = rrf["retrievers"]
        assert keyword == {"standard": {"query": {"match": {"body": {"query": "loan"}}}}}
        assert knn["knn"]["field"] == "vector_minilm" and knn["knn"]["k"] == 8
        handle.search(Query("loan", 8, FUSION, parts=parts, fusion="convex", weights=(0.3, 0.7)))
        linear = server.last("POST", f"/{INDEX}/_search").json["retriever"]["linear"]
        assert [(r["weight"], r["normalizer"]) for r in linear["retrievers"]] == [(0.3, "minmax"), (0.7, "minmax")]


def test_a_cluster_refusing_retrievers_gets_fusion_done_here(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        refused = {"error": {"type": "x_content_parse_exception", "reason": "unknown retriever [rrf]"}, "status": 400}
        route(server, "POST", f"/{INDEX}/_search", (400, refused), (200, HITS))
        hits = handle.search(Query("loan", 5, FUSION, parts=(KEYWORD, DENSE_PREFIX + "minilm"), fusion="rrf"))
        assert {h.doc_id for h in hits} == {"a", "b"} and handle.retrievers is False
        bodies = [r.json for r in server.requests if r.path == f"/{INDEX}/_search"]
        assert "rrf" in bodies[0]["retriever"] and "standard" in bodies[1]["retriever"]


def test_text_similarity_reranker_wraps_the_hybrid(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path, inference_id="my-rerank")
        assert SERVICE_RANKER_PREFIX + "text-similarity" in handle.capabilities()
        query = Query("loan", 5, FUSION, parts=(KEYWORD, DENSE_PREFIX + "minilm"), ranker="text-similarity")
        handle.search(query)
        wrapped = server.last("POST", f"/{INDEX}/_search").json["retriever"]["text_similarity_reranker"]
        assert wrapped["inference_id"] == "my-rerank" and wrapped["inference_text"] == "loan"
        assert wrapped["field"] == "body" and "linear" in wrapped["retriever"]


def test_exact_knn_is_a_cosine_script_score(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path, exact=True)
        handle.search(Query("wire", 3, DENSE_PREFIX + "minilm"))
        query = server.last("POST", f"/{INDEX}/_search").json["retriever"]["standard"]["query"]
        script = query["script_score"]["script"]
        assert script["source"] == "cosineSimilarity(params.v, 'vector_minilm') + 1.0"
        assert np.allclose(script["params"]["v"], vector_of(models, "wire"), atol=1e-6)


def test_took_is_the_server_time(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        spent: list[float] = []
        token = server_time.set(spent)
        try:
            handle.search(Query("loan", 5, KEYWORD))
        finally:
            server_time.reset(token)
        assert spent == [4.0]


def test_building_writes_the_fingerprint_last(models, tmp_path):
    corpus = FileCorpus("".join(json.dumps(d) + "\n" for d in DOCS).encode(), "docs.jsonl")
    with Replay() as server:
        route(server, "HEAD", f"/{INDEX}", (404, {}))
        route(server, "PUT", f"/{INDEX}", {"acknowledged": True})
        route(server, "PUT", "/_bulk", {"took": 1, "errors": False, "items": []})
        route(server, "POST", "/_bulk", {"took": 1, "errors": False, "items": []})
        route(server, "POST", f"/{INDEX}/_refresh", {})
        route(server, "PUT", f"/{INDEX}/_mapping", {"acknowledged": True})
        route(server, "GET", f"/{INDEX}/_mapping", MAPPING)
        route(server, "POST", f"/{INDEX}/_count", {"count": 2})
        options = ElasticsearchOptions(
            url=server.url, collection=INDEX, dense_models=["minilm"], cache=tmp_path / "e.db"
        )
        ElasticsearchEngine().open(options, OpenContext("Elasticsearch", tmp_path, corpus, models=models))
        created = server.last("PUT", f"/{INDEX}").json
        assert created["mappings"]["properties"]["vector_minilm"] == {
            "type": "dense_vector",
            "dims": 384,
            "index": True,
            "similarity": "cosine",
        }
        assert "fingerprint" not in created["mappings"]["_meta"]
        order = [(r.method, r.path) for r in server.requests]
        bulk = next(i for i, (m, p) in enumerate(order) if p == "/_bulk")
        assert order.index(("PUT", f"/{INDEX}/_mapping")) > bulk
        meta = server.last("PUT", f"/{INDEX}/_mapping").json["_meta"]
        assert len(meta["fingerprint"]) == 64


def test_a_busy_cluster_is_retried_then_fails_in_one_line(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        route(server, "POST", f"/{INDEX}/_search", (503, {"error": "busy", "status": 503}), (200, HITS))
        assert [h.doc_id for h in handle.search(Query("loan", 5, KEYWORD))] == ["a", "b"]
        route(server, "POST", f"/{INDEX}/_search", (429, {"error": "too many requests", "status": 429}))
        with pytest.raises(EngineError, match=r"failed after 2 tries while searching"):
            handle.search(Query("loan", 5, KEYWORD))


def test_refused_credentials_are_one_line_without_the_key(models, tmp_path, monkeypatch):
    monkeypatch.setenv("VX_TEST_ES_KEY", "es-secret-key-123456")
    with Replay() as server:
        route(server, "HEAD", f"/{INDEX}", (401, {"error": "unauthorized", "status": 401}))
        opts = ElasticsearchOptions(
            url=server.url, collection=INDEX, build="never", api_key={"env": "VX_TEST_ES_KEY"}, retries=3
        )
        with pytest.raises(EngineError, match=r"refused the credentials \(401\)") as caught:
            ElasticsearchEngine().open(opts, OpenContext("Elasticsearch", tmp_path, None, models=models))
        assert "es-secret-key" not in str(caught.value)
        assert server.requests[0].headers["authorization"] == "ApiKey es-secret-key-123456"
        assert len(server.requests) == 1, "refused credentials are never retried"


@pytest.mark.skipif(
    not os.environ.get("ELASTICSEARCH_URL"), reason="live test: set ELASTICSEARCH_URL (+ ELASTIC_API_KEY)"
)
class TestElasticsearchLive(EngineConformance):
    """The conformance suite on a real cluster, exact kNN: the dense top 10 equals the embedded engine's."""

    engine = "elasticsearch"
    options = {
        "url": os.environ.get("ELASTICSEARCH_URL", ""),
        "collection": "vx-eval-conformance",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "exact": True,
        **({"api_key": {"env": "ELASTIC_API_KEY"}} if os.environ.get("ELASTIC_API_KEY") else {}),
    }
    absent_options = {**options, "collection": "vx-eval-absent", "build": "never"}
