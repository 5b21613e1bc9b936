"""Every reader fed 10,000+ hostile inputs (the strategies of vx_eval.testing.fuzzing, which the fuzz tests
run on a small budget): the count that escaped as anything but a clear `VxEvalError` (must be 0), and the
worst time and peak memory per input size, beside the same reader on its valid example measured in this
run (so the ratios say how much worse a hostile input of that size is than a good file).

    python benchmarks/fuzz.py [--inputs 10000] [--seed 1] [--only golden,config]

Exit status 1 when any input escaped; each escape is printed with its input's first bytes.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import tracemalloc
from collections import defaultdict
from dataclasses import dataclass, field

os.environ.setdefault("OMP_NUM_THREADS", "1")

from hypothesis import HealthCheck, Phase, given, seed, settings

from vx_eval.testing import fuzzing


@dataclass
class Tally:
    inputs: int = 0
    escaped: list[tuple[bytes, BaseException]] = field(default_factory=list)
    worst: dict[int, tuple[float, int, int]] = field(default_factory=lambda: defaultdict(lambda: (0.0, 0, 0)))
    """Size bucket (bytes, a power of 4) -> (worst seconds, worst peak bytes, inputs)."""


def measure(read, raw: object) -> tuple[float, int, BaseException | None]:
    tracemalloc.start()
    start = time.perf_counter()
    escaped = fuzzing.handled(read, raw)
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, peak, escaped


def reference(reader: fuzzing.Reader) -> tuple[float, int]:
    good = reader.good
    assert fuzzing.handled(reader.read, good) is None, f"the good {reader.name} input is refused"
    measure(reader.read, good)  # warm: imports, plugins
    runs = [measure(reader.read, good) for _ in range(20)]
    return sorted(r[0] for r in runs)[10], max(r[1] for r in runs)


def fuzz(reader: fuzzing.Reader, inputs: int, at: int) -> Tally:
    tally = Tally()

    @seed(at)
    @settings(
        max_examples=inputs,
        phases=[Phase.generate],
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(reader.inputs)
    def one(raw: object) -> None:
        elapsed, peak, escaped = measure(reader.read, raw)
        tally.inputs += 1
        if escaped is not None:
            tally.escaped.append((raw, escaped))
        bucket = 4 ** max(0, math.ceil(math.log(max(len(raw), 1), 4)))  # type: ignore[arg-type]
        worst_s, worst_peak, count = tally.worst[bucket]
        tally.worst[bucket] = (max(worst_s, elapsed), max(worst_peak, peak), count + 1)

    one()
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=10_000, help="inputs per reader (default 10,000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", default="", help="readers, comma-separated (default: all)")
    args = parser.parse_args()
    chosen = [r for r in fuzzing.READERS if not args.only or r.name in args.only.split(",")]
    failed = 0
    print(f"{'reader':8} {'inputs':>7} {'escaped':>7}  size ≤      n   worst ms  ×good   peak KiB  ×good")
    for reader in chosen:
        good_s, good_peak = reference(reader)
        started = time.perf_counter()
        tally = fuzz(reader, args.inputs, args.seed)
        failed += len(tally.escaped)
        first = True
        for bucket in sorted(tally.worst):
            worst_s, worst_peak, count = tally.worst[bucket]
            head = f"{reader.name:8} {tally.inputs:7d} {len(tally.escaped):7d}" if first else " " * 24
            print(
                f"{head}  {bucket:>7} {count:6d} {worst_s * 1e3:10.1f} {worst_s / good_s:6.0f} "
                f"{worst_peak / 1024:10.0f} {worst_peak / max(good_peak, 1):6.1f}"
            )
            first = False
        print(
            f"{'':24}  good file: {good_s * 1e3:.2f} ms, {good_peak / 1024:.0f} KiB; "
            f"{time.perf_counter() - started:.0f} s in all"
        )
        for raw, exc in tally.escaped[:10]:
            print(f"  ESCAPED {type(exc).__name__}: {str(exc)[:160]} for {repr(raw)[:160]}", file=sys.stderr)
    print(f"escaped in all: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
