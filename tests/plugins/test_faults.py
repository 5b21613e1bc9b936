"""A flaky network in front of every remote plugin: a fifth of all calls (not only searches) answered 429 or
503, delayed past the timeout or dropped. The run completes, nothing is retried without bound, a question
the service can never answer is recorded as failed for its setup (which is never picked), and a service
that cannot be reached is one clear line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.run.pipeline import RunOptions, run_experiment
from vx_eval.plugins.engines.qdrant_calls import term_id, terms
from vx_eval.testing.faults import FaultProxy
from vx_eval.testing.qdrant_rest import QdrantRest
from vx_eval.testing.replay import Replay

from ..test_cli import call
from .test_azure import INDEX, KEY, RESULTS, SEARCH, definition

RETRIES = 3


def doomed_on(word: str, *, path_has: str = "search"):
    """Searches for the question holding `word` fail every time: the service cannot answer that one."""
    return lambda method, path, body: method == "POST" and path_has in path and word.encode() in body


def sqlite_target() -> dict:
    return {"name": "Local", "engine": "sqlite", "options": {"path": ".vx/local.db", "dense_models": []}}


def assert_survived(report, remote_key: str, proxy: FaultProxy, questions: int) -> None:
    assert report.status == "completed"
    remote = report.setup(remote_key)
    assert remote.counts.failed == 1 and remote.counts.evaluated == questions - 1
    failed = remote.per_question.status.index("failed")
    assert report.question_ids[failed] == "q3"
    assert f"after {RETRIES + 1} tries while searching" in (remote.per_question.errors[failed] or "")
    assert remote_key not in dict(report.picks.items()).values()  # a setup with failures is never picked
    assert report.picks.finds_the_most == "local.keyword"
    assert proxy.faults["doomed"] == RETRIES + 1  # the one question, tried a bounded number of times
    assert sum(proxy.faults[k] for k in ("429", "503", "delay", "drop")) > 0


@pytest.mark.slow
def test_opensearch_survives_a_flaky_network_in_every_call(project, plugins, osmem):
    with FaultProxy(osmem, rate=0.2, seed=3, delay=1.2, doomed=doomed_on("investments")) as proxy:
        target = {
            "name": "OpenSearch",
            "engine": "opensearch",
            "options": {
                "url": proxy.url,
                "collection": "faults",
                "mode": "dense",
                "dense_models": [],
                "timeout": 0.5,
                "retries": RETRIES,
            },
        }
        config = project.write_config(targets=[sqlite_target(), target])
        report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
    assert_survived(report, "opensearch.keyword", proxy, 5)
    assert proxy.requests < 200  # index made, chunks written, documents listed, searched: each call bounded
    assert report.targets["OpenSearch"].documents == 6


@pytest.mark.slow
def test_qdrant_survives_a_flaky_network_in_every_call(project, plugins):
    doomed = doomed_on(str(term_id(terms("investments")[0])), path_has="/points/query")  # the query is term ids
    with (
        QdrantRest() as qdrant,
        FaultProxy(qdrant.url, rate=0.2, seed=7, delay=1.2, doomed=doomed) as proxy,
    ):
        target = {
            "name": "Qdrant",
            "engine": "qdrant",
            "options": {"url": proxy.url, "collection": "faults", "dense_models": [], "timeout": 1, "retries": RETRIES},
        }
        config = project.write_config(targets=[sqlite_target(), target])
        report = run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report
        stored = qdrant.client.count("faults").count
    assert_survived(report, "qdrant.sparse.bm25", proxy, 5)
    assert stored == 8 and report.targets["Qdrant"].documents == 6
    assert proxy.requests < 200


def test_azure_ai_search_survives_a_flaky_network_in_every_call(project, plugins, monkeypatch):
    monkeypatch.setenv("VX_TEST_AZURE_KEY", KEY)
    with Replay() as server:
        server.route("GET", INDEX, definition(semantic=False))
        server.route("GET", INDEX + r"/docs/\$count", b"2")
        listing = {"value": [{"@search.score": 1.0, "doc_id": d} for d in ("deferment", "wire", "divestment")]}
        server.route("POST", SEARCH, RESULTS, headers={"elapsed-time": "9"})
        server.route("POST", SEARCH, listing, body_matches=r"first eq true")
        with FaultProxy(server.url, rate=0.2, seed=5, delay=1.2, doomed=doomed_on("investments")) as proxy:
            target = {
                "name": "Azure",
                "engine": "azure-search",
                "options": {
                    "endpoint": proxy.url,
                    "api_key": {"env": "VX_TEST_AZURE_KEY"},
                    "collection": "docs",
                    "build": "never",
                    "mode": "dense",
                    "dense_models": [],
                    "timeout": 0.5,
                    "retries": RETRIES,
                },
            }
            config = project.write_config(targets=[sqlite_target(), target])
            report = run_experiment(
                load_config(config, plugins), plugins, RunOptions(save=False, only=("local.*", "azure.keyword"))
            ).report
    assert_survived(report, "azure.keyword", proxy, 5)
    assert proxy.requests < 120


def test_an_unreachable_service_is_one_clear_line(project):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket closes
    target = {
        "name": "OpenSearch",
        "engine": "opensearch",
        "options": {"url": f"http://127.0.0.1:{port}", "collection": "x", "timeout": 0.5, "retries": 1},
    }
    config = project.write_config(targets=[target])
    done = subprocess.run(  # a real process: what the client libraries log reaches its real stderr
        [sys.executable, "-m", "vx_eval", "run", str(config), "--no-save"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=project.root,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]  # no retry log from opensearch-py
    assert line.startswith("error: ") and "[status:" not in done.stderr
    assert f"OpenSearch: cannot reach http://127.0.0.1:{port} after 2 tries while looking up index x" in line


@pytest.mark.parametrize("engine", ["opensearch", "qdrant", "azure-search"])
def test_credentials_in_a_service_address_are_refused_and_never_echoed(project, capsys, engine):
    address = "http://admin:pw-in-the-url@127.0.0.1:9200"
    options = {"opensearch": {"url": address}, "qdrant": {"url": address}}.get(
        engine, {"endpoint": address, "api_key": {"env": "X"}}
    )
    config = project.write_config(targets=[{"name": "Remote", "engine": engine, "options": options}])
    code, _, err = call(capsys, "run", str(config))
    assert code == 2 and "the address carries credentials" in err and "pw-in-the-url" not in err
    assert json.dumps(err)  # printable
