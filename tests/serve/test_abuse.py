"""The server under a hostile caller and a full disk, with `vx-eval serve` as its own process on 127.0.0.1:
bodies and datasets bounded before they are read whole, a bounded queue per person, odd run ids and
non-finite numbers answered with a 4xx (and logged), bad run requests refused at the door, a damaged
dataset listed as damaged, and a queue that survives a full disk and says so on /healthz."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from vx_eval.serve.auth import Users

from .test_server_runs import MIXPEEK, Served, quickstart_copy

LONG_ID = "r" * 300


def raw_post(port: int, path: str, headers: dict[str, str], body: bytes = b"") -> tuple[int, bytes]:
    """A POST over a plain socket (headers, then `body`, which may be shorter than declared), and the
    status and body of what the server answers; the connection is closed after."""
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
    head += "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head.encode() + body)
        data = b""
        while b"\r\n\r\n" not in data or len(data) < data.index(b"\r\n\r\n") + 4 + _length(data):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


def _length(data: bytes) -> int:
    for line in data.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":", 1)[1])
    return 0


def rss_kib(pid: int) -> int:
    """Resident memory of `pid` and its children (uvicorn runs in the server's own process)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


@pytest.fixture(scope="module")
def served(tmp_path_factory, shared_cache) -> Iterator[Served]:
    """One server for the door tests: one worker, two runs at most per person, small bodies and datasets."""
    folder = tmp_path_factory.mktemp("abuse")
    config = quickstart_copy(folder, shared_cache, keyword_only=True)
    made = Served(folder, config)
    made.start("--max-body", "1", "--max-dataset-rows", "50", "--max-queued-per-person", "2",
               "--head-timeout", "2", "--body-timeout", "3")  # fmt: skip
    yield made
    made.stop()


def access_log(served: Served) -> list[dict]:
    return [json.loads(line) for line in (served.folder / "access.log").read_text().splitlines()]


def test_a_body_past_the_limit_is_refused_before_it_is_read(served):
    before = rss_kib(served.server.pid)
    started = time.monotonic()
    status, body = raw_post(  # 200 MB declared, none of it sent: the answer comes without waiting for it
        served.port, "/api/v1/datasets", {"Content-Type": "application/json", "Content-Length": str(200 * 2**20)}
    )
    assert status == 413 and "--max-body" in json.loads(body)["detail"]
    assert time.monotonic() - started < 10
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [b"[" + b"1," * 400_000] * 2) + b"0\r\n\r\n"
    status, body = raw_post(
        served.port, "/api/v1/datasets", {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, chunked
    )
    assert status == 413  # no length declared: counted as the bytes arrive
    assert rss_kib(served.server.pid) - before < 50_000
    rows = {"name": "big", "queries": [MIXPEEK["queries"][2]] * 51}
    too_many = served.call("POST", "/api/v1/datasets", json=rows)
    assert too_many.status_code == 413 and "51 items" in too_many.json()["detail"]
    assert {"path": "/api/v1/datasets", "status": 413} in [{k: e.get(k) for k in ("path", "status")}
                                                             for e in access_log(served)]  # fmt: skip


def test_non_finite_numbers_are_a_422_for_anyone(served):
    for path in ("/api/v1/evaluations", "/api/v1/datasets"):
        for value in (b"NaN", b"Infinity", b"-Infinity"):
            status, body = raw_post(
                served.port, path, {"Content-Type": "application/json", "Content-Length": str(16 + len(value))},
                b'{"experiment": ' + value + b"}",
            )  # fmt: skip
            assert status == 422, (path, value, body)
            assert "not a JSON number" in json.dumps(json.loads(body))


def test_odd_run_ids_are_a_404_and_logged(served):
    assert served.call("GET", f"/api/v1/evaluations/{LONG_ID}", who=None).status_code == 404
    assert served.call("GET", f"/runs/{LONG_ID}", who=None).status_code == 404
    assert served.call("POST", f"/api/v1/evaluations/{LONG_ID}/cancel").status_code == 404
    assert served.call("GET", "/api/v1/evaluations/..%2F..%2Fetc", who=None).status_code == 404
    assert served.call("GET", "/api/v1/evaluations/not-a-run-here", who=None).status_code == 404
    logged = [(e["path"], e["status"]) for e in access_log(served) if LONG_ID in e.get("path", "")]
    assert (f"/api/v1/evaluations/{LONG_ID}", 404) in logged and (f"/runs/{LONG_ID}", 404) in logged
    assert all(status < 500 for _, status in logged)


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        ({"experiment": "quickstart", "k_values": [0]}, "k_values"),
        ({"experiment": "quickstart", "k_values": [-1]}, "k_values"),
        ({"experiment": "quickstart", "k_values": [10**30]}, "k_values"),
        ({"experiment": "quickstart", "k_values": [21]}, "k_values"),
        ({"experiment": "quickstart", "metrics": ["found@21"]}, "metrics"),
        ({"experiment": "quickstart", "metrics": ["ndcg"], "k_values": [30]}, "k_values"),
        ({"experiment": "quickstart", "metrics": ["bogus@3"]}, "metrics"),
    ],
)
def test_a_bad_run_request_is_refused_at_the_door(served, request_body, field):
    refused = served.call("POST", "/api/v1/evaluations", json=request_body)
    assert refused.status_code == 422, refused.text
    assert refused.json()["detail"][0]["loc"][-1] == field or refused.json()["detail"][0]["loc"][1] == field


