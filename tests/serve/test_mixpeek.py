"""Mixpeek's evaluation API as its documentation shows it (../shared/seeds, Mixpeek's "Evaluations" page),
against `vx-eval serve` as its own process: the page's curl commands, copied as written and sent as curl
sends them, and its Python example through Mixpeek's own SDK (`mixpeek` 1.3.783, whose evaluations sit at
``client.evaluations`` where the page writes ``client.retrievers.evaluations``). The answers carry the
page's keys, and their values are those of `vx-eval run` on the same data."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml

from .test_server_runs import Served

CREATE = """curl -X POST "$MP_API_URL/v1/retrievers/evaluations/datasets" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE" \\
  -H "Content-Type: application/json" \\
  -d '{
    "dataset_name": "product-search-golden",
    "queries": [
      {
        "query_id": "q1",
        "query_input": {"query": "wireless earbuds"},
        "relevant_documents": ["doc_a1", "doc_a2", "doc_a3"],
        "relevance_scores": {"doc_a1": 5, "doc_a2": 3, "doc_a3": 2}
      },
      {
        "query_id": "q2",
        "query_input": {"query": "noise canceling headphones"},
        "relevant_documents": ["doc_b1", "doc_b4", "doc_b7"]
      }
    ]
  }'"""
RUN = """curl -X POST "$MP_API_URL/v1/retrievers/{retriever_id}/evaluations" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE" \\
  -H "Content-Type: application/json" \\
  -d '{
    "dataset_name": "product-search-golden",
    "evaluation_config": {
      "k_values": [1, 5, 10, 20],
      "metrics": ["precision", "recall", "f1", "f2", "ndcg", "map", "mrr"]
    }
  }'"""
GET = """curl "$MP_API_URL/v1/retrievers/{retriever_id}/evaluations/{evaluation_id}" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE\""""
COMPARE = """# Evaluate baseline (vector search only)
curl -X POST "$MP_API_URL/v1/retrievers/ret_baseline/evaluations" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE" \\
  -d '{"dataset_name": "product-search-golden"}'

# Evaluate candidate (vector search + reranker)
curl -X POST "$MP_API_URL/v1/retrievers/ret_reranked/evaluations" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE" \\
  -d '{"dataset_name": "product-search-golden"}'"""
MANAGE = """# List all datasets
curl "$MP_API_URL/v1/retrievers/evaluations/datasets" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE"

# Get a specific dataset
curl "$MP_API_URL/v1/retrievers/evaluations/datasets/product-search-golden" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE\""""
GROUPED = """curl -X POST "$MP_API_URL/v1/retrievers/evaluations/datasets" \\
  -H "Authorization: Bearer $MP_API_KEY" \\
  -H "X-Namespace: $MP_NAMESPACE" \\
  -H "Content-Type: application/json" \\
  -d '{
    "dataset_name": "frames-golden",
    "relevance_field": "metadata.frame_key",
    "queries": [
      {
        "query_id": "q1",
        "query_input": {"query": "timber on a truck"},
        "relevant_documents": ["frame_0012", "frame_0340"]
      }
    ]
  }'"""

PRODUCTS = [
    ("doc_a1", "Wireless earbuds with charging case and twenty hours of battery"),
    ("doc_a2", "True wireless earbuds, sweat proof, for running"),
    ("doc_a3", "Budget earbuds, wireless, bluetooth five"),
    ("doc_b1", "Noise canceling headphones over the ear for flights"),
    ("doc_b4", "Active noise canceling headphones with a long battery"),
    ("doc_b7", "Foldable headphones, noise canceling, for the office"),
    *((f"doc_x{i}", f"Phone case number {i}, leather, slim") for i in range(10)),
]


def curl(command: str, url: str, key: str, **names: str) -> list[httpx.Response]:
    """Each curl command of a block sent as curl sends it: its method (-X, else POST with -d, else GET), URL,
    headers (-H) and body (-d), the page's $MP_ variables and {placeholders} filled in."""
    answers = []
    text = "\n".join(line for line in command.splitlines() if not line.startswith("#")).replace("\\\n", " ")
    for one in re.split(r"(?m)^(?=curl )", text):
        if not one.strip():
            continue
        words = shlex.split(one.replace("$MP_API_URL", url).replace("$MP_API_KEY", key).replace("$MP_NAMESPACE", "ns"))
        method, target, headers, body = None, "", {}, None
        it = iter(words[1:])
        for word in it:
            if word == "-X":
                method = next(it)
            elif word == "-H":
                name, _, value = next(it).partition(": ")
                headers[name] = value
            elif word == "-d":
                body = next(it)
            else:
                target = word.format(**names)
        method = method or ("POST" if body is not None else "GET")
        if body is not None:
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")  # what curl sends with -d
        answers.append(httpx.request(method, target, headers=headers, content=body, timeout=60))
    return answers


