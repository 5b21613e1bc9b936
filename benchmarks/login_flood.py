"""A sign-in flood against a real `vx-eval serve`: peak memory and other callers' latency, against the same
server at rest measured in this run.

50 connections post sign-ins at once (wrong passwords, each connection its own name, so per-person limits
do not stop them; per-address limits do after a while, as they would for one attacker). While they run, a
reader keeps asking for /healthz; its median and worst latency are compared with the same requests at rest,
and the server's peak resident memory (VmHWM) with its memory at rest. argon2 holds 64 MiB per check, so
an unbounded server grows by 64 MiB per concurrent check; this one runs at most two at a time.

    python benchmarks/login_flood.py [--connections 50] [--attempts 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from vx_eval.testing.processes import free_port, start_server


def rss_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def timed_get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as response:
        response.read()
    return time.perf_counter() - start


def post_login(url: str, name: str) -> int:
    data = urllib.parse.urlencode({"username": name, "password": "not-the-password"}).encode()
    request = urllib.request.Request(url + "/login", data=data, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--attempts", type=int, default=10, help="sign-ins per connection")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        users = Path(folder) / "users.json"
        add = [sys.executable, "-m", "vx_eval", "users", "add", "ada", "--role", "admin", "--users", str(users)]
        add.append("--password-stdin")
        subprocess.run(add, input="ada-password-long\n", text=True, check=True, capture_output=True)
        (Path(folder) / "runs").mkdir()
        port = free_port()
        argv = [sys.executable, "-m", "vx_eval", "serve", "--store", str(Path(folder) / "runs")]
        argv += ["--users", str(users), "--port", str(port)]
        with start_server(argv, port=port, what="vx-eval serve", cwd=Path(folder)) as server:
            url = f"http://127.0.0.1:{port}"
            rest = [timed_get(url + "/healthz") for _ in range(50)]
            rest_kib = rss_kib(server.pid, "VmRSS")
            statuses: list[int] = []
            lock = threading.Lock()

            def flood(n: int) -> None:
                for i in range(args.attempts):
                    status = post_login(url, f"person-{n}-{i}")
                    with lock:
                        statuses.append(status)

            threads = [threading.Thread(target=flood, args=(n,)) for n in range(args.connections)]
            started = time.perf_counter()
            for t in threads:
                t.start()
            busy = []
            while any(t.is_alive() for t in threads):
                busy.append(timed_get(url + "/healthz"))
            for t in threads:
                t.join()
            took = time.perf_counter() - started
            peak_kib = rss_kib(server.pid, "VmHWM")
    counts = {s: statuses.count(s) for s in sorted(set(statuses))}
    print(f"{len(statuses)} sign-ins from {args.connections} connections in {took:.1f} s; answers: {counts}")
    print(
        f"memory: {rest_kib / 1024:.0f} MiB at rest, {peak_kib / 1024:.0f} MiB at the peak "
        f"(+{(peak_kib - rest_kib) / 1024:.0f} MiB; one argon2 check holds 64 MiB)"
    )
    rest_median, busy_median = statistics.median(rest), statistics.median(busy or [0.0])
    print(
        f"/healthz during the flood: median {busy_median * 1e3:.1f} ms ({busy_median / rest_median:.1f}× rest, "
        f"{rest_median * 1e3:.1f} ms), worst {max(busy or [0.0]) * 1e3:.0f} ms over {len(busy)} requests"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
