"""Re-runs on change: one run per new golden content, after a burst of saves settles; the cloud triggers."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from vx_eval.core.errors import GoldenError
from vx_eval.core.report.history import list_runs
from vx_eval.core.stores import Stores, join
from vx_eval.core.usecases.pipeline import RunOptions
from vx_eval.core.usecases.watch import Watcher
from vx_eval.plugins.stores.blob import connection_endpoint


def extra(n: int) -> bytes:
    """One more golden row, its question different for every n."""
    return f'{{"id": "x{n}", "question": "How long does wire number {n} take?", "expected": ["wire"]}}\n'.encode()


def runs_at(plugins, place: str, stores: Stores | None = None) -> list:
    return list_runs(stores or Stores(plugins), place, limit=100)[0]


def test_three_saves_during_the_settle_time_cost_one_run_and_the_same_content_never_runs_twice(project, plugins):
    golden = project.root / "golden.jsonl"
    original = golden.read_bytes()
    config = project.write_config()
    saves = iter([original + extra(1), original + extra(1) + extra(2)])

    def sleep_while_saving(seconds: float) -> None:  # each settle period sees another save, until none comes
        data = next(saves, None)
        if data is not None:
            golden.write_bytes(data)

    watcher = Watcher(config, plugins, settle=60, options=RunOptions(), sleep=sleep_while_saving)
    outcome = watcher.check_once()
    assert outcome.action == "ran"
    assert len(runs_at(plugins, str(project.root / "runs"))) == 1
    assert runs_at(plugins, str(project.root / "runs"))[0].golden_sha256 == outcome.sha256
    assert watcher.check_once().action == "seen"  # nothing new: nothing runs
    golden.write_bytes(golden.read_bytes())  # saved again, same bytes
    assert watcher.check_once().action == "seen"
    golden.write_bytes(original)
    assert watcher.check_once().action == "ran"  # a new content (even an older one this experiment never ran)
    assert len(runs_at(plugins, str(project.root / "runs"))) == 2


def test_a_golden_file_caught_half_saved_waits_for_the_save_and_one_never_readable_says_why(project, plugins):
    """An editor's save truncates, then writes: a watcher that reads the file between the two sees no rows.
    That counts as still changing, not as a failure; a file unreadable through every settle period is
    refused with the golden file's own message."""
    golden = project.root / "golden.jsonl"
    original = golden.read_bytes()
    config = project.write_config()
    golden.write_bytes(b"")  # caught half way through a save
    saves = iter([original + extra(7)])

    def finish_saving(seconds: float) -> None:
        data = next(saves, None)
        if data is not None:
            golden.write_bytes(data)

    outcome = Watcher(config, plugins, settle=60, options=RunOptions(), sleep=finish_saving).check_once()
    assert outcome.action == "ran"
    golden.write_bytes(b"")
    stuck = Watcher(config, plugins, settle=60, max_settles=3, options=RunOptions(), sleep=lambda s: None)
    with pytest.raises(GoldenError, match="holds no rows"):
        stuck.check_once()


def test_with_a_short_settle_time_a_burst_of_real_saves_runs_once(project, plugins):
    """Real saves, and the settle time really slept; that the burst ends within it is made sure by an event,
    not by timing (a loaded machine may stall the saver longer than any settle time)."""
    golden = project.root / "golden.jsonl"
    original = golden.read_bytes()
    config = project.write_config()
    settle = 0.4
    burst_done = threading.Event()

    def sleep(seconds: float) -> None:  # the settle period ends after the burst; polls sleep as they are
        if seconds == settle:
            assert burst_done.wait(timeout=120), "the saver never finished"
        time.sleep(seconds)

    watcher = Watcher(config, plugins, settle=settle, options=RunOptions(), sleep=sleep)
    Watcher(config, plugins, settle=0, options=RunOptions()).check_once()  # the current file, run once
    outcomes = []

    def burst() -> None:
        for i in range(3):
            golden.write_bytes(original + extra(20 + i))
            time.sleep(0.1)
        burst_done.set()

    saver = threading.Thread(target=burst)
    saver.start()
    stop_at = time.monotonic() + 120
    watcher.watch(poll=0.05, until=lambda o: outcomes.append(o) or o.action == "ran" or time.monotonic() > stop_at)
    saver.join()
    assert outcomes[-1].action == "ran", outcomes
    runs = runs_at(plugins, str(project.root / "runs"))
    # the first content, then the last of the burst: not one run per save
    assert len(runs) == 2, ([o.action for o in outcomes], [r.golden_sha256[:8] for r in runs])
    assert runs_at(plugins, str(project.root / "runs"))[0].golden_sha256 == outcomes[-1].sha256
    assert watcher.check_once().action == "seen"


def test_the_aws_lambda_handler_runs_on_an_s3_notification_once_per_content(project, plugins, moto_s3, monkeypatch):
    import boto3

    from vx_eval.triggers import aws_lambda_handler

    bucket = f"evals-{uuid.uuid4().hex[:8]}"
    boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1").create_bucket(Bucket=bucket)
    stores = Stores(plugins, options={"s3": {"endpoint_url": moto_s3}})
    golden = f"s3://{bucket}/policies/golden.jsonl"
    stores.write(golden, (project.root / "golden.jsonl").read_bytes())
    config = project.write_config(
        golden=golden, save_to=f"s3://{bucket}/policies", stores={"s3": {"endpoint_url": moto_s3}}
    )
    monkeypatch.setenv("VX_EVAL_CONFIG", str(config))
    monkeypatch.setenv("VX_EVAL_SETTLE", "0")
    event = {
        "Records": [
            {
                "eventName": "ObjectCreated:Put",
                "s3": {"bucket": {"name": bucket}, "object": {"key": "policies/golden.jsonl"}},
            }
        ]
    }
    first = aws_lambda_handler(event, None)
    assert first["action"] == "ran" and first["run"]
    assert aws_lambda_handler(event, None)["action"] == "seen"
    other = {"Records": [{"s3": {"bucket": {"name": bucket}, "object": {"key": "policies/notes.txt"}}}]}
    assert aws_lambda_handler(other, None)["action"] == "ignored"
    assert [r.id for r in runs_at(plugins, f"s3://{bucket}/policies", stores)] == [first["run"]]


def test_the_azure_function_handler_runs_on_a_blob_created_event(project, plugins, azurite, monkeypatch):
    from azure.storage.blob import BlobServiceClient

    from vx_eval.triggers import azure_function_handler

    monkeypatch.setenv("VX_TEST_AZURITE", azurite)
    container = f"evals-{uuid.uuid4().hex[:8]}"
    BlobServiceClient.from_connection_string(azurite).create_container(container)
    settings = {"azure-blob": {"connection_string": {"env": "VX_TEST_AZURITE"}}}
    stores = Stores(plugins, options=settings)
    root = f"{connection_endpoint(azurite)}/{container}"
    golden = join(root, "golden.jsonl")
    stores.write(golden, (project.root / "golden.jsonl").read_bytes())
    config = project.write_config(golden=golden, save_to=root, stores=settings)
    monkeypatch.setenv("VX_EVAL_CONFIG", str(config))
    monkeypatch.setenv("VX_EVAL_SETTLE", "0")
    event = {
        "eventType": "Microsoft.Storage.BlobCreated",
        "subject": f"/blobServices/default/containers/{container}/blobs/golden.jsonl",
        "data": {"api": "PutBlob", "url": golden},
    }
    assert azure_function_handler(event)["action"] == "ran"
    assert azure_function_handler(event)["action"] == "seen"
    assert len(runs_at(plugins, root, stores)) == 1