def test_a_damaged_dataset_is_listed_as_damaged_and_the_rest_answer(served):
    assert served.call("POST", "/api/v1/datasets", json=MIXPEEK).status_code == 201
    root = served.folder / "runs" / "datasets"
    for name, text in (("broken", "{not json"), ("mistyped", json.dumps({"name": "x", "current": 3, "versions": 7}))):
        (root / name).mkdir(parents=True)
        (root / name / "index.json").write_text(text)
    listed = {d["name"]: d for d in served.call("GET", "/api/v1/datasets", who="rita").json()["datasets"]}
    assert listed["help-centre"]["questions"] == 3
    assert "not JSON" in listed["broken"]["damaged"] and "damaged" in listed["mistyped"]["damaged"]
    one = served.call("GET", "/api/v1/datasets/broken", who="rita")
    assert one.status_code == 409 and one.json()["damaged"] is True
    run = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "dataset": "mistyped"})
    assert run.status_code == 422 and run.json()["detail"][0]["loc"] == ["body", "dataset"]
    assert served.call("GET", "/healthz", who=None).status_code == 200


@pytest.mark.slow
def test_the_queue_is_bounded_per_person_and_only_and_skip_are_checked_after_a_run(served):
    first = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "k_values": [3]})
    assert first.status_code == 202
    second = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "k_values": [4]})
    assert second.status_code == 202
    third = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "k_values": [5]})
    assert third.status_code == 429 and int(third.headers["Retry-After"]) > 0
    assert "per person" in third.json()["detail"]
    same = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "k_values": [3]})
    assert same.status_code == 202 and same.json()["id"] == first.json()["id"]  # the same request: its run
    other = served.call("POST", "/api/v1/evaluations", who="ada", json={"experiment": "quickstart", "k_values": [6]})
    assert other.status_code == 202  # another person has room of their own
    for started in (first, second, other):
        assert served.wait(started.json()["id"])["status"] == "completed"
    only = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "only": ["nothing.*"]})
    assert only.status_code == 422 and only.json()["detail"][0]["loc"] == ["body", "only"]
    skip = served.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "skip": ["telepathy"]})
    assert skip.status_code == 422 and skip.json()["detail"][0]["loc"] == ["body", "skip"]


# ---------------------------------------------------------------------------------------------- full disk


