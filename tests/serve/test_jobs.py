"""The runs queue by itself: the waiting and running jobs are an index in memory, so the loop that starts
pending runs reads no job file however many wait or are kept; requests are answered by the active runs."""

from __future__ import annotations

import time

from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
from vx_eval.serve.bounds import Limits
from vx_eval.serve.jobs import Job, Jobs, RunRequest


def test_ended_jobs_are_read_once_and_an_active_one_answers_the_same_request(tmp_path, monkeypatch):
    jobs = Jobs(tmp_path / "jobs", {}, str(tmp_path / "runs"), Stores(load_plugins()), workers=1)
    jobs.stop.set()  # no worker loop: the queue is driven by hand here
    jobs.thread.join()
    request = RunRequest(experiment="quickstart")
    for i in range(30):
        done = Job(id=f"r{i:02d}", experiment="quickstart", request=request, key="k", status="completed",
                   created_at="2026-12-02T00:00:00+00:00")  # fmt: skip
        jobs._save(done)
    waiting, new = jobs.submit(request, None, "sha")
    assert new and waiting.status == "pending"
    reads: list[str] = []
    real_get = Jobs.get
    monkeypatch.setattr(Jobs, "get", lambda self, run_id: reads.append(run_id) or real_get(self, run_id))
    assert [j.id for j in jobs.active()] == [waiting.id]
    jobs._scan()  # nothing changed in the folder since: nothing is read
    assert reads == []
    again, new = jobs.submit(request, None, "sha")
    assert again.id == waiting.id and not new
    jobs.cancel(waiting.id)
    assert jobs.active() == [] and jobs.get(waiting.id).status == "cancelled"


def test_the_loop_survives_an_error_and_healthz_reports_it(tmp_path, monkeypatch):
    jobs = Jobs(tmp_path / "jobs", {}, str(tmp_path / "runs"), Stores(load_plugins()), workers=1)
    try:
        failures = iter([OSError(5, "Input/output error")])

        def reap_once() -> None:
            failure = next(failures, None)
            if failure is not None:
                raise failure

        monkeypatch.setattr(jobs, "_reap", reap_once)
        for _ in range(400):  # up to 20 s: a loaded machine is slow
            if jobs.problem:
                break
            time.sleep(0.05)
        assert jobs.problem and "Input/output error" in jobs.problem
        seen = jobs.last_loop
        deadline = time.monotonic() + 10  # a loop every 0.3 s; a loaded machine may be slower
        while jobs.last_loop <= seen and time.monotonic() < deadline:
            time.sleep(0.05)
        assert jobs.thread.is_alive() and jobs.last_loop > seen  # it went on looping
        assert jobs.health().loop_alive
    finally:
        jobs.close()


def test_finished_jobs_files_are_removed_past_the_count_kept(tmp_path):
    folder = tmp_path / "jobs"
    folder.mkdir()
    request = RunRequest(experiment="quickstart")
    for i in range(5):
        done = Job(id=f"r{i}", experiment="quickstart", request=request, key="k", status="completed",
                   created_at="2026-12-02T00:00:00+00:00", finished_at=f"2026-12-02T00:00:0{i}+00:00")  # fmt: skip
        (folder / f"r{i}.json").write_text(done.model_dump_json())
        (folder / f"r{i}.log").write_text("log")
    old = Job(id="old", experiment="quickstart", request=request, key="k", status="failed",
              created_at="2020-01-01T00:00:00+00:00", finished_at="2020-01-01T00:00:00+00:00")  # fmt: skip
    (folder / "old.json").write_text(old.model_dump_json())
    (folder / ".r9.json.partial").write_text("")  # a killed server's unfinished write
    jobs = Jobs(folder, {}, str(tmp_path / "runs"), Stores(load_plugins()), workers=1,
                limits=Limits(keep_jobs=3, keep_jobs_days=30))  # fmt: skip
    try:
        for _ in range(400):  # up to 20 s: a loaded machine is slow
            if len(list(folder.glob("*.json"))) == 3:
                break
            time.sleep(0.05)
        assert sorted(p.name for p in folder.iterdir()) == [
            "r2.json",
            "r2.log",
            "r3.json",
            "r3.log",
            "r4.json",
            "r4.log",
        ]
    finally:
        jobs.close()


def test_a_run_id_is_checked_before_any_path_is_made(tmp_path):
    jobs = Jobs(tmp_path / "jobs", {}, str(tmp_path / "runs"), Stores(load_plugins()), workers=1)
    try:
        for odd in ("r" * 300, "../x", "a/b", "", ".hidden"):
            assert jobs.get(odd) is None and jobs.cancel(odd) is None
    finally:
        jobs.close()
