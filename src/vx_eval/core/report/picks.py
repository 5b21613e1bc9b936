"""Ranking the setups, the three picks, the frontier of speed against quality, and each setup's neighbours."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

EPS = 1e-9  # "within 4 points" is inclusive; floats must not turn 96 - 92 into 4.0000001
PLACES = 9
"""Measures are compared rounded to this many places: two setups finding the same questions tie exactly,
whatever order their sums were taken in."""
MIN_PAIRED = 5
"""Questions timed for both setups below which times are compared by their medians alone."""


@dataclass(frozen=True)
class Scored:
    """What picking needs of one setup: its quality measures, its search times, whether it may be picked."""

    key: str
    primary: float
    at1: float
    median_ms: float
    failed: bool = False
    mrr: float = 0.0
    times_ms: tuple[float | None, ...] = ()
    """Each question's search time (None where it was not timed), in the same question order for every setup."""

    @property
    def quality(self) -> tuple[float, float]:
        """What `finds_the_most` is chosen by (the seed's rule): the primary (found@10 unless the config
        names another), then more right answers first (found@1); what is left to tie goes to the faster."""
        return (round(self.primary, PLACES), round(self.at1, PLACES))


@dataclass(frozen=True)
class TimeComparison:
    """How much faster `a` is than `b`: the ratio of their median times, with a paired bootstrap interval."""

    a: str
    b: str
    ratio: float
    ci: tuple[float, float]
    questions: int

    @property
    def surely_faster(self) -> bool:
        return self.ci[1] < 1.0

    @property
    def surely_slower(self) -> bool:
        return self.ci[0] > 1.0


def compare_times(a: Scored, b: Scored, *, samples: int = 1000, seed: int = 0) -> TimeComparison:
    """`a`'s median time over `b`'s on the questions both timed, resampling those questions together (the
    searches were interleaved, so a slow moment of the machine falls on both). With fewer than `MIN_PAIRED`
    such questions the interval is the ratio itself."""
    both = [(x, y) for x, y in zip(a.times_ms, b.times_ms, strict=False) if x is not None and y is not None]
    if len(both) < MIN_PAIRED or samples <= 0:
        ratio = a.median_ms / b.median_ms if b.median_ms > 0 else 1.0
        return TimeComparison(a.key, b.key, ratio, (ratio, ratio), len(both))
    pairs = np.array(both, dtype=float)
    ratio = float(np.median(pairs[:, 0]) / max(np.median(pairs[:, 1]), 1e-12))
    rng = np.random.default_rng(seed)
    picked = rng.integers(0, len(pairs), size=(samples, len(pairs)))
    ratios = np.median(pairs[picked, 0], axis=1) / np.maximum(np.median(pairs[picked, 1], axis=1), 1e-12)
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    return TimeComparison(a.key, b.key, ratio, (float(lo), float(hi)), len(pairs))


@dataclass(frozen=True)
class Reason:
    """Why a setup was picked, in words, and the time comparison behind it (if any)."""

    text: str
    measure: str
    versus: TimeComparison | None = None
    tied_on_time: tuple[str, ...] = ()


@dataclass(frozen=True)
class Choice:
    """The three picks, each with its reason, and the measure they were made by (the primary)."""

    picks: dict[str, str | None]
    reasons: dict[str, Reason]
    measure: str
    note: str | None = None
    """Said when the primary cannot tell the leading setups apart: how many share its best value, and what
    decided among them (found@1, then time); the other setups keep their place by the primary."""


def ranked(rows: Sequence[Scored], choice: Choice | None = None, primary: str = "") -> list[Scored]:
    """Best first, by the rule the picks follow: the higher primary, then more right at 1; among setups level
    on both, the one `choice` picked as finding the most (the fastest of them), then the faster; those that
    may not be picked last. So the first row is always the pick, and the table's order is the picks' rule."""
    first = choice.picks.get("finds_the_most") if choice else None

    def order(r: Scored) -> tuple[object, ...]:
        high, at1 = r.quality
        return (r.failed, -high, -at1, r.key != first, r.median_ms, r.key)

    return sorted(rows, key=order)