def _config(folder: Path, name: str) -> Path:
    config = {
        "name": name,
        "golden": "golden.jsonl",
        "corpus": "products.jsonl",
        "save_to": "runs",
        "targets": [{"name": "Local", "engine": "sqlite", "options": {"path": f".vx/{name}.db", "dense_models": []}}],
        "evaluation": {"metrics": ["found@10", "ndcg@10"], "depth": 20},
    }
    path = folder / "experiments" / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def mixpeek_served(tmp_path):
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "products.jsonl").write_text(
        "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in PRODUCTS)
    )
    (tmp_path / "experiments" / "golden.jsonl").write_text(
        json.dumps({"id": "g", "question": "wireless earbuds", "expected": ["doc_a1"]}) + "\n"
    )
    configs = [_config(tmp_path, name) for name in ("ret_abc123", "ret_baseline", "ret_reranked")]
    made = Served(tmp_path, configs[0])
    made.start("--experiments", str(tmp_path / "experiments"))
    yield made
    made.stop()


def _finished(served: Served, retriever: str, evaluation: str, seconds: float = 240) -> dict:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        (answer,) = curl(GET, f"http://127.0.0.1:{served.port}", served.keys["rita"], retriever_id=retriever,
                         evaluation_id=evaluation)  # fmt: skip
        assert answer.status_code == 200, answer.text
        body = answer.json()
        if body["status"] in ("completed", "failed"):
            return body
        time.sleep(0.5)
    raise AssertionError(f"evaluation {evaluation} did not finish: {body}")


MIXPEEK_KEYS = {"precision": "p", "recall": "recall", "f1": "f1", "f2": "f2", "ndcg": "ndcg"}


@pytest.mark.slow
def test_the_pages_curl_and_python_examples_answer_with_its_keys_and_a_vx_eval_runs_values(mixpeek_served):
    served, url, key = mixpeek_served, f"http://127.0.0.1:{mixpeek_served.port}", mixpeek_served.keys["rui"]
    (created,) = curl(CREATE, url, key)
    assert created.status_code == 201, created.text
    dataset = created.json()
    assert dataset["dataset_name"] == "product-search-golden" and dataset["query_count"] == 2

    (started,) = curl(RUN, url, key, retriever_id="ret_abc123")
    assert started.status_code == 202, started.text
    assert set(started.json()) >= {"task_id", "evaluation_id", "status"} and started.json()["status"] == "pending"
    evaluation = _finished(served, "ret_abc123", started.json()["evaluation_id"])
    assert evaluation["status"] == "completed", evaluation
    assert set(evaluation["metrics_by_k"]) == {"1", "5", "10", "20"}
    assert set(evaluation["metrics_by_k"]["5"]) == {"precision", "recall", "f1", "f2", "ndcg"}
    assert {"precision_at_5", "recall_at_5", "f1_at_5", "f2_at_5", "ndcg_at_5", "map", "mrr"} <= set(
        evaluation["overall_metrics"]
    )
    assert (evaluation["total_queries"], evaluation["evaluated_queries"], evaluation["skipped_queries"]) == (2, 2, 0)
    assert {r["query_id"]: r["relevant_count"] for r in evaluation["query_results"]} == {"q1": 3, "q2": 3}
    assert all(r["status"] == "evaluated" and r["retrieved_count"] > 0 for r in evaluation["query_results"]), (
        evaluation["query_results"]
    )

    rows = next((served.folder / "experiments" / "runs" / "datasets" / "product-search-golden").glob("*.jsonl"))
    names = [f"{m}@{k}" for m in MIXPEEK_KEYS.values() for k in (1, 5, 10, 20)] + ["map", "mrr"]
    cli = subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(served.folder / "experiments" / "ret_abc123.yaml"),
         "--golden", str(rows), *(a for n in names for a in ("-m", n)), "--no-save", "--json"],
        capture_output=True, text=True, check=True, cwd=served.folder,
    )  # fmt: skip
    (theirs,) = json.loads(cli.stdout)["setups"]
    for mixpeek, ours in MIXPEEK_KEYS.items():
        for k in (1, 5, 10, 20):
            assert evaluation["overall_metrics"][f"{mixpeek}_at_{k}"] == theirs["summary"][f"{ours}@{k}"]
            assert evaluation["metrics_by_k"][str(k)][mixpeek] == theirs["summary"][f"{ours}@{k}"]
    assert evaluation["overall_metrics"]["map"] == theirs["summary"]["map"]
    assert evaluation["overall_metrics"]["mrr"] == theirs["summary"]["mrr"]
    q1 = next(r for r in evaluation["query_results"] if r["query_id"] == "q1")
    assert q1["metrics"]["ndcg_at_10"] == theirs["per_question"]["metrics"]["ndcg@10"][0]

    for answer in curl(COMPARE, url, key):
        assert answer.status_code == 202, answer.text
    listed, one = curl(MANAGE, url, key)
    assert [d["dataset_name"] for d in listed.json()["datasets"]] == ["product-search-golden"]
    assert one.json()["dataset_name"] == "product-search-golden" and one.json()["query_count"] == 2
    (grouped,) = curl(GROUPED, url, key)
    assert grouped.status_code == 201 and grouped.json()["relevance_field"] == "metadata.frame_key"

    from mixpeek import Mixpeek

    client = Mixpeek(key, namespace="ns", base_url=f"{url}/v1")
    dataset = client.evaluations.create_dataset(
        dataset_name="product-search-golden",
        queries=[
            {
                "query_id": "q1",
                "query_input": {"query": "wireless earbuds"},
                "relevant_documents": ["doc_a1", "doc_a2", "doc_a3"],
                "relevance_scores": {"doc_a1": 5, "doc_a2": 3, "doc_a3": 2},
            },
            {
                "query_id": "q2",
                "query_input": {"query": "noise canceling headphones"},
                "relevant_documents": ["doc_b1", "doc_b4", "doc_b7"],
            },
        ],
    )
    assert dataset["dataset_name"] == "product-search-golden"
    evaluation = client.evaluations.run(
        retriever_id="ret_abc123",
        dataset_name="product-search-golden",
        evaluation_config={
            "k_values": [1, 5, 10, 20],
            "metrics": ["precision", "recall", "f1", "f2", "ndcg", "map", "mrr"],
        },
    )
    assert evaluation["task_id"] and evaluation["evaluation_id"]
    again = _finished(served, "ret_abc123", evaluation["evaluation_id"])
    assert (
        client.evaluations.get("ret_abc123", evaluation["evaluation_id"])["overall_metrics"] == again["overall_metrics"]
    )
    assert again["overall_metrics"]["precision_at_5"] == theirs["summary"]["p@5"]
    runs = client.evaluations.list("ret_abc123")
    assert runs["total"] == 2 and all("metrics" not in r for e in runs["evaluations"] for r in e["query_results"])