@pytest.fixture
def small_disk(tmp_path) -> Iterator[Path]:
    """A 3 MiB tmpfs where the test runs as root (a real full disk), else a folder this user may not write."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(where)], capture_output=True
    ).returncode == 0  # fmt: skip
    if not mounted and os.geteuid() == 0:
        pytest.skip("a full disk needs a tmpfs (mount as root), and root writes any folder: cannot be made here")
    yield where
    if mounted:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    """Fill the file system at `where` to the last byte; remove the returned file to free it."""
    filler = where / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (65536, 4096, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                continue
    finally:
        os.close(fd)
    return filler


def partials(folder: Path) -> list[str]:
    return [p.name for p in folder.rglob("*") if p.name.endswith((".partial", ".tmp"))]


@pytest.mark.slow
def test_a_full_disk_never_stops_the_queue_and_healthz_says_so(tmp_path, small_disk, shared_cache):
    config = quickstart_copy(tmp_path, shared_cache, keyword_only=True)
    made = Served(tmp_path, config)
    jobs, runs = small_disk / "jobs", small_disk / "runs"
    made.start("--store", str(runs), "--jobs", str(jobs))
    try:
        assert made.call("GET", "/healthz", who=None).json()["queue"]["disk_writable"] is True
        filler = fill(small_disk)
        refused = made.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart"})
        assert refused.status_code == 507 and "no space left" in refused.json()["detail"]
        dataset = made.call("POST", "/api/v1/datasets", json=MIXPEEK)
        assert dataset.status_code == 507
        assert partials(small_disk) == []
        deadline = time.monotonic() + 20
        while made.call("GET", "/healthz", who=None).status_code != 503 and time.monotonic() < deadline:
            time.sleep(0.3)
        health = made.call("GET", "/healthz", who=None)
        assert health.status_code == 503 and health.json()["queue"]["disk_writable"] is False
        filler.unlink()
        deadline = time.monotonic() + 20
        while made.call("GET", "/healthz", who=None).status_code != 200 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert made.call("GET", "/healthz", who=None).status_code == 200
        started = made.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart"})
        assert started.status_code == 202
        run_id = started.json()["id"]
        deadline = time.monotonic() + 60
        while made.call("GET", f"/api/v1/evaluations/{run_id}", who="rita").json().get("status") != "in_progress":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        filler = fill(small_disk)  # mid-run: the run cannot finish, the queue must not die with it
        ended = made.wait(run_id, seconds=120)
        assert ended["status"] in ("failed", "completed")
        if ended["status"] == "failed":
            assert ended["reason"]
        filler.unlink()
        again = made.call("POST", "/api/v1/evaluations", json={"experiment": "quickstart", "k_values": [7]})
        assert again.status_code == 202
        assert made.wait(again.json()["id"], seconds=120)["status"] == "completed"
        saved = json.loads((jobs / f"{run_id}.json").read_text())
        assert saved["status"] == ended["status"]  # written once the disk took it
        assert partials(small_disk) == []
        defunct = subprocess.run(["ps", "-o", "stat=", "--ppid", str(made.server.pid)], capture_output=True, text=True)
        assert "Z" not in defunct.stdout  # every finished worker reaped
    finally:
        made.stop()


@pytest.mark.slow
def test_vx_eval_run_on_a_full_disk_says_one_line_and_resume_finishes_it(tmp_path, small_disk, shared_cache):
    import sys

    config = quickstart_copy(tmp_path, shared_cache, keyword_only=True)
    data = yaml.safe_load(config.read_text())
    data["evaluation"]["shard_size"] = 5
    config.write_text(yaml.safe_dump(data), encoding="utf-8")

    def run(*more: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "vx_eval", "run", str(config), "--json", *more]
        return subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)

    whole = run("--save-to", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    store = small_disk / "runs"
    store.mkdir()
    filler = fill(small_disk)
    failed = run("--save-to", str(store))
    assert failed.returncode == 2, failed.stderr
    assert "Traceback" not in failed.stderr and "no space left on device" in failed.stderr
    assert len([line for line in failed.stderr.splitlines() if line.startswith("error:")]) == 1
    assert partials(small_disk) == []
    filler.unlink()
    # Room for the checkpoints, not for the report: the run stops at the end with what it finished kept
    report_bytes = sum(p.stat().st_size for p in (tmp_path / "whole").rglob("*") if p.is_file())
    filler = where_left(small_disk, report_bytes // 2)
    stopped = run("--save-to", str(store))
    assert stopped.returncode == 2 and "Traceback" not in stopped.stderr, stopped.stderr
    assert "--resume" in stopped.stderr, stopped.stderr
    run_id = stopped.stderr.split("--resume ", 1)[1].split("`", 1)[0].strip()
    filler.unlink()
    resumed = run("--save-to", str(store), "--resume", run_id)
    assert resumed.returncode == 0, resumed.stderr
    ours, theirs = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert [s["summary"] for s in ours["setups"]] == [s["summary"] for s in theirs["setups"]]


def where_left(where: Path, free: int) -> Path:
    """Fill the file system at `where` but for about `free` bytes."""
    total = os.statvfs(where)
    available = total.f_bavail * total.f_frsize
    filler = where / "filler"
    filler.write_bytes(b"\0" * max(0, available - free))
    return filler


def test_slow_clients_are_answered_408_and_closed_while_others_are_served(served):
    """Connections that send nothing, or trickle a request's head or its body, are timed out (408) instead of
    holding the server's connections for ever; a normal caller is answered all the while."""
    idle = [socket.create_connection(("127.0.0.1", served.port), timeout=30) for _ in range(100)]
    heads = []
    for _ in range(100):
        sock = socket.create_connection(("127.0.0.1", served.port), timeout=30)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # the head never ends
        heads.append(sock)
    body = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    body.sendall(b"POST /api/v1/datasets HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n{")  # fmt: skip
    assert served.call("GET", "/healthz", who=None).status_code == 200  # others are served meanwhile
    started = time.monotonic()
    answers = []
    for sock in [*idle, *heads, body]:
        data = b""
        while chunk := sock.recv(4096):
            data += chunk
        sock.close()
        answers.append(data.split(b"\r\n", 1)[0])
    assert time.monotonic() - started < 15
    assert set(answers) == {b"HTTP/1.1 408 Request Timeout"}, set(answers)
    assert served.call("GET", "/healthz", who=None).status_code == 200


