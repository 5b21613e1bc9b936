"""Raters grading at once never lose one another's grades: 8 raters, 25 grades each, at the same moment, as
threads of one process and as separate processes, on the local store, S3 (moto's server) and Azure Blob
(Azurite). Every grade is kept once; a retried append is not kept twice; a damaged line is named and the rest
read."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import uuid

import pytest

from vx_eval.core.golden.human import HumanGrade, add_grade, parse_grades, read_grades
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores

RATERS, EACH = 8, 25


@pytest.fixture(params=["local", "s3", "blob"])
def place(request, tmp_path) -> tuple[Stores, str, dict]:
    """A store and where its grades file lies, with the store options a separate process needs."""
    if request.param == "local":
        return Stores(load_plugins()), str(tmp_path / "golden.grades.jsonl"), {}
    if request.param == "s3":
        import boto3

        endpoint = request.getfixturevalue("moto_s3")
        bucket = f"grades-{uuid.uuid4().hex[:10]}"
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(Bucket=bucket)
        options = {"s3": {"endpoint_url": endpoint}}
        return Stores(load_plugins(), options=options), f"s3://{bucket}/golden.grades.jsonl", options
    from azure.storage.blob import BlobServiceClient

    from vx_eval.plugins.stores.blob import connection_endpoint

    azurite = request.getfixturevalue("azurite")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("VX_TEST_AZURITE", azurite)
    container = f"grades-{uuid.uuid4().hex[:10]}"
    BlobServiceClient.from_connection_string(azurite).create_container(container)
    options = {"azure-blob": {"connection_string": {"env": "VX_TEST_AZURITE"}}}
    return (
        Stores(load_plugins(), options=options),
        f"{connection_endpoint(azurite)}/{container}/golden.grades.jsonl",
        options,
    )


def _grade(rater: int, n: int) -> HumanGrade:
    return HumanGrade(question=f"q{n}", unit=f"d{n}", grade=n % 4, rater=f"rater{rater}")


def _kept_all(stores: Stores, location: str) -> None:
    kept = read_grades(stores, location)
    assert kept.damaged == ()
    pairs = {(g.rater, g.question) for g in kept.grades}
    assert len(kept.grades) == len(pairs) == RATERS * EACH
    lines = [line for line in stores.read(location).decode().splitlines() if line]
    assert len(lines) == RATERS * EACH  # each appended once
    assert len({json.loads(line)["id"] for line in lines}) == RATERS * EACH


def test_eight_raters_in_threads_keep_all_200_grades(place):
    stores, location, _ = place
    start = threading.Barrier(RATERS)
    failures: list[BaseException] = []

    def rate(rater: int) -> None:
        start.wait()
        try:
            for n in range(EACH):
                add_grade(stores, location, _grade(rater, n))
        except BaseException as exc:  # any failure is the test's
            failures.append(exc)

    threads = [threading.Thread(target=rate, args=(r,)) for r in range(RATERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    _kept_all(stores, location)


RATE_IN_A_PROCESS = """
import json, sys, time
from vx_eval.core.golden.human import HumanGrade, add_grade
from vx_eval.core.plugins import load_plugins
from vx_eval.core.stores import Stores
rater, location, options, at = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]), float(sys.argv[4])
stores = Stores(load_plugins(), options=options)
while time.time() < at:
    time.sleep(0.005)
for n in range(25):
    add_grade(stores, location, HumanGrade(question=f"q{n}", unit=f"d{n}", grade=n % 4, rater=f"rater{rater}"))
"""


def test_eight_raters_in_separate_processes_keep_all_200_grades(place):
    import time

    stores, location, options = place
    at = time.time() + 8  # every process has loaded by then: they start grading at one moment
    workers = [
        subprocess.Popen([sys.executable, "-c", RATE_IN_A_PROCESS, str(r), location, json.dumps(options), str(at)])
        for r in range(RATERS)
    ]
    codes = [w.wait(timeout=240) for w in workers]
    assert codes == [0] * RATERS
    _kept_all(stores, location)


def test_an_append_tried_again_is_kept_once_and_a_newer_grade_counts(tmp_path):
    stores, location = Stores(load_plugins()), str(tmp_path / "g.grades.jsonl")
    first = add_grade(stores, location, _grade(1, 1))
    add_grade(stores, location, first)  # the same grade (its id) again: a retry whose answer was lost
    add_grade(stores, location, _grade(1, 1).model_copy(update={"grade": 3}))
    kept = read_grades(stores, location)
    assert [g.grade for g in kept.grades] == [3]  # the newest of rater1 for (q1, d1)
    assert len(stores.read(location).decode().splitlines()) == 2


def test_a_damaged_line_is_named_kept_in_the_file_and_never_loses_the_rest(tmp_path):
    stores, location = Stores(load_plugins()), str(tmp_path / "g.grades.jsonl")
    add_grade(stores, location, _grade(1, 1))
    with open(location, "ab") as handle:  # a half-written line of an older writer, no newline at its end
        handle.write(b'{"question": "q2", "unit": "d2", "gra')
    add_grade(stores, location, _grade(1, 3))
    kept = read_grades(stores, location)
    assert [g.question for g in kept.grades] == ["q1", "q3"]
    assert len(kept.damaged) == 1 and ":2: not a grade" in kept.damaged[0]
    assert b'"gra\n{' in stores.read(location)  # the damaged line stays as it was, on a line of its own
    assert parse_grades(b"not json\n", "x").damaged[0].startswith("x:1: not a grade")
