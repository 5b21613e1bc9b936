"""A run killed with SIGKILL part-way leaves no partial report and no corrupt history."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from vx_eval.core.history import list_runs
from vx_eval.core.stores import Stores


def test_a_run_killed_mid_way_leaves_no_partial_report_and_history_stays_readable(project, plugins):
    runs = project.root / "runs"
    config = project.write_config()
    assert (
        subprocess.run(
            [sys.executable, "-m", "vx_eval", "run", str(config)], capture_output=True, timeout=300
        ).returncode
        == 0
    )
    golden = project.root / "golden.jsonl"
    many = "".join(
        json.dumps({"id": f"m{i}", "question": f"wire transfer fee number {i}", "expected": ["wire"]}) + "\n"
        for i in range(40_000)
    )
    golden.write_text(many)
    process = subprocess.Popen(
        [sys.executable, "-m", "vx_eval", "run", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    time.sleep(4)
    assert process.poll() is None, "the run finished before it could be killed; give it more questions"
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    entries, total = list_runs(Stores(plugins), str(runs))
    assert total == 1 and entries[0].status == "done"  # only the finished run; nothing half-written
    reports = list(runs.glob("retrieval/runs/*/report.json"))
    assert len(reports) == 1 and json.loads(reports[0].read_text())["status"] == "done"
    leftovers = [p for p in runs.rglob("*") if p.is_file() and p.name.startswith(".")]
    assert not [p for p in leftovers if p.name.startswith(".report.json")], leftovers
