"""Azure AI Search: the fourteen setups of one index, the exact request of each against a recording server
(responses shaped like the service's REST reference), building, the semantic configuration, retries,
refused keys; live tests on AZURE_SEARCH_ENDPOINT + AZURE_SEARCH_KEY."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import pytest

from vx_eval.core.contracts.engine import KEYWORD, OpenContext, Query, Target, server_time
from vx_eval.core.contracts.fields import SearchConfig
from vx_eval.core.contracts.models import DENSE
from vx_eval.core.errors import EngineError
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.core.run.selection import enumerate_setups
from vx_eval.plugins.engines.azure import AzureSearchEngine, AzureSearchOptions, key_of
from vx_eval.testing.conformance import EngineConformance
from vx_eval.testing.replay import Replay

INDEX = r"/indexes\('docs'\)"
SEARCH = INDEX + r"/docs/search\.post\.search"
KEY = "azure-key-not-to-be-shown"
RESULTS = {
    "value": [
        {"@search.score": 0.9, "@search.rerankerScore": 3.1, "doc_id": "a", "chunk_id": "a::0::0", "page": None},
        {"@search.score": 0.5, "@search.rerankerScore": 2.2, "doc_id": "b", "chunk_id": "b::0::0", "page": None},
    ]
}
PASSAGES = {
    "value": [
        {"@search.score": 1.0, "chunk_id": "a::0::0", "body": "Loans\nDefer a loan payment."},
        {"@search.score": 1.0, "chunk_id": "b::0::0", "body": "Wires\nSend money abroad."},
    ]
}


def definition(*, semantic: bool = True, description: str = "vx-eval fingerprint " + "f" * 64 + " format 1") -> dict:
    """An index as GET /indexes('docs') returns it: two vector sets, and a semantic configuration or none."""
    fields = [
        {"name": "id", "type": "Edm.String", "key": True, "filterable": True},
        {"name": "body", "type": "Edm.String", "searchable": True},
        {"name": "doc_id", "type": "Edm.String", "filterable": True},
        {"name": "chunk_id", "type": "Edm.String", "filterable": True},
        {"name": "first", "type": "Edm.Boolean", "filterable": True},
        {"name": "title", "type": "Edm.String", "searchable": True},
    ] + [
        {
            "name": f,
            "type": "Collection(Edm.Single)",
            "searchable": True,
            "dimensions": 384,
            "vectorSearchProfile": "vx-hnsw",
        }
        for f in ("vector_minilm", "vector_bge_small")
    ]
    body = {
        "name": "docs",
        "description": description,
        "fields": fields,
        "vectorSearch": {
            "algorithms": [{"name": "vx-hnsw-cosine", "kind": "hnsw", "hnswParameters": {"metric": "cosine"}}],
            "profiles": [{"name": "vx-hnsw", "algorithm": "vx-hnsw-cosine"}],
        },
    }
    if semantic:
        body["semantic"] = {
            "defaultConfiguration": "portal-config",
            "configurations": [
                {"name": "portal-config", "prioritizedFields": {"prioritizedContentFields": [{"fieldName": "body"}]}}
            ],
        }
    return body


@pytest.fixture
def models(plugins) -> Models:
    return Models(plugins.models)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("VX_TEST_AZURE_KEY", KEY)


def serve_index(server: Replay, index: dict) -> None:
    server.route("GET", INDEX, index)
    server.route("GET", INDEX + r"/docs/\$count", b"2")
    server.route("POST", SEARCH, RESULTS, headers={"elapsed-time": "12"})


def options(server: Replay, **extra) -> AzureSearchOptions:
    given = {"endpoint": server.url, "api_key": {"env": "VX_TEST_AZURE_KEY"}, "collection": "docs", "build": "never"}
    return AzureSearchOptions.model_validate(
        {**given, "mode": "hybrid", "dense_models": ["minilm", "bge-small"], "retries": 1, **extra}
    )


def open_target(server: Replay, models: Models, plugins, tmp_path: Path, **extra) -> Target:
    opts = options(server, **extra)
    handle = AzureSearchEngine().open(opts, OpenContext("Azure", tmp_path, None, models=models))
    return Target("Azure", "azure-search", handle, opts, models, SearchConfig())


def vector_of(models: Models, model: str, text: str) -> list[float]:
    return [float(x) for x in models.get(model, DENSE).encode_queries([text])[0]]


def test_one_index_with_two_vector_sets_and_a_semantic_configuration_gives_fourteen_setups(models, plugins, tmp_path):
    with Replay() as server:
        serve_index(server, definition())
        target = open_target(server, models, plugins, tmp_path)
        keys = sorted(s.key.removeprefix("azure.") for s in enumerate_setups([target], plugins))
    combos = ["bge-small", "minilm", "bge-small+minilm"]
    assert keys == sorted(
        ["keyword", "keyword_semantic"]
        + [f"{method}.{c}" for method in ("dense", "hybrid", "hybrid_reranked", "hybrid_semantic") for c in combos]
    )
    assert len(keys) == 14


def test_every_setup_sends_exactly_this_request(models, plugins, tmp_path):
    text = "postpone a loan payment"
    select, semantic = "doc_id,chunk_id,page", {"queryType": "semantic", "semanticConfiguration": "portal-config"}

    def knn(model: str, field: str, k: int = 10) -> dict:
        return {"kind": "vector", "k": k, "fields": field, "vector": vector_of(models, model, text)}

    minilm, bge = knn("minilm", "vector_minilm"), knn("bge-small", "vector_bge_small")
    expected = {
        "keyword": {"search": text, "select": select, "top": 10},
        "keyword_semantic": {"search": text, "select": select, "top": 10, **semantic},
        "dense.minilm": {"select": select, "top": 10, "vectorQueries": [minilm]},
        "dense.bge-small+minilm": {
            "select": select,
            "top": 100,
            "vectorQueries": [knn("bge-small", "vector_bge_small", 100), knn("minilm", "vector_minilm", 100)],
        },
        "hybrid.minilm": {
            "search": text,
            "select": select,
            "top": 100,
            "vectorQueries": [knn("minilm", "vector_minilm", 100)],
        },
        "hybrid_semantic.bge-small": {"search": text, "select": select, "top": 10, "vectorQueries": [bge], **semantic},
        "hybrid_semantic.bge-small+minilm": {
            "search": text,
            "select": select,
            "top": 10,
            "vectorQueries": [bge, minilm],
            **semantic,
        },
    }
    with Replay() as server:
        serve_index(server, definition())
        target = open_target(server, models, plugins, tmp_path)
        setups = {s.key.removeprefix("azure."): s for s in enumerate_setups([target], plugins)}
        for key, body in expected.items():
            hits = setups[key].search(text, 10)
            assert [h.doc_id for h in hits] == ["a", "b"], key
            sent = server.last("POST", SEARCH)
            assert sent.query["api-version"] and sent.headers["api-key"] == KEY
            got = sent.json
            sent_vectors = [q.pop("vector") for q in got.get("vectorQueries", [])]
            wanted_vectors = [q["vector"] for q in body.get("vectorQueries", [])]
            for ours, theirs in zip(sent_vectors, wanted_vectors, strict=True):
                assert np.allclose(ours, theirs, atol=1e-6), key
            without = [{k: v for k, v in q.items() if k != "vector"} for q in body.get("vectorQueries", [])]
            assert got == ({**body, "vectorQueries": without} if without else body), key
        # hybrid reranked: the service's hybrid, then this machine's cross-encoder over the chunk texts
        server.route("POST", SEARCH, PASSAGES)
        setups["hybrid_reranked.minilm"].search(text, 10)
        looked_up = server.last("POST", SEARCH).json
        assert looked_up == {
            "search": "*",
            "filter": "search.in(chunk_id, 'a::0::0|b::0::0', '|')",
            "select": "chunk_id,body",
            "top": 2,
        }


def test_semantic_scores_rank_and_the_service_time_is_recorded(models, plugins, tmp_path):
    with Replay() as server:
        serve_index(server, definition())
        handle = open_target(server, models, plugins, tmp_path).handle
        spent: list[float] = []
        token = server_time.set(spent)
        try:
            hits = handle.search(Query("loan", 5, KEYWORD, ranker="semantic"))
        finally:
            server_time.reset(token)
    assert [h.score for h in hits] == [3.1, 2.2] and spent == [12.0]
    assert not any(k.startswith("@") for k in hits[0].fields)


def test_semantic_true_adds_a_configuration_where_there_is_none_and_keeps_one_there_is(models, plugins, tmp_path):
    with Replay() as server:
        serve_index(server, definition(semantic=False))
        server.route(
            "PUT",
            INDEX,
            definition(semantic=False)
            | {
                "semantic": {
                    "configurations": [
                        {
                            "name": "vx-semantic",
                            "prioritizedFields": {"prioritizedContentFields": [{"fieldName": "body"}]},
                        }
                    ]
                }
            },
        )
        target = open_target(server, models, plugins, tmp_path, semantic=True)
        added = server.last("PUT", INDEX).json["semantic"]
        assert added == {
            "defaultConfiguration": "vx-semantic",
            "configurations": [
                {
                    "name": "vx-semantic",
                    "prioritizedFields": {
                        "titleField": {"fieldName": "title"},
                        "prioritizedContentFields": [{"fieldName": "body"}],
                    },
                }
            ],
        }
        assert "service-ranker:semantic" in target.capabilities
    with Replay() as server:
        serve_index(server, definition(semantic=True))
        target = open_target(server, models, plugins, tmp_path, semantic=True)
        assert not [r for r in server.requests if r.method == "PUT"]  # the portal's configuration is kept
        assert target.handle.semantic == "portal-config"
    with Replay() as server:
        serve_index(server, definition(semantic=False))
        target = open_target(server, models, plugins, tmp_path)
        assert "service-ranker:semantic" not in target.capabilities
        assert len(enumerate_setups([target], plugins)) == 10  # 14 less the four semantic ones


def test_building_uploads_every_chunk_then_writes_the_fingerprint(models, plugins, tmp_path):
    docs = [
        {"id": "a", "title": "Loans", "text": "Defer a loan payment."},
        {"id": "b", "title": "Wires", "text": "Send money abroad."},
    ]
    corpus = FileCorpus("".join(json.dumps(d) + "\n" for d in docs).encode(), "docs.jsonl")
    with Replay() as server:
        server.route("GET", INDEX, (404, {"error": {"code": "ResourceNotFound", "message": "no index"}}))
        server.route("DELETE", INDEX, (404, {"error": {"code": "ResourceNotFound", "message": "no index"}}))
        server.route("POST", r"/indexes", definition(description="vx-eval: building"), status=201)
        server.route(
            "POST",
            INDEX + r"/docs/search\.index",
            {
                "value": [
                    {"key": key_of("a::0::0"), "status": True, "statusCode": 201},
                    {"key": key_of("b::0::0"), "status": True, "statusCode": 201},
                ]
            },
        )
        server.route("PUT", INDEX, definition())
        server.route("GET", INDEX + r"/docs/\$count", b"2")
        opts = options(server, build="auto", dense_models=["minilm"], cache=str(tmp_path / "emb.db"))
        AzureSearchEngine().open(opts, OpenContext("Azure", tmp_path, corpus, models=models))
        order = [(r.method, r.path) for r in server.requests]
        created = server.last("POST", r"/indexes").json
        assert created["description"] == "vx-eval: building"
        fields = {f["name"]: f for f in created["fields"]}
        assert fields["id"]["key"] is True and fields["vector_minilm"]["dimensions"] == 384
        assert fields["vector_minilm"]["vectorSearchProfile"] == "vx-hnsw"
        assert created["vectorSearch"]["algorithms"][0]["hnswParameters"]["metric"] == "cosine"
        uploaded = server.last("POST", INDEX + r"/docs/search\.index").json["value"]
        assert [base64.urlsafe_b64decode(row["id"]).decode() for row in uploaded] == ["a::0::0", "b::0::0"]
        assert uploaded[0]["@search.action"] == "upload" and uploaded[0]["first"] is True
        assert uploaded[0]["title"] == "Loans" and len(uploaded[0]["vector_minilm"]) == 384
        final = server.last("PUT", INDEX).json["description"]
        assert final.startswith("vx-eval fingerprint ") and final.endswith(" format 1")
        assert order.index(("PUT", "/indexes('docs')")) > order.index(("POST", "/indexes('docs')/docs/search.index"))


def test_a_throttled_service_is_retried_and_a_refused_key_is_one_clear_error(models, plugins, tmp_path):
    with Replay() as server:
        serve_index(server, definition())
        handle = open_target(server, models, plugins, tmp_path).handle
        server.route(
            "POST", SEARCH, (503, {"error": {"code": "ServiceUnavailable", "message": "busy"}}), (200, RESULTS)
        )
        assert [h.doc_id for h in handle.search(Query("loan", 5, KEYWORD))] == ["a", "b"]
    with Replay() as server:
        server.route("GET", INDEX, (403, {"error": {"code": "Forbidden", "message": f"bad key {KEY}"}}))
        with pytest.raises(EngineError) as caught:
            open_target(server, models, plugins, tmp_path)
        assert "refused the key named by api_key (env VX_TEST_AZURE_KEY)" in str(caught.value)
        assert KEY not in str(caught.value)
        assert len(server.requests) == 1  # an auth failure is not retried


@pytest.mark.skipif(
    not (os.environ.get("AZURE_SEARCH_ENDPOINT") and os.environ.get("AZURE_SEARCH_KEY")),
    reason="live Azure AI Search test: set AZURE_SEARCH_ENDPOINT and AZURE_SEARCH_KEY (an admin key)",
)
class TestAzureSearchLive(EngineConformance):
    """The whole conformance suite on a real service (it builds and searches an index of 52 documents)."""

    engine = "azure-search"
    options = {
        "endpoint": os.environ.get("AZURE_SEARCH_ENDPOINT", ""),
        "api_key": {"env": "AZURE_SEARCH_KEY"},
        "collection": "vx-eval-conformance",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "semantic": True,
    }
    absent_options = {**options, "collection": "vx-eval-absent", "build": "never"}
    same_ranking = ()  # the service's vector search is approximate (HNSW)
