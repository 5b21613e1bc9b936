"""OpenSearch: the exact requests for k-NN, hybrid and the search pipeline against a recording server;
retries, credentials and failures; live tests on OPENSEARCH_URL."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from vx_eval.core.contracts.engine import DENSE_PREFIX, FUSION, KEYWORD, OpenContext, Query, server_time
from vx_eval.core.contracts.models import DENSE
from vx_eval.core.errors import EngineError, redact
from vx_eval.core.golden.sources import FileCorpus
from vx_eval.core.models.loading import Models
from vx_eval.plugins.engines.opensearch import OpenSearchEngine, OpenSearchOptions
from vx_eval.testing.conformance import EngineConformance
from vx_eval.testing.replay import Replay

INDEX = "docs"
HITS = {
    "took": 7,
    "timed_out": False,
    "hits": {
        "total": {"value": 2, "relation": "eq"},
        "max_score": 0.9,
        "hits": [
            {
                "_index": INDEX,
                "_id": "a::0::0",
                "_score": 0.9,
                "_source": {"doc_id": "a", "chunk_id": "a::0::0", "page": None},
            },
            {
                "_index": INDEX,
                "_id": "b::0::0",
                "_score": 0.4,
                "_source": {"doc_id": "b", "chunk_id": "b::0::0", "page": None},
            },
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
                "vector_minilm": {"type": "knn_vector", "dimension": 384},
            },
        }
    }
}
DOCS = [
    {"id": "a", "title": "Loans", "text": "Defer a loan payment after a disaster."},
    {"id": "b", "title": "Wires", "text": "Send money abroad by wire."},
]


@pytest.fixture
def models(plugins) -> Models:
    return Models(plugins.models)


def existing_index(server: Replay, *, pipeline: bool = True) -> None:
    """The routes an opened, already built index answers: mapping, pipeline, count, info, search."""
    server.route("GET", "/", {"version": {"distribution": "opensearch", "number": "3.1.0"}})
    server.route("HEAD", f"/{INDEX}", {})
    server.route("GET", f"/{INDEX}/_mapping", MAPPING)
    server.route("GET", f"/_search/pipeline/{INDEX}-vx-hybrid", {} if pipeline else (404, {"error": "not found"}))
    server.route("POST", f"/{INDEX}/_count", {"count": 2})
    server.route("POST", f"/{INDEX}/_search", HITS)


def open_handle(server: Replay, models: Models, tmp_path: Path, **options):
    opts = OpenSearchOptions(url=server.url, collection=INDEX, build="never", retries=1, **options)
    return OpenSearchEngine().open(opts, OpenContext("OpenSearch", tmp_path, None, models=models))


def query_vector(models: Models, text: str) -> list[float]:
    return [float(x) for x in models.get("minilm", DENSE).encode_queries([text])[0]]


def test_keyword_knn_and_hybrid_send_exactly_these_bodies(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        assert {KEYWORD, DENSE_PREFIX + "minilm", FUSION} <= handle.capabilities()
        text = "postpone a loan payment"
        hits = handle.search(Query(text, 5, KEYWORD))
        assert [h.doc_id for h in hits] == ["a", "b"] and hits[0].chunk_id == "a::0::0"
        assert server.last("POST", f"/{INDEX}/_search").json == {
            "size": 5,
            "query": {"match": {"body": {"query": text}}},
            "_source": ["doc_id", "chunk_id", "page"],
        }
        handle.search(Query(text, 5, DENSE_PREFIX + "minilm"))
        sent = server.last("POST", f"/{INDEX}/_search").json
        vector = sent["query"]["knn"]["vector_minilm"].pop("vector")
        assert sent == {
            "size": 5,
            "query": {"knn": {"vector_minilm": {"k": 5}}},
            "_source": ["doc_id", "chunk_id", "page"],
        }
        assert np.allclose(vector, query_vector(models, text), atol=1e-6) and len(vector) == 384
        handle.search(Query(text, 8, FUSION, parts=(KEYWORD, DENSE_PREFIX + "minilm")))
        request = server.last("POST", f"/{INDEX}/_search")
        assert request.query == {"search_pipeline": [f"{INDEX}-vx-hybrid"]}
        body = request.json
        assert body["size"] == 8 and body["_source"] == ["doc_id", "chunk_id", "page"]
        keyword, knn = body["query"]["hybrid"]["queries"]
        assert keyword == {"match": {"body": {"query": text}}}
        assert set(knn["knn"]["vector_minilm"]) == {"vector", "k"} and knn["knn"]["vector_minilm"]["k"] == 8


def test_exact_knn_is_a_script_score_over_every_chunk(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path, exact=True)
        handle.search(Query("wire abroad", 3, DENSE_PREFIX + "minilm"))
        query = server.last("POST", f"/{INDEX}/_search").json["query"]
        params = query["script_score"]["script"].pop("params")
        assert query == {"script_score": {"query": {"match_all": {}}, "script": {"source": "knn_score", "lang": "knn"}}}
        assert params["field"] == "vector_minilm" and params["space_type"] == "cosinesimil"
        assert np.allclose(params["query_value"], query_vector(models, "wire abroad"), atol=1e-6)


def test_no_pipeline_means_no_engine_fusion(models, tmp_path):
    with Replay() as server:
        existing_index(server, pipeline=False)
        handle = open_handle(server, models, tmp_path)
        assert FUSION not in handle.capabilities()
        with pytest.raises(EngineError, match="no search pipeline"):
            handle.search(Query("x", 5, FUSION, parts=(KEYWORD,)))


def test_took_is_recorded_as_the_server_time(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        spent: list[float] = []
        token = server_time.set(spent)
        try:
            handle.search(Query("loan", 5, KEYWORD))
        finally:
            server_time.reset(token)
        assert spent == [7.0]


def test_building_creates_the_index_the_pipeline_and_writes_the_fingerprint_last(models, tmp_path):
    corpus = FileCorpus("".join(json.dumps(d) + "\n" for d in DOCS).encode(), "docs.jsonl")
    with Replay() as server:
        server.route("GET", "/", {"version": {"number": "3.1.0"}})
        server.route("HEAD", f"/{INDEX}", (404, {}))
        server.route("PUT", f"/{INDEX}", {"acknowledged": True})
        server.route("POST", "/_bulk", {"took": 1, "errors": False, "items": []})
        server.route("POST", f"/{INDEX}/_refresh", {})
        server.route("PUT", f"/_search/pipeline/{INDEX}-vx-hybrid", {"acknowledged": True})
        server.route("PUT", f"/{INDEX}/_mapping", {"acknowledged": True})
        server.route("GET", f"/{INDEX}/_mapping", MAPPING)
        server.route("GET", f"/_search/pipeline/{INDEX}-vx-hybrid", {})
        server.route("POST", f"/{INDEX}/_count", {"count": 2})
        options = OpenSearchOptions(
            url=server.url, collection=INDEX, fusion="rrf", dense_models=["minilm"], cache=tmp_path / "emb.db"
        )
        OpenSearchEngine().open(options, OpenContext("OpenSearch", tmp_path, corpus, models=models))
        order = [(r.method, r.path) for r in server.requests]
        created = server.last("PUT", f"/{INDEX}").json
        assert created["settings"] == {"index": {"knn": True}} and "_meta" not in created["mappings"]
        assert created["mappings"]["properties"]["vector_minilm"] == {
            "type": "knn_vector",
            "dimension": 384,
            "method": {"name": "hnsw", "space_type": "cosinesimil", "engine": "faiss"},
        }
        assert server.last("PUT", f"/_search/pipeline/{INDEX}-vx-hybrid").json == {
            "description": "vx-eval hybrid search",
            "phase_results_processors": [
                {"score-ranker-processor": {"combination": {"technique": "rrf", "rank_constant": 60}}}
            ],
        }
        lines = [json.loads(line) for line in server.last("POST", "/_bulk").body.decode().splitlines()]
        assert lines[0] == {"index": {"_index": INDEX, "_id": "a::0::0"}}
        assert lines[1]["doc_id"] == "a" and lines[1]["first"] is True and len(lines[1]["vector_minilm"]) == 384
        meta = server.last("PUT", f"/{INDEX}/_mapping").json["_meta"]
        assert meta["format"] == 1 and len(meta["fingerprint"]) == 64
        # the fingerprint goes in after every chunk and the pipeline: a crash before leaves none, so it is built again
        assert order.index(("PUT", f"/{INDEX}/_mapping")) > order.index(("POST", "/_bulk"))
        assert order.index(("PUT", f"/{INDEX}/_mapping")) > order.index(("PUT", f"/_search/pipeline/{INDEX}-vx-hybrid"))


def test_a_busy_cluster_is_retried_with_backoff_then_the_search_fails(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path)
        server.route("POST", f"/{INDEX}/_search", (503, {"error": "busy"}), (200, HITS))
        assert [h.doc_id for h in handle.search(Query("loan", 5, KEYWORD))] == ["a", "b"]
        server.route("POST", f"/{INDEX}/_search", (429, {"error": "too many requests"}))
        before = len(server.requests)
        with pytest.raises(Exception, match="429"):
            handle.search(Query("loan", 5, KEYWORD))
        assert len(server.requests) - before == 2  # one try and one retry (retries=1), then the error


def test_refused_credentials_are_one_clear_error_without_the_password(models, tmp_path, monkeypatch):
    monkeypatch.setenv("VX_TEST_OS_PASSWORD", "hunter2-very-secret")
    with Replay() as server:
        server.route("HEAD", f"/{INDEX}", (401, {"error": "unauthorized hunter2-very-secret"}))
        options = OpenSearchOptions.model_validate(
            {"url": server.url, "collection": INDEX, "user": "admin", "password": {"env": "VX_TEST_OS_PASSWORD"}}
        )
        with pytest.raises(EngineError) as caught:
            OpenSearchEngine().open(options, OpenContext("OpenSearch", tmp_path, None, models=models))
        message = str(caught.value)
        assert "refused the credentials (401)" in message and "hunter2" not in message
        assert server.requests[0].headers["authorization"].startswith("Basic ")
        assert "hunter2" not in redact("echoed: hunter2-very-secret")


@pytest.mark.skipif(
    not os.environ.get("OPENSEARCH_URL"),
    reason="live OpenSearch test: set OPENSEARCH_URL (+ OPENSEARCH_USER, OPENSEARCH_PASSWORD)",
)
class TestOpenSearchLive(EngineConformance):
    """The whole conformance suite, k-NN and hybrid included, on a real cluster."""

    engine = "opensearch"
    options = {
        "url": os.environ.get("OPENSEARCH_URL", ""),
        "collection": "vx-eval-conformance",
        "mode": "hybrid",
        "dense_models": ["minilm"],
        "exact": True,
        **(
            {"user": os.environ["OPENSEARCH_USER"], "password": {"env": "OPENSEARCH_PASSWORD"}}
            if os.environ.get("OPENSEARCH_USER")
            else {}
        ),
    }
    absent_options = {**options, "collection": "vx-eval-absent", "build": "never"}


def test_a_run_over_osmem_and_the_embedded_engine_reports_the_cluster_time_beside_the_wall_time(osmem, project, capsys):
    from vx_eval.cli import main

    config = project.write_config(
        targets=[
            {"name": "Local", "engine": "sqlite", "options": {"path": ".vx/tiny.db", "dense_models": []}},
            {
                "name": "OpenSearch",
                "engine": "opensearch",
                "options": {"url": osmem, "collection": "run-test", "dense_models": []},
            },
        ]
    )

    def run(*args: str) -> int:
        try:
            main(["run", str(config), *args])
        except SystemExit as exc:
            return int(exc.code or 0)
        return 0

    assert run("--json") == 0
    report = json.loads(capsys.readouterr().out)
    setups = {s["key"]: s for s in report["setups"]}
    remote, local = setups["opensearch.keyword"], setups["local.keyword"]
    assert remote["error"] is None and remote["summary"]["found@10"] > 0
    assert set(remote["server_ms"]) == {"median", "p95"} and local["server_ms"] is None
    times = remote["per_question"]["server_ms"]
    assert all(isinstance(t, float) for t in times) and len(times) == len(remote["per_question"]["times_ms"])
    assert {"key": "local.keyword", "change": "the same search on Local"} in remote["neighbours"]
    assert run("--no-save") == 0
    assert "server ms" in capsys.readouterr().out


def test_a_timeout_is_tried_again(models, tmp_path):
    with Replay() as server:
        existing_index(server)
        handle = open_handle(server, models, tmp_path, timeout=0.3)
        server.route("POST", f"/{INDEX}/_search", HITS, delays=[1.0, 0.0])
        assert [h.doc_id for h in handle.search(Query("loan", 5, KEYWORD))] == ["a", "b"]
        assert len([r for r in server.requests if r.path == f"/{INDEX}/_search"]) == 2


def test_a_question_that_fails_is_recorded_for_that_setup_and_the_run_goes_on_without_the_password(
    models, project, plugins, monkeypatch
):
    from vx_eval.core.config.experiment import load_config
    from vx_eval.core.usecases.pipeline import RunOptions, run_experiment

    monkeypatch.setenv("VX_TEST_OS_PASSWORD", "hunter2-very-secret")
    with Replay() as server:
        existing_index(server)
        failure = (
            500,
            {"error": "search_phase_execution_exception: shard failed for admin:hunter2-very-secret"},
        )
        server.route("POST", f"/{INDEX}/_search", HITS, HITS, failure, HITS)  # the warm-up, then q1 ok, q2 fails
        target = {
            "name": "OpenSearch",
            "engine": "opensearch",
            "options": {
                "url": server.url,
                "collection": INDEX,
                "build": "never",
                "retries": 0,
                "user": "admin",
                "password": {"env": "VX_TEST_OS_PASSWORD"},
            },
        }
        config = project.write_config(targets=[target], corpus=None)
        options = RunOptions(save_to=str(project.root / "runs"), only=("opensearch.keyword",))
        result = run_experiment(load_config(config, plugins), plugins, options)
    keyword = result.report.setup("opensearch.keyword").model_dump(mode="json")
    assert keyword["counts"]["failed"] == 1 and keyword["counts"]["evaluated"] == keyword["counts"]["total"] - 1
    failed = keyword["per_question"]["status"].index("failed")
    assert "500" in keyword["per_question"]["errors"][failed] and "***" in keyword["per_question"]["errors"][failed]
    saved = Path(result.location).read_text()
    assert "hunter2" not in saved and "***" in saved  # the echoed password is masked in the saved report


def test_discover_reads_an_index_mapping_and_its_options_search_it_as_it_is(models, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENSEARCH_USER", "reader")
    monkeypatch.setenv("OPENSEARCH_PASSWORD", "os-password-not-shown")
    with Replay() as server:
        existing_index(server)
        found = OpenSearchEngine().discover(f"{server.url}/{INDEX}")
        options = found.options
        assert isinstance(options, OpenSearchOptions) and found.name == INDEX
        assert (options.url, options.collection, options.build, options.dense_models) == (
            server.url, INDEX, "never", ["minilm"]
        )  # fmt: skip
        assert (
            options.user == "reader" and options.password is not None and options.password.env == "OPENSEARCH_PASSWORD"
        )
        assert found.found == ("2 chunks in index docs (built by vx-eval)", "k-NN fields: vector_minilm (384 dims)")
        handle = OpenSearchEngine().open(options, OpenContext("docs", tmp_path, None, models=models))
        assert {KEYWORD, DENSE_PREFIX + "minilm", FUSION} <= handle.capabilities()
        assert [h.doc_id for h in handle.search(Query("loan", 2, KEYWORD))] == ["a", "b"]
        assert all(r.headers.get("authorization", "").startswith("Basic ") for r in server.requests)


def test_discover_over_osmem_and_what_is_wrong_in_one_line(osmem, models, tmp_path):
    corpus = FileCorpus("".join(json.dumps(d) + "\n" for d in DOCS).encode(), "docs.jsonl")
    options = OpenSearchOptions(url=osmem, collection="discovered", dense_models=["minilm"], retries=0)
    OpenSearchEngine().open(options, OpenContext("OS", tmp_path, corpus, models=models)).close()
    found = OpenSearchEngine().discover(f"{osmem}/discovered")
    assert (
        found.options.dense_models == ["minilm"] and found.found[0] == "2 chunks in index discovered (built by vx-eval)"
    )
    with pytest.raises(EngineError, match=r"--target opensearch:.* has no index 'nosuch'"):
        OpenSearchEngine().discover(f"{osmem}/nosuch")
    with pytest.raises(EngineError, match=r"cannot reach"):
        OpenSearchEngine().discover("http://127.0.0.1:9/docs")


def test_document_ids_are_listed_a_page_at_a_time_each_page_one_call(osmem):
    from vx_eval.plugins.engines.opensearch import OpenSearchOptions, make_client, policy
    from vx_eval.plugins.engines.remote import paged_document_ids

    options = OpenSearchOptions(url=osmem, collection="paged")
    client, call = make_client(options), policy(options, "OpenSearch")
    mapping = {"properties": {"doc_id": {"type": "keyword"}, "first": {"type": "boolean"}}}
    client.indices.create(index="paged", body={"mappings": mapping})
    for i, doc in enumerate(["e", "a", "d", "b", "c", "a"]):  # "a" twice: a second chunk of one document
        client.index(index="paged", id=str(i), body={"doc_id": doc, "first": i < 5}, refresh=True)
    before = call.calls
    ids = paged_document_ids(call, lambda body: client.search(index="paged", body=body), "paged", page=2)
    assert ids == ["a", "b", "c", "d", "e"]
    assert call.calls - before == 3  # pages of 2, 2 and 1