def tie_note(rows: Sequence[Scored], primary: str) -> str | None:
    """What decided among the setups that share the best primary, in words; None where one setup leads."""
    top = max(r.quality[0] for r in rows)
    level = [r for r in rows if r.quality[0] == top]
    if len(level) < 2:
        return None
    shown = f"{top:.0%}" if primary.startswith(("found@", "recall@")) else f"{top:.3f}"
    text = f"{primary} is {shown} for {len(level)} of {len(rows)} setups: among those {len(level)} only, "
    best_at1 = max(r.quality[1] for r in level)
    if sum(1 for r in level if r.quality[1] == best_at1) < len(level):
        return text + "the one with more right answers first (found@1) leads, then the faster"
    return text + f"found@1 is level too ({best_at1:.0%}), so the faster leads"


class Picker:
    """Chooses among setups with time differences inside the noise treated as ties (see `compare_times`)."""

    def __init__(self, rows: Sequence[Scored], primary: str, *, samples: int = 1000, seed: int = 0) -> None:
        self.rows = [r for r in rows if not r.failed]
        self.primary, self.samples, self.seed = primary, samples, seed
        self.measure = primary
        self.note = tie_note(self.rows, primary) if self.rows else None

    @staticmethod
    def quality(r: Scored) -> tuple[float, float]:
        return r.quality

    def compare(self, a: Scored, b: Scored) -> TimeComparison:
        return compare_times(a, b, samples=self.samples, seed=self.seed)

    def fastest(self, group: Sequence[Scored]) -> tuple[Scored, TimeComparison | None, tuple[str, ...]]:
        """The best of the setups no other in `group` is surely faster than: time ties go to quality, then
        to the lower median, then to the key. Also the comparison with the best-quality setup it was preferred
        to, and its time ties."""
        quickest = min(group, key=lambda r: (r.median_ms, r.key))
        tied = [r for r in group if r is quickest or not self.compare(r, quickest).surely_slower]
        chosen = max(tied, key=lambda r: (*self.quality(r), -r.median_ms, _reverse_key(r.key)))
        better = [r for r in group if self.quality(r) > self.quality(chosen)]
        versus = self.compare(chosen, max(better, key=self.quality)) if better else None
        return chosen, versus, tuple(r.key for r in tied if r is not chosen)

    def within(self, points: float, of: Scored, scale: float = 100.0) -> list[Scored]:
        """The setups within `points` (inclusive) of `of`'s primary: 92% counts at 4 points when it finds 96%."""
        top = of.primary
        return [r for r in self.rows if (top - r.primary) * scale <= points + EPS]

    def choose(self, balance: float, time: float, among: Collection[str] | None = None) -> Choice:
        """The three picks. `among`: where the run is not sure, the setups a paired test cannot tell from the
        leader; the balance and time picks are made within them only (a setup surely worse than the leader is
        never picked for being fast while the leader itself is in doubt)."""
        if not self.rows:
            return Choice(dict.fromkeys(("finds_the_most", "best_for_balance", "best_for_time")), {}, self.measure)
        top_quality = max(self.quality(r) for r in self.rows)
        leaders = [r for r in self.rows if self.quality(r) == top_quality]
        most, _, most_ties = self.fastest(leaders)
        reasons = {"finds_the_most": Reason(self._most_text(most), self.measure, None, most_ties)}
        picked: dict[str, str | None] = {"finds_the_most": most.key}
        for name, points in (("best_for_balance", balance), ("best_for_time", time)):
            candidates = self.within(points, most)
            if among is not None:
                candidates = [r for r in candidates if r.key in among or r is most]
            chosen, versus, ties = self.fastest(candidates)
            picked[name] = chosen.key
            text = self._fast_text(chosen, most, points, versus, ties)
            if among is not None:
                text += (
                    f"; not sure: chosen among the {len(among)} setups a paired test cannot tell from the leader only"
                )
            reasons[name] = Reason(text, self.measure, versus, ties)
        return Choice(picked, reasons, self.measure, self.note)

    def _most_text(self, most: Scored) -> str:
        """Why `most` finds the most, by the rule: the highest primary; among setups level on it, more right
        answers first (found@1); among those level on both, the faster."""
        text = f"the highest {self.primary} ({most.primary:.3f})"
        level = [r for r in self.rows if r.quality[0] == most.quality[0] and r is not most]
        if not level:
            return text
        behind = [r for r in level if r.quality[1] < most.quality[1]]
        tied = [r for r in level if r.quality[1] == most.quality[1]]
        text += f", level with {_count(level, 'other setup')} on it"
        if behind:
            text += f"; more right answers first (found@1 {most.at1:.3f}) than {_names(behind)}"
        if tied:
            also = "and " if behind else ""
            text += f"; {also}level on found@1 too with {_names(tied)}: the faster (median {most.median_ms:.1f} ms"
            close = [r for r in tied if not self.compare(r, most).surely_slower]
            if close:
                text += f"; level within the noise with {_names(close)}, so a rerun may order them otherwise"
            text += ")"
        return text

    def _fast_text(
        self, chosen: Scored, most: Scored, points: float, versus: TimeComparison | None, ties: tuple[str, ...]
    ) -> str:
        text = f"the fastest within {points:g} points ({points / 100:g}) of {self.primary} of the setup that finds "
        text += f"the most ({chosen.primary:.3f} against {most.primary:.3f}; "
        text += f"median {chosen.median_ms:.1f} ms)"
        if versus is not None:
            lo, hi = versus.ci
            how = "surely" if versus.surely_faster else "not surely"
            text += (
                f"; {1 / versus.ratio:.1f}× as fast as {versus.b} ({how} faster: time ratio {versus.ratio:.2f}, "
                f"95% {lo:.2f}–{hi:.2f}, {versus.questions} questions)"
            )
        if ties:
            text += f"; as fast as {', '.join(ties[:3])}{' …' if len(ties) > 3 else ''} within the noise, and better"
        return text


