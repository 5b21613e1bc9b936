"""The server under a hostile caller: a 200 MB body, a 1,000,000-row dataset, 500 start requests from one key.

Starts `vx-eval serve` on 127.0.0.1 over a copy of the quickstart (keyword search only) with its default limits,
and prints the status codes each abuse got, the server's peak memory over its idle size, and `/healthz`'s
worst and p99 latency while it went on (polled every 50 ms). Then a second server with the queue limits
lifted takes 500 distinct start requests from one key (one worker, so 499 wait) and the server process's CPU
is read over 10 s: the queue loop's cost with 500 jobs waiting, beside the same server idle with none.
Bounded in count and time; 127.0.0.1 only.

    python benchmarks/serve_abuse.py
"""

from __future__ import annotations

import itertools
import json
import os
import select
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import yaml

from vx_eval.serve.auth import Users
from vx_eval.testing.processes import free_port, start_server

REPO = Path(__file__).resolve().parents[1]
GOALS = "goals: peak memory under 300 MB over idle, /healthz p99 under 200 ms, loop CPU under 2% of a core"


def project(work: Path) -> Path:
    shutil.copytree(REPO / "configs" / "quickstart", work / "quickstart")
    config = yaml.safe_load((REPO / "configs" / "quickstart.yaml").read_text())
    config["save_to"] = str(work / "runs")
    config["targets"][0]["options"].update(path=str(work / "index.db"), mode="dense", dense_models=[])
    path = work / "quickstart.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def status_of(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def send_body(port: int, key: str, declared: int | None, chunks: itertools.chain[bytes] | list[bytes]) -> str:
    """POST /api/v1/datasets over a plain socket, the body sent a chunk at a time until the server answers;
    the status it answered with (or how the connection ended)."""
    head = f"POST /api/v1/datasets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
    head += "Content-Type: application/json\r\nConnection: close\r\n"
    head += f"Content-Length: {declared}\r\n" if declared is not None else "Transfer-Encoding: chunked\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall((head + "\r\n").encode())
        try:
            for chunk in chunks:
                if select.select([sock], [], [], 0)[0]:
                    break  # the server has answered: no need to send the rest
                sock.sendall(chunk if declared is not None else b"%x\r\n%s\r\n" % (len(chunk), chunk))
            else:
                if declared is None:
                    sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            answer = sock.recv(4096)
        except ConnectionResetError:
            return "connection reset"
    return answer.split(b" ", 2)[1].decode() if answer else "closed"


class HealthWatch:
    """Polls /healthz every 50 ms in a thread; latencies in ms."""

    def __init__(self, base: str) -> None:
        self.base, self.times, self.statuses = base, [], Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        with httpx.Client(timeout=30) as client:
            while not self.stop.is_set():
                begin = time.perf_counter()
                response = client.get(f"{self.base}/healthz")
                self.times.append((time.perf_counter() - begin) * 1000)
                self.statuses[response.status_code] += 1
                self.stop.wait(0.05)

    def __enter__(self) -> HealthWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def line(self) -> str:
        ordered = sorted(self.times)
        p99 = ordered[int(0.99 * (len(ordered) - 1))]
        return (f"/healthz during it: {len(ordered)} polls, median {statistics.median(ordered):.1f} ms, "
                f"p99 {p99:.1f} ms, worst {ordered[-1]:.1f} ms, statuses {dict(self.statuses)}")  # fmt: skip


def serve(work: Path, config: Path, name: str, *more: str) -> tuple[object, str, str]:
    users = work / f"{name}-users.json"
    people = Users(users)
    people.add_person("rui", "rui-password-long", "runner")
    key = people.add_key("rui")
    port = free_port()
    argv = [sys.executable, "-m", "vx_eval", "serve", "--config", str(config), "--users", str(users),
            "--jobs", str(work / f"{name}-jobs"), "--port", str(port), *more]  # fmt: skip
    return start_server(argv, port=port, what="vx-eval serve", cwd=work), f"http://127.0.0.1:{port}", key