@pytest.mark.slow
def test_a_query_with_an_input_the_retriever_does_not_take_skips_and_a_run_of_only_those_fails(mixpeek_served):
    served, url, key = mixpeek_served, f"http://127.0.0.1:{mixpeek_served.port}", mixpeek_served.keys["rui"]
    body = {"dataset_name": "mixed", "queries": [
        {"query_id": "ok", "query_input": {"query": "wireless earbuds"}, "relevant_documents": ["doc_a1"]},
        {"query_id": "topk", "query_input": {"query": "earbuds", "top_k": 5}, "relevant_documents": ["doc_a2"]},
    ]}  # fmt: skip
    kept = httpx.post(
        f"{url}/v1/retrievers/evaluations/datasets", json=body, headers={"Authorization": f"Bearer {key}"}
    )
    assert kept.status_code == 201, kept.text
    started = httpx.post(f"{url}/v1/retrievers/ret_abc123:local.keyword/evaluations", json={"dataset_name": "mixed"},
                         headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert started.status_code == 202, started.text
    done = _finished(served, "ret_abc123:local.keyword", started.json()["evaluation_id"])
    assert done["status"] == "completed" and done["setup"] == "local.keyword"
    assert (done["total_queries"], done["evaluated_queries"], done["skipped_queries"]) == (2, 1, 1)
    skipped = next(r for r in done["query_results"] if r["query_id"] == "topk")
    assert skipped["status"] == "skipped"
    assert skipped["error"] == "Unknown input field(s) 'top_k'. This retriever accepts: ['query']"

    only_bad = {"dataset_name": "all-bad", "queries": [
        {"query_id": "a", "query_input": {"text": "earbuds"}, "relevant_documents": ["doc_a1"]}]}  # fmt: skip
    kept = httpx.post(f"{url}/v1/retrievers/evaluations/datasets", json=only_bad,
                      headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert kept.status_code == 201, kept.text
    started = httpx.post(f"{url}/v1/retrievers/ret_abc123/evaluations", json={"dataset_name": "all-bad"},
                         headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    failed = _finished(served, "ret_abc123", started.json()["evaluation_id"])
    assert failed["status"] == "failed" and failed["overall_metrics"] is None and failed["skipped_queries"] == 1
    assert "every query skipped" in failed["error_message"]
    refused = httpx.post(f"{url}/v1/retrievers/nothing/evaluations", json={"dataset_name": "mixed"},
                         headers={"Authorization": f"Bearer {key}"})  # fmt: skip
    assert refused.status_code == 404 and "ret_abc123" in refused.text
    reader = httpx.post(f"{url}/v1/retrievers/ret_abc123/evaluations", json={"dataset_name": "mixed"},
                        headers={"Authorization": f"Bearer {served.keys['rita']}"})  # fmt: skip
    assert reader.status_code == 403  # a reader's key starts nothing, as on vx-eval's own routes
