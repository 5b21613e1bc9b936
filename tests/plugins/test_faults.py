"""A flaky network in front of every remote plugin: a fifth of all calls (not only searches) answered 429 or
503, delayed past the timeout or dropped. The run completes, nothing is retried without bound, a question
the service can never answer is recorded as failed for its setup (which is never picked), and a service
that cannot be reached is one clear line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections import Counter

import pytest

from vx_eval.core.config.experiment import load_config
from vx_eval.core.usecases.pipeline import RunOptions, run_experiment
from vx_eval.plugins.engines.qdrant_calls import term_id, terms
from vx_eval.testing.faults import KINDS, FaultProxy
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
    assert sum(proxy.faults[k] for k in ("429", "500", "503", "delay", "drop")) > 0


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
    said = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("plan: ")]
    (line,) = said  # no retry log from opensearch-py (the run's plan comes before it)
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


# Retries: a 500 tried again where the call may be repeated, a 429's Retry-After waited as asked


@pytest.mark.parametrize("kind", ["429", "500"])
def test_opensearch_waits_what_retry_after_asks_and_tries_a_500_again(osmem, kind):
    from vx_eval.core.errors import EngineError
    from vx_eval.plugins.engines.opensearch import OpenSearchOptions, make_client, policy

    with FaultProxy(osmem, rate=1.0, burst=1, kinds=(kind,), retry_after=5) as proxy:
        options = OpenSearchOptions(url=proxy.url, collection="x", timeout=5, retries=2)
        client, call = make_client(options), policy(options, "OpenSearch")
        waits: list[float] = []
        call.sleep = waits.append
        assert call("reading the cluster", client.info)["version"]  # faulted once, then answered
        assert waits == ([5.0] if kind == "429" else [0.5])  # Retry-After where sent, else the backoff
        if kind == "500":  # a call that must not happen twice is not tried again after a 500
            with pytest.raises(EngineError, match=r"failed while posting once: TransportError"):
                call("posting once", client.info, idempotent=False)


def test_qdrant_waits_what_retry_after_asks(plugins):
    from vx_eval.plugins.engines.qdrant import QdrantOptions
    from vx_eval.plugins.engines.qdrant_calls import policy

    with QdrantRest() as qdrant, FaultProxy(qdrant.url, rate=1.0, burst=1, kinds=("429",), retry_after=3) as proxy:
        from qdrant_client import QdrantClient

        client = QdrantClient(url=proxy.url, timeout=5)
        call = policy(QdrantOptions(url=proxy.url, collection="x", retries=2), "Qdrant", proxy.url)
        waits: list[float] = []
        call.sleep = waits.append
        assert call("looking up collection x", lambda: client.collection_exists("x")) is False
        assert waits == [3.0]


def test_retry_after_reads_seconds_and_dates():
    import datetime as dt
    from email.utils import format_datetime

    from vx_eval.core.remote import retry_after_of

    class Answered(Exception):
        def __init__(self, headers):
            self.response = type("Response", (), {"headers": headers})()

    assert retry_after_of(Answered({"Retry-After": "7"})) == 7.0
    later = format_datetime(dt.datetime.now(dt.UTC) + dt.timedelta(seconds=30), usegmt=True)
    assert 25 < retry_after_of(Answered({"retry-after": later})) <= 30
    assert retry_after_of(Answered({"Retry-After": "soon"})) is None
    assert retry_after_of(Answered({})) is None and retry_after_of(ValueError()) is None


FLAKY_RUNS = 20


@pytest.mark.slow
def test_twenty_runs_under_a_fifth_of_calls_faulted_score_as_a_clean_run_and_count_their_retries(
    project, plugins, osmem
):
    """Resets, 429 with Retry-After, 500, 503 and answers slower than the timeout, on a fifth of every call
    (index made, chunks written, documents listed, searched): each of 20 seeded runs scores exactly as a run
    on a clean network, none fails a search, and the report counts the calls and retries per target."""

    def target(url: str, collection: str) -> dict:
        options = {"url": url, "collection": collection, "dense_models": [], "timeout": 0.8, "retries": RETRIES}
        return {"name": "OpenSearch", "engine": "opensearch", "options": {**options, "mode": "dense"}}

    def run(url: str, collection: str):
        config = project.write_config(targets=[target(url, collection)])
        return run_experiment(load_config(config, plugins), plugins, RunOptions(save=False)).report

    clean = run(osmem, "clean")
    expected = {s.key: s.summary for s in clean.setups}
    seen: Counter[str] = Counter()
    retried = 0
    for seed in range(FLAKY_RUNS):
        with FaultProxy(osmem, rate=0.2, seed=seed, delay=1.2, retry_after=0.2) as proxy:
            report = run(proxy.url, f"flaky{seed}")
        assert {s.key: s.summary for s in report.setups} == expected, seed
        assert all(s.counts.failed == 0 for s in report.setups), seed
        calls = report.targets["OpenSearch"].calls
        faulted = sum(proxy.faults.values())
        # every fault cost one more try (a loaded machine may add a timeout of its own), and none was given up;
        # a call may be several requests (a scroll), never fewer
        assert 0 < calls.calls <= proxy.requests and calls.retried >= faulted and calls.failed == 0, (seed, calls)
        seen.update(proxy.faults)
        retried += calls.retried
    assert retried >= sum(seen.values()) and all(seen[kind] for kind in KINDS), seen  # every kind of fault met


@pytest.mark.slow
def test_a_run_with_a_search_that_still_fails_exits_4_and_keeps_its_report(project, osmem):
    with FaultProxy(osmem, rate=0.0, doomed=doomed_on("investments")) as proxy:
        options = {"url": proxy.url, "collection": "doomed", "mode": "dense", "dense_models": [], "retries": 1}
        config = project.write_config(targets=[sqlite_target(), {"name": "OpenSearch", "engine": "opensearch",
                                                                  "options": options}])  # fmt: skip

        def vx(*extra: str) -> subprocess.CompletedProcess:
            argv = [sys.executable, "-m", "vx_eval", "run", str(config), *extra]
            return subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=project.root)

        failing = vx()
        allowed = vx("--allow-failures")
    assert failing.returncode == 4 and "Traceback" not in failing.stderr
    assert "error: 1 searches failed after every try (opensearch.keyword 1)" in failing.stderr
    assert "averages are over the other 4 questions: partial" in failing.stdout
    assert "calls: OpenSearch:" in failing.stdout and "1 failed after every try" in failing.stdout
    assert len(list((project.root / "runs").rglob("report.json"))) == 2  # both kept
    assert allowed.returncode == 0 and "warning: 1 searches failed" in allowed.stderr
