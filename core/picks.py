"""Ranking the setups, the three picks, the frontier of speed against quality, and each setup's neighbours."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

EPS = 1e-9  # "within 4 points" is inclusive; floats must not turn 96 - 92 into 4.0000001


@dataclass(frozen=True)
class Scored:
    """What picking needs of one setup."""

    key: str
    primary: float
    at1: float
    median_ms: float
    failed: bool = False


def ranked(rows: Sequence[Scored]) -> list[Scored]:
    """Best first: higher primary measure, then more right at 1, then faster; failed setups last."""
    return sorted(rows, key=lambda r: (r.failed, -r.primary, -r.at1, r.median_ms, r.key))


def picks(rows: Sequence[Scored], *, balance: float, time: float, scale: float = 100.0) -> dict[str, str | None]:
    """The three picks (by name: ``finds_the_most``, ``best_for_balance``, ``best_for_time``). `balance` and
    `time` are points on a 0-100 scale (the primary measure x `scale`)."""
    eligible = [r for r in rows if not r.failed]
    if not eligible:
        return {"finds_the_most": None, "best_for_balance": None, "best_for_time": None}
    best = ranked(eligible)[0]

    def fastest_within(points: float) -> str:
        near = [r for r in eligible if (best.primary - r.primary) * scale <= points + EPS]
        return min(near, key=lambda r: (r.median_ms, -r.primary, -r.at1, r.key)).key

    return {
        "finds_the_most": best.key,
        "best_for_balance": fastest_within(balance),
        "best_for_time": fastest_within(time),
    }


def frontier(rows: Sequence[Scored]) -> list[str]:
    """Setups nothing beats on both quality and median time, fastest first."""
    alive = [r for r in rows if not r.failed]
    out = []
    for r in alive:
        dominated = any(
            o.primary >= r.primary
            and o.median_ms <= r.median_ms
            and (o.primary > r.primary or o.median_ms < r.median_ms)
            for o in alive
        )
        if not dominated:
            out.append(r)
    return [r.key for r in sorted(out, key=lambda r: (r.median_ms, -r.primary, r.key))]


class Described(Protocol):
    """What telling two setups apart needs: where, how, with which models, reranked by what."""

    @property
    def key(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def models(self) -> Sequence[str]: ...
    @property
    def ranker(self) -> str | None: ...


def neighbours(setups: Sequence[Described]) -> dict[str, list[tuple[str, str]]]:
    """For each setup, those one change away (key, the change in words): another ranker, one model fewer
    or more, the same search on another engine."""
    out: dict[str, list[tuple[str, str]]] = {s.key: [] for s in setups}
    for a in setups:
        for b in setups:
            if a is b:
                continue
            change = _one_change(a, b)
            if change:
                out[a.key].append((b.key, change))
    return out


def _one_change(a: Described, b: Described) -> str | None:
    same_target = a.target == b.target
    same_models = set(a.models) == set(b.models)
    if same_target and a.method == b.method and same_models and a.ranker != b.ranker:
        if b.ranker is None:
            return "the same search without the reranker"
        if a.ranker is None:
            return f"the same search reranked by {b.ranker}"
        return f"reranked by {b.ranker} instead of {a.ranker}"
    if same_target and a.method == b.method and a.ranker == b.ranker:
        extra, fewer = set(b.models) - set(a.models), set(a.models) - set(b.models)
        if len(fewer) == 1 and not extra and b.models:
            return f"one model fewer: without {next(iter(fewer))}"
        if len(extra) == 1 and not fewer and a.models:
            return f"one model more: with {next(iter(extra))}"
    if not same_target and a.method == b.method and same_models and a.ranker == b.ranker:
        return f"the same search on {b.target}"
    return None
