"""A saved run at the scale of a team: report size, `runs list` over 50 runs, and the server's summary route.

Copies the newest run at `--runs` (the SciFact run with every setup, say: `vx-eval run configs/scifact.yaml`)
50 times into a store of its own, then prints: the sizes of its `report.json` and `rankings.parquet`;
`vx-eval runs list` over the 50 (a whole process, median of 5, beside `python -c pass`); and, against
`vx-eval serve` on 127.0.0.1 with `--clients` callers at once for `--seconds`, requests a second and
median / p95 latency for `GET /api/v1/evaluations/{run}?fields=summary`, the whole report, and `/healthz`
(the server's floor, measured in the same run).

    python benchmarks/serve_load.py [--runs runs] [--clients 8] [--seconds 10]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from vx_eval.core.plugins import load_plugins
from vx_eval.core.report.history import run_ids
from vx_eval.core.report.saving import new_run_id, runs_folder
from vx_eval.core.stores import Stores
from vx_eval.testing.processes import free_port, start_server

REPO = Path(__file__).resolve().parents[1]


def whole(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def load(url: str, clients: int, seconds: float) -> tuple[float, float, float]:
    """Requests a second, median and p95 latency (ms) of `clients` callers asking `url` for `seconds`."""
    times: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def caller() -> None:
        mine = []
        with httpx.Client(timeout=30) as client:
            while time.perf_counter() < stop:
                begin = time.perf_counter()
                client.get(url).raise_for_status()
                mine.append(time.perf_counter() - begin)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=caller) for _ in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    ordered = sorted(times)
    return len(times) / elapsed, statistics.median(ordered) * 1000, ordered[int(0.95 * (len(ordered) - 1))] * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default=str(REPO / "runs"))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10)
    args = parser.parse_args()
    stores = Stores(load_plugins())
    newest = run_ids(stores, args.runs)[0]
    source = Path(runs_folder(args.runs)) / newest
    work = Path(tempfile.mkdtemp(prefix="vx-serve-load-"))
    try:
        store = work / "runs"
        folder = Path(runs_folder(str(store)))
        folder.mkdir(parents=True)
        for _ in range(50):
            copy = folder / new_run_id()
            shutil.copytree(source, copy)
            text = (copy / "report.json").read_text(encoding="utf-8").replace(newest, copy.name)
            (copy / "report.json").write_text(text, encoding="utf-8")
        sizes = {p.name: p.stat().st_size for p in source.iterdir() if p.is_file()}
        print(f"run {newest}: " + ", ".join(f"{name} {size / 1e6:.2f} MB" for name, size in sorted(sizes.items())))
        vx = [sys.executable, "-m", "vx_eval"]
        lists = [whole([*vx, "runs", "list", str(store)]) for _ in range(5)]
        bare = [whole([sys.executable, "-c", "pass"]) for _ in range(5)]
        print(
            f"runs list over 50 runs: {statistics.median(lists):.2f} s (python -c pass {statistics.median(bare):.2f} s)"
        )
        port = free_port()
        argv = [*vx, "serve", "--store", str(store), "--users", str(work / "users.json"), "--port", str(port)]
        with start_server(argv, port=port, what="vx-eval serve"):
            base = f"http://127.0.0.1:{port}"
            some = sorted(p.name for p in folder.iterdir())[0]
            httpx.get(f"{base}/api/v1/evaluations/{some}?fields=summary", timeout=60).raise_for_status()  # warm
            for label, path in (
                ("/healthz", "/healthz"),
                ("summary", f"/api/v1/evaluations/{some}?fields=summary"),
                ("whole report", f"/api/v1/evaluations/{some}"),
            ):
                rps, median, p95 = load(base + path, args.clients, args.seconds)
                print(f"{label:>14}: {rps:8.1f} requests/s, median {median:7.1f} ms, p95 {p95:7.1f} ms "
                      f"({args.clients} callers)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
