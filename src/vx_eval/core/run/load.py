"""How far the times a run took can be trusted: how busy other processes kept the machine while the searches
were timed (the kernel's CPU counters, Linux), and whether a setup's earlier and later searches took the same
time (its first and second halves, in the interleaved order they ran)."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

LOADED_SHARE = 0.25
"""Other processes keeping more than this share of the cores busy (and at least half a core) is a loaded
machine: a search waits for a core, so its time is the machine's, not the setup's alone."""
UNSTEADY_RATIO = 1.5
"""A setup whose later searches' median differs from its earlier ones' by more than this factor either way
(at least `UNSTEADY_LEAST` searches timed) has times that did not repeat."""
UNSTEADY_LEAST = 10


def _busy_seconds() -> float | None:
    """CPU seconds every process of the machine has spent, idle and waiting excluded (None off Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = handle.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    ticks = [int(f) for f in fields[1:9]]
    busy = sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    """CPU seconds this process and its finished children have spent."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def cpus() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@dataclass
class LoadMeter:
    """Started before the timed searches and read after them: the cores other processes kept busy."""

    wall: float = 0.0
    busy: float | None = None
    own: float = 0.0

    @classmethod
    def start(cls) -> LoadMeter:
        return cls(time.monotonic(), _busy_seconds(), _own_seconds())

    def others(self) -> float | None:
        """Cores other processes kept busy on average since the start (None where it cannot be read)."""
        busy, elapsed = _busy_seconds(), time.monotonic() - self.wall
        if busy is None or self.busy is None or elapsed < 0.5:
            return None
        return max(0.0, ((busy - self.busy) - (_own_seconds() - self.own)) / elapsed)


def loaded(others: float | None, cores: int) -> bool:
    return others is not None and others >= max(0.5, LOADED_SHARE * cores)


def unsteady(times_ms: Sequence[float | None]) -> float | None:
    """The ratio of a setup's later searches' median time to its earlier ones', where it is beyond
    `UNSTEADY_RATIO` either way (None where the halves agree or too few searches were timed)."""
    taken = [t for t in times_ms if t is not None]
    if len(taken) < UNSTEADY_LEAST:
        return None
    half = len(taken) // 2
    first, second = statistics.median(taken[:half]), statistics.median(taken[half:])
    if first <= 0 or second <= 0:
        return None
    ratio = second / first
    return ratio if max(ratio, 1 / ratio) > UNSTEADY_RATIO else None


@dataclass(frozen=True)
class Load:
    """What the run measured about its times: other processes' cores, this run's cores, and the setups
    whose timings did not repeat (key -> later half's median over the earlier half's)."""

    others: float | None
    cores: int
    unsteady: tuple[tuple[str, float], ...] = ()
