"""A dataset sent as a BEIR folder's files or as TREC topics and qrels: kept as golden rows, with what the
import left out said in the answer."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.serve.app import ServeSettings, create_app

KEY = "an-admin-key-for-datasets"
QUERIES = "".join(
    json.dumps({"_id": q, "text": t}) + "\n"
    for q, t in [("1", "postpone a loan payment"), ("2", "wire abroad fee"), ("3", "never judged")]
)
QRELS = "query-id\tcorpus-id\tscore\n1\tdeferment\t2\n2\twire\t1\n2\tcard-lost\t0\n"
TOPICS = "<top>\n<num> Number: 7\n<title> lost card\n<desc> Description: what to do with a lost card\n</top>\n"


def _client(people, tmp_path: Path) -> TestClient:
    users, _ = people
    settings = ServeSettings(store=str(tmp_path / "runs"), users=users, admin_key=KEY, access_log=tmp_path / "a.log")
    return TestClient(create_app(settings, Stores(load_plugins())))


def _kept_rows(tmp_path: Path, name: str, sha: str) -> list[dict]:
    raw = (tmp_path / "runs" / "datasets" / name / f"{sha}.jsonl").read_text()
    return [json.loads(line) for line in raw.splitlines()]


def test_a_beir_dataset_is_kept_as_golden_rows_and_says_what_it_left_out(people, tmp_path):
    c = _client(people, tmp_path)
    answer = c.post(
        "/api/v1/datasets",
        json={"name": "bank", "beir": {"queries": QUERIES, "qrels": QRELS}},
        headers={"X-API-Key": KEY},
    )
    assert answer.status_code == 201, answer.text
    body = answer.json()
    assert body["versions"][-1]["shape"] == "beir" and body["versions"][-1]["questions"] == 2
    assert body["left_out"] == [
        "left out 1 query with no judgement in beir.qrels (another split's, or never judged): '3'"
    ]
    rows = _kept_rows(tmp_path, "bank", body["current"])
    assert [(r["id"], r["expected"], r["grades"]) for r in rows] == [
        ("1", ["deferment"], {"deferment": 2}),
        ("2", ["wire"], {"card-lost": 0}),
    ]


def test_a_trec_dataset_reads_the_field_asked_for(people, tmp_path):
    c = _client(people, tmp_path)
    trec = {"topics": TOPICS, "qrels": "7 0 card-lost 1\n", "field": "desc"}
    answer = c.post("/api/v1/datasets", json={"name": "cards", "trec": trec}, headers={"X-API-Key": KEY})
    assert answer.status_code == 201, answer.text
    assert answer.json()["left_out"] == []
    [row] = _kept_rows(tmp_path, "cards", answer.json()["current"])
    assert row["question"] == "what to do with a lost card" and row["expected"] == ["card-lost"]


def test_unreadable_files_and_two_shapes_at_once_are_422_naming_the_field(people, tmp_path):
    c = _client(people, tmp_path)
    bad = c.post(
        "/api/v1/datasets",
        json={"name": "bank", "beir": {"queries": '{"text": "no id"}\n', "qrels": QRELS}},
        headers={"X-API-Key": KEY},
    )
    assert bad.status_code == 422 and "beir.queries:1: not a BEIR query" in bad.text
    both = c.post(
        "/api/v1/datasets",
        json={"name": "bank", "beir": {"queries": QUERIES, "qrels": QRELS}, "trec": {"topics": TOPICS, "qrels": "x"}},
        headers={"X-API-Key": KEY},
    )
    assert both.status_code == 422 and "give the questions once" in both.text
