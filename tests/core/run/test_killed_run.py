"""A run killed with SIGKILL part-way leaves no partial report, shows as incomplete, and resumes to the
same measures as a run that was never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from vx_eval.core.report.history import list_runs
from vx_eval.core.stores import Stores

QUESTIONS = 20_000
WORDS = ["wire", "loan", "card", "fee", "abroad", "payment", "disaster", "funds", "invest", "report", "growth", "risk"]


def vx(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """`vx-eval` in a child process; callers pass `cwd` outside the checkout (whose vx_eval/ folder would
    shadow the installed package)."""
    return subprocess.run(
        [sys.executable, "-m", "vx_eval", *args], capture_output=True, text=True, timeout=600, **kwargs
    )


@pytest.mark.slow
def test_a_killed_run_leaves_no_partial_report_and_resumes_to_the_same_measures(project, plugins):
    runs = project.root / "runs"
    golden = project.root / "golden.jsonl"
    golden.write_text(
        "".join(
            json.dumps(
                {
                    "id": f"m{i}",
                    "question": f"{WORDS[i % 12]} {WORDS[(i // 12) % 12]} number {i}",
                    "expected": [["wire", "deferment", "card-lost"][i % 3]],
                }
            )
            + "\n"
            for i in range(QUESTIONS)
        )
    )
    config = project.write_config(
        evaluation={"metrics": ["found@10", "mrr", "ndcg@10"], "depth": 10, "shard_size": 1000}
    )
    whole = vx("run", str(config), "--json", cwd=project.root)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout)

    log = (project.root / "killed.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "vx_eval", "run", str(config)], cwd=project.root, stdout=subprocess.DEVNULL, stderr=log
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(runs.glob("retrieval/runs/*/checkpoints/*.shard*.json"))) < 2:
        time.sleep(0.02)
    assert process.poll() is None, (
        "the run ended before it could be killed: " + (project.root / "killed.log").read_text()[-3000:]
    )
    os.kill(process.pid, signal.SIGKILL)
    process.wait()

    entries, total = list_runs(Stores(plugins), str(runs))
    assert total == 2
    killed = next(e for e in entries if e.id != expected["id"])
    assert killed.status == "incomplete" and killed.reason.startswith("`vx-eval run CONFIG --resume ")
    assert not (runs / "retrieval" / "runs" / killed.id / "report.json").exists()  # no partial report
    finished = len(list((runs / "retrieval" / "runs" / killed.id / "checkpoints").glob("*.shard*.json")))
    assert 2 <= finished < QUESTIONS // 1000

    resumed = vx("run", str(config), "--resume", killed.id, "--json", cwd=project.root)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming run {killed.id}: {finished} of 20 (setup, shard) parts done" in resumed.stderr
    report = json.loads(resumed.stdout)
    assert report["id"] == killed.id
    (ours,), (theirs,) = report["setups"], expected["setups"]
    assert ours["summary"] == theirs["summary"] and ours["ci"] == theirs["ci"]
    assert ours["per_question"]["metrics"] == theirs["per_question"]["metrics"]
    assert ours["per_question"]["results"] == theirs["per_question"]["results"]
    assert not list((runs / "retrieval" / "runs" / killed.id).glob("checkpoints/*.json"))  # tidied away
    entries, _ = list_runs(Stores(plugins), str(runs))
    assert [e.status for e in entries] == ["completed", "completed"]


def test_resume_refuses_a_changed_golden_file_and_an_unknown_run(project, plugins):
    from vx_eval.core.report.saving import Manifest
    from vx_eval.core.run.checkpoints import Checkpoints

    config = project.write_config()
    done = vx("run", str(config), "--resume", "20260101T000000000000Z-abcdef", cwd=project.root)
    assert done.returncode == 2 and "no checkpoints of run '20260101T000000000000Z-abcdef'" in done.stderr
    started = Checkpoints(Stores(plugins), str(project.root / "runs"), "20260101T000000000000Z-aaaaaa")
    started.start(
        Manifest(
            id=started.run_id,
            started_at="2026-01-01T00:00:00+00:00",
            config_sha256="x",
            golden_sha256="y",
            setups=["local.keyword"],
            shard_size=50,
            questions=5,
        )
    )
    done = vx("run", str(config), "--resume", started.run_id, cwd=project.root)
    assert done.returncode == 2
    assert "the golden file and the config changed since run 20260101T000000000000Z-aaaaaa started" in done.stderr