def test_every_nested_list_is_bounded_and_unwritable_text_is_refused(served):
    nested = {**MIXPEEK, "name": "nested", "queries": [{**MIXPEEK["queries"][0], "relevant_documents": ["d"] * 51}]}
    refused = served.call("POST", "/api/v1/datasets", json=nested)
    assert refused.status_code == 413 and "queries[0].relevant_documents holds 51 items" in refused.json()["detail"]
    lone = b'{"name": "lone", "queries": [{"query_id": "m\\ud800", "query_input": {"query": "q"}, ' \
        b'"relevant_documents": ["d"]}]}'  # fmt: skip
    status, answer = raw_post(
        served.port, "/api/v1/datasets",
        {"Authorization": f"Bearer {served.keys['rui']}", "Content-Type": "application/json",
         "Content-Length": str(len(lone))}, lone,
    )  # fmt: skip
    assert status == 422 and "lone surrogate" in json.loads(answer)["detail"]


def test_a_key_never_outlives_its_persons_standing(served):
    people = Users(served.users)
    people.add_person("kim", "kim-password", "runner")
    key = people.add_key("kim")
    headers = {"Authorization": f"Bearer {key}"}

    def start() -> int:  # what a runner may do and a reader may not
        url = f"http://127.0.0.1:{served.port}/api/v1/datasets"
        return httpx.post(url, headers=headers, json={**MIXPEEK, "name": "kims"}, timeout=60).status_code

    def read() -> int:
        return httpx.get(f"http://127.0.0.1:{served.port}/api/v1/datasets", headers=headers, timeout=60).status_code

    assert start() == 201
    people.add_person("kim", "kim-new-password", "reader")  # demoted, and a new password
    assert read() == 401  # the new password ended the key
    key = people.add_key("kim", "runner")  # a key asked above the person's role acts as a reader
    headers["Authorization"] = f"Bearer {key}"
    assert read() == 200 and start() == 403
    people.sign_out_everywhere("kim")
    assert read() == 401
    key = people.add_key("kim")
    headers["Authorization"] = f"Bearer {key}"
    assert read() == 200
    people.revoke_key(key.removeprefix("vxk_").split("_")[0])
    assert read() == 401
    key = people.add_key("kim")
    headers["Authorization"] = f"Bearer {key}"
    assert people.remove_person("kim") == 3  # every key made for kim, the ended ones too
    assert read() == 401


def test_a_damaged_users_file_is_a_503_with_the_reason(served):
    kept = served.users.read_bytes()
    try:
        served.users.write_text("{not json")
        answer = served.call("GET", "/api/v1/evaluations")
        assert answer.status_code == 503 and "users file" in answer.json()["detail"]
        assert str(served.folder) not in answer.text  # no place on the server's disk
    finally:
        served.users.write_bytes(kept)
    assert served.call("GET", "/api/v1/evaluations").status_code == 200