def _count(rows: Sequence[Scored], word: str) -> str:
    return f"{len(rows)} {word}{'s' if len(rows) != 1 else ''}"


def _names(rows: Sequence[Scored], shown: int = 3) -> str:
    keys = sorted(r.key for r in rows)
    return ", ".join(keys[:shown]) + (f" and {len(keys) - shown} more" if len(keys) > shown else "")


def _reverse_key(key: str) -> tuple[int, ...]:
    """Makes max() prefer the smaller key on a full tie (deterministic); the closing 0 outranks any
    character, so a key beats every longer key it begins (``dense.bge`` before ``dense.bge+minilm``)."""
    return (*(-ord(c) for c in key), 0)


def picks(
    rows: Sequence[Scored],
    *,
    balance: float,
    time: float,
    primary: str = "found@10",
    samples: int = 1000,
    seed: int = 0,
) -> dict[str, str | None]:
    """The three picks (by name: ``finds_the_most``, ``best_for_balance``, ``best_for_time``). `balance` and
    `time` are points on a 0-100 scale of the deciding measure (`Picker`)."""
    return Picker(rows, primary, samples=samples, seed=seed).choose(balance, time).picks


def frontier(rows: Sequence[Scored]) -> list[str]:
    """Setups nothing beats on both quality (the primary) and median time, fastest first."""
    alive = [r for r in rows if not r.failed]

    def q(r: Scored) -> float:
        return r.quality[0]

    out = []
    for r in alive:
        dominated = any(
            q(o) >= q(r) and o.median_ms <= r.median_ms and (q(o) > q(r) or o.median_ms < r.median_ms) for o in alive
        )
        if not dominated:
            out.append(r)
    return [r.key for r in sorted(out, key=lambda r: (r.median_ms, -q(r), r.key))]


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
