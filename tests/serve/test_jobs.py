"""The runs queue by itself: a finished job's file is read once and passed over after, so the loop that
starts pending runs stays as fast with many finished runs kept; requests are answered by the active runs."""

from __future__ import annotations

from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
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
    assert reads == [waiting.id]  # the 30 finished ones were read by submit, never again
    again, new = jobs.submit(request, None, "sha")
    assert again.id == waiting.id and not new
    jobs.cancel(waiting.id)
    assert jobs.active() == [] and jobs.get(waiting.id).status == "cancelled"
