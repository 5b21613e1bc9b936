"""Runs started over the API, with `vx-eval serve` as its own process: a runner keeps a dataset in Mixpeek's shape
and starts a run that ends as a CLI run of the same experiment does; a run is cancelled mid-way with its
checkpoints kept; the server killed with a run in progress finishes it under the same id when it starts
again; readers and guests are refused what is not theirs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import yaml
from playwright.sync_api import expect

from vx_eval.serve.auth import Users
from vx_eval.testing.processes import free_port, start_server
from vx_eval.views.display import fmt

from ..conftest import quickstart_copy

MIXPEEK = {
    "name": "help-centre",
    "queries": [
        {
            "query_id": "m1",
            "query_input": {"query": "Can a customer postpone a loan payment after a wildfire?"},
            "relevant_documents": ["deferment", "wildfire-relief"],
            "relevance_scores": {"deferment": 3, "wildfire-relief": 2},
        },
        {
            "query_id": "m2",
            "query_input": {"query": "What does sending money abroad by wire cost?"},
            "relevant_documents": ["wire"],
            "relevance_scores": {"wire": 3},
        },
        {
            "query_id": "m3",
            "query_input": {"query": "How do I freeze a lost card?"},
            "relevant_documents": ["card-lost"],
        },
    ],
}


class Served:
    def __init__(self, folder: Path, config: Path) -> None:
        self.folder, self.config = folder, config
        self.users = folder / "users.json"
        people = Users(self.users)
        people.add_person("rui", "rui-password", "runner")
        people.add_person("rita", "rita-password", "reader")
        people.add_person("ada", "ada-password", "admin")
        self.keys = {name: people.add_key(name) for name in ("rui", "rita", "ada")}
        self.port = free_port()
        self.server = None

    def start(self, *more: str) -> None:
        argv = [sys.executable, "-m", "vx_eval", "serve", "--config", str(self.config), "--users", str(self.users),
                "--port", str(self.port), "--workers", "1", *more]  # fmt: skip
        log = (self.folder / "server.log").open("ab")
        self.server = start_server(argv, port=self.port, what="vx-eval serve", cwd=self.folder, stderr=log)

    def kill(self) -> None:
        os.killpg(self.server.pid, signal.SIGKILL)  # no shutdown at all: its runs die with it
        self.server.process.wait()

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()

    def call(self, method: str, path: str, who: str | None = "rui", **kwargs) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.keys[who]}"} if who else {}
        return httpx.request(method, f"http://127.0.0.1:{self.port}{path}", headers=headers, timeout=60, **kwargs)

    def wait(self, run_id: str, *, until: tuple[str, ...] = ("completed", "failed", "cancelled"), seconds: float = 240):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            body = self.call("GET", f"/api/v1/evaluations/{run_id}", who="rita").json()
            if body.get("status") in until:
                return body
            time.sleep(0.5)
        raise AssertionError(f"run {run_id} did not reach {until} in {seconds} s: {body}")


@pytest.fixture
def served(tmp_path, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache, keyword_only=True)
    data = yaml.safe_load(config.read_text())
    data["evaluation"]["shard_size"] = 5  # checkpoints early, for the cancelled and interrupted runs
    config.write_text(yaml.safe_dump(data), encoding="utf-8")
    made = Served(tmp_path, config)
    made.start()
    yield made
    made.stop()


@pytest.mark.slow
def test_a_runner_keeps_a_dataset_and_starts_a_run_that_ends_as_the_cli_run_does(served):
    kept = served.call("POST", "/api/v1/datasets", json=MIXPEEK)
    assert kept.status_code == 201, kept.text
    sha = kept.json()["current"]
    listed = served.call("GET", "/api/v1/datasets", who="rita").json()["datasets"]
    assert listed == [{"name": "help-centre", "current": sha, "versions": 1, "questions": 3}]
    assert served.call("GET", "/api/v1/datasets/help-centre/rows", who="rita").status_code == 403
    assert served.call("GET", "/api/v1/datasets/help-centre/rows", who=None).status_code == 403
    assert served.call("GET", "/api/v1/datasets/help-centre/rows", who="ada").status_code == 403  # a key, not a person
    assert served.call("POST", "/api/v1/evaluations", who="rita", json={"experiment": "quickstart"}).status_code == 403
    bad = served.call("POST", "/api/v1/datasets", json={"name": "x", "queries": [{"query_id": "a", "query_input": {
        "query": "?"}, "relevant_documents": ["d"], "relevance_scores": {"d": 9}}]})  # fmt: skip
    assert bad.status_code == 422 and "relevance_scores" in json.dumps(bad.json()["detail"])
    unknown = served.call("POST", "/api/v1/evaluations", json={"experiment": "nope"})
    assert unknown.status_code == 422 and unknown.json()["detail"][0]["loc"] == ["body", "experiment"]

    started = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "dataset": "help-centre"})
    assert started.status_code == 202 and started.json()["status"] == "pending"
    run_id = started.json()["id"]
    again = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "dataset": "help-centre"})
    assert again.json()["id"] == run_id and again.json()["new"] is False  # the same event twice starts one run
    report = served.wait(run_id)
    assert report["status"] == "completed" and report["id"] == run_id and report["golden"]["sha256"] == sha
    rows = served.folder / "runs" / "datasets" / "help-centre" / f"{sha}.jsonl"
    cli = subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(served.config), "--golden", str(rows), "--no-save", "--json"],
        capture_output=True, text=True, check=True, cwd=served.folder,
    )  # fmt: skip
    theirs = json.loads(cli.stdout)
    assert [s["key"] for s in report["setups"]] == [s["key"] for s in theirs["setups"]]
    for ours, cli_setup in zip(report["setups"], theirs["setups"], strict=True):
        assert ours["per_question"]["metrics"] == cli_setup["per_question"]["metrics"]
    now = served.call("POST", "/api/v1/evaluations/now", json={"experiment": "quickstart"})
    assert now.status_code == 202
    assert served.wait(now.json()["id"])["status"] == "completed"
    log = (served.folder / "access.log").read_text()
    assert '"event": "run started"' in log and '"event": "dataset kept"' in log


@pytest.mark.slow
def test_a_cancelled_run_keeps_its_checkpoints_and_a_killed_server_finishes_its_run(served):
    slow = yaml.safe_load(served.config.read_text())  # every method: long enough to stop in the middle
    slow["targets"][0]["options"].update(mode="hybrid", dense_models=["minilm"])
    served.config.write_text(yaml.safe_dump(slow), encoding="utf-8")
    first = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart"}).json()["id"]
    body = served.wait(first, until=("in_progress",))
    while body["progress"]["searches_done"] < 10:
        body = served.wait(first, until=("in_progress", "completed"))
        assert body["status"] == "in_progress", "the run ended before it could be cancelled"
    cancelled = served.call("POST", f"/api/v1/evaluations/{first}/cancel")
    assert cancelled.status_code == 200
    assert served.wait(first)["status"] == "cancelled"
    folder = served.folder / "runs" / "retrieval" / "runs" / first
    assert list((folder / "checkpoints").glob("*.json")) and not (folder / "report.json").exists()
    assert served.call("POST", f"/api/v1/evaluations/{first}/cancel", who="rita").status_code == 403

    second = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "only": ["local.*"]}).json()
    body = served.wait(second["id"], until=("in_progress",))
    while body["progress"]["searches_done"] < 10:
        body = served.wait(second["id"], until=("in_progress",))
    served.kill()
    served.start()  # the interrupted run resumes from its checkpoints, under the same id
    report = served.wait(second["id"])
    assert report["status"] == "completed" and report["id"] == second["id"]
    (log,) = served.folder.glob(f"jobs/*/{second['id']}.log")  # jobs/<the store's sha256>/: this store's queue
    assert "resuming run" in log.read_text()


@pytest.mark.slow
def test_a_runner_starts_a_run_from_the_page_and_sees_it_progress_to_the_report(served, page, tmp_path):
    page.goto(f"http://127.0.0.1:{served.port}/")
    expect(page.locator("h1")).to_have_text("No runs yet")  # a new server: nothing to show but the sign-in
    assert page.locator("#start-run").count() == 0
    page.click("#sign-in-link")
    page.fill("#username", "rui")
    page.fill("#password", "rui-password")
    page.click("#sign-in")
    expect(page.locator("#signed-in")).to_have_text("rui")
    assert page.locator("#start-experiment option").all_inner_texts() == ["quickstart"]
    page.select_option("#start-experiment", "quickstart")
    page.click("#start-button")
    page.wait_for_url("**/runs/*")
    run_id = page.url.rsplit("/", 1)[-1]
    assert page.locator("#run-status").inner_text() in ("pending", "in_progress")  # the progress page first
    assert (
        "searches" in page.locator("#run-progress").inner_text()
        or "starting" in page.locator("#run-progress").inner_text()
    )
    expect(page.locator("body")).to_have_attribute("data-run", run_id, timeout=240_000)  # reloads itself to the report
    report = served.call("GET", f"/api/v1/evaluations/{run_id}", who="rita").json()
    assert report["status"] == "completed"
    primary = report["settings"]["primary"]
    best = next(s for s in report["setups"] if s["key"] == report["picks"]["finds_the_most"])
    card = page.locator('[data-pick="finds_the_most"]')
    assert card.get_attribute("data-key") == best["key"]
    assert fmt(primary, best["summary"][primary]) in card.inner_text()
    assert page.locator("#start-run").is_visible()  # the report's page offers the next run too
    page.screenshot(path=str(tmp_path / "started-run.png"))
    log = [json.loads(line) for line in (served.folder / "access.log").read_text().splitlines()]
    started = [e for e in log if e.get("event") == "run started"]
    assert [(e["run"], e["caller"], e["name"]) for e in started] == [(run_id, "person", "rui")]


@pytest.mark.slow
def test_a_runner_starts_a_run_on_a_target_with_no_configuration_and_it_ends_as_the_cli_run_does(
    tmp_path, shared_cache
):
    """`serve --target help=sqlite:INDEX`: a runner names the target and nothing else; the run reads what the
    index holds, takes the questions drafted for it (kept beside its config in the server's folder), grades
    every top 10 with the judge, and gives what `vx-eval run --target` gives in the same folder."""
    from vx_eval.core.plugins import load_plugins
    from vx_eval.zeroconfig.autoconfig import from_target, workspace

    config = quickstart_copy(tmp_path, shared_cache, keyword_only=True)
    subprocess.run(
        [sys.executable, "-m", "vx_eval", "run", str(config), "--no-save", "--json"],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )  # fmt: skip  (builds the index the target names)
    spec = f"sqlite:{tmp_path / '.vx' / 'quickstart.db'}"
    work = workspace(from_target(spec, load_plugins()), tmp_path)
    work.mkdir(parents=True)  # questions a writer drafted earlier for this index (drafting is tested elsewhere)
    questions = ["Can a customer postpone a loan payment after a wildfire?", "wire fee abroad", "freeze lost card"]
    (work / "golden.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "question": q, "reference": "-", "draft": True}) + "\n"
                for i, q in enumerate(questions))
    )  # fmt: skip
    served = Served(tmp_path, config)
    served.start("--target", f"help={spec}")
    try:
        listed = served.call("GET", "/api/v1/experiments", who="rita").json()
        assert listed == {"experiments": ["quickstart"], "targets": ["help"]}
        for body, field in (({"target": "nope"}, "target"), ({"target": "help", "dataset": "x"}, None), ({}, None)):
            refused = served.call("POST", "/api/v1/evaluations", json=body)
            assert refused.status_code == 422, body
            assert field is None or refused.json()["detail"][0]["loc"] == ["body", field]
        assert served.call("POST", "/api/v1/evaluations", who="rita", json={"target": "help"}).status_code == 403
        started = served.call("POST", "/api/v1/evaluations", json={"target": "help"})
        assert started.status_code == 202 and started.json()["target"] == "help", started.text
        assert served.call("POST", "/api/v1/evaluations", json={"target": "help"}).json()["id"] == started.json()["id"]
        report = served.wait(started.json()["id"])
        assert report["status"] == "completed", report
        assert report["golden"]["drafts"] == 3 and report["judge"]["grades_from"]["judge"] > 0
        assert report["settings"]["primary"] == "dcg@10" and report["setups"]
        assert [s["key"] for s in report["setups"]] == ["quickstart.keyword"]  # a keyword-only index: one setup
    finally:
        served.stop()
    cli = subprocess.run([sys.executable, "-m", "vx_eval", "run", "--target", spec, "--no-save", "--json"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)  # fmt: skip
    theirs = json.loads(cli.stdout)
    assert [s["key"] for s in report["setups"]] == [s["key"] for s in theirs["setups"]]
    for ours, cli_setup in zip(report["setups"], theirs["setups"], strict=True):
        assert ours["per_question"]["metrics"] == cli_setup["per_question"]["metrics"]
    log = (tmp_path / "access.log").read_text()
    assert '"target": "help"' in log