def requests(n: int) -> list[dict]:
    combos = [(m, a, b) for m in ("ndcg", "recall", "mrr") for a in range(1, 21) for b in range(a + 1, 21)]
    return [{"experiment": "quickstart", "metrics": [m], "k_values": [a, b]} for m, a, b in combos[:n]]


def abuse(work: Path, config: Path) -> None:
    server, base, key = serve(work, config, "defaults", "--workers", "1")
    with server:
        pid = server.pid
        time.sleep(1)
        idle = status_of(pid, "VmRSS")
        port = int(base.rsplit(":", 1)[1])
        row = b'{"query_id":"q0000000","query_input":{"query":"why"},"relevant_documents":["d"]},'
        million = [b'{"name":"huge","queries":[', *([row * 10_000] * 100), row[:-1] + b"]}"]
        size = sum(len(c) for c in million)
        queries = [
            {"query_id": f"q{i}", "query_input": {"query": f"why {i}"}, "relevant_documents": ["wire"]}
            for i in range(20_000)
        ]
        limit_rows = {"name": "at-limit", "queries": queries}
        with HealthWatch(base) as watch:
            results = {
                "200 MB body (Content-Length)": send_body(port, key, 200 * 2**20, [b"x" * 2**20] * 200),
                "200 MB body (chunked)": send_body(port, key, None, [b"x" * 2**20] * 200),
                f"1,000,000-row dataset ({size / 1e6:.1f} MB, Content-Length)": send_body(port, key, size, million),
                "1,000,000-row dataset (chunked)": send_body(port, key, None, million),
            }
            at_limit = httpx.post(f"{base}/api/v1/datasets", json=limit_rows, timeout=120,
                                  headers={"Authorization": f"Bearer {key}"})  # fmt: skip
            results["20,000-row dataset (the default limit)"] = str(at_limit.status_code)
            statuses: Counter[int] = Counter()
            begin = time.perf_counter()
            with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key}"}) as client:
                for body in requests(500):
                    statuses[client.post(f"{base}/api/v1/evaluations", json=body).status_code] += 1
            took = time.perf_counter() - begin
        peak = status_of(pid, "VmHWM")
        for what, status in results.items():
            print(f"{what:>55}: {status}")
        print(f"{'500 start requests from one key':>55}: {dict(statuses)} in {took:.1f} s")
        print(f"server memory: idle {idle / 2**20:.0f} MB, peak {peak / 2**20:.0f} MB "
              f"(+{(peak - idle) / 2**20:.0f} MB over idle)")  # fmt: skip
        print(watch.line())


def loop_cost(work: Path, config: Path) -> None:
    server, base, key = serve(
        work, config, "lifted", "--workers", "1", "--max-queued", "1000", "--max-queued-per-person", "1000"
    )
    with server:
        pid = server.pid
        time.sleep(2)
        before = cpu_seconds(pid)
        time.sleep(10)
        idle = (cpu_seconds(pid) - before) / 10
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {key}"}) as client:
            statuses = Counter(client.post(f"{base}/api/v1/evaluations", json=b).status_code for b in requests(500))
        time.sleep(1)
        health = httpx.get(f"{base}/healthz").json()["queue"]
        before = cpu_seconds(pid)
        time.sleep(10)
        busy = (cpu_seconds(pid) - before) / 10
        ended = Counter(json.loads(p.read_text())["status"] for p in (work / "lifted-jobs").glob("*.json"))
        print(f"500 start requests, limits lifted: {dict(statuses)}; {health['pending']} waiting, "
              f"{health['running']} running; job files now: {dict(ended)}")  # fmt: skip
        print(f"server process CPU over 10 s: {busy * 100:.2f}% of a core with them waiting, "
              f"{idle * 100:.2f}% idle with none (the workers' own CPU not counted)")  # fmt: skip


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="vx-serve-abuse-"))
    try:
        config = project(work)
        abuse(work, config)
        loop_cost(work, config)
        print(GOALS)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
