"""Comparing two runs: per setup and measure, the change with its interval and significance, and CI gates."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

from vx_eval.core.contracts.fields import is_uri
from vx_eval.core.errors import VxEvalError, quoted
from vx_eval.core.measures import metrics, stats
from vx_eval.core.report.history import read_report
from vx_eval.core.report.kept_rankings import attach
from vx_eval.core.report.saving import REPORT_NAME
from vx_eval.core.report.schema import Report, ReportError
from vx_eval.core.report.schema import load_report as load_report_bytes
from vx_eval.core.stores import Stores, join

GATE = re.compile(
    r"^\s*(?P<measure>\S+)\s+drops\s+by\s+more\s+than\s+(?P<amount>\d+(?:\.\d+)?)\s*(?P<unit>points?|%)?\s*$", re.I
)


@dataclass(frozen=True)
class Gate:
    """``ndcg@10 drops by more than 0.02`` (or ``2 points``; ``2%`` is relative to the first run's value)."""

    measure: str
    amount: float
    relative: bool
    text: str

    @classmethod
    def parse(cls, text: str) -> Gate:
        match = GATE.match(text)
        if not match:
            raise VxEvalError(
                f'{quoted(text)} is not a gate; write e.g. "ndcg@10 drops by more than 0.02" '
                '(or "… 2 points", or "… 5%" of the first run\'s value)'
            )
        measure = metrics.parse(match.group("measure")).name
        amount, unit = float(match.group("amount")), (match.group("unit") or "").lower()
        if unit.startswith("point"):
            amount /= 100
        return cls(measure, amount / 100 if unit == "%" else amount, unit == "%", text)

    def tolerance(self, before: float) -> float:
        return self.amount * abs(before) if self.relative else self.amount


class Change(BaseModel):
    """One setup's change in one measure, over the questions both runs evaluated."""

    setup: str
    measure: str
    questions: int
    before: float
    after: float
    delta: float
    ci: tuple[float, float]
    p: float
    p_holm: float = 1.0
    significant: bool = False


class LatencyChange(BaseModel):
    """One setup's median or 95th-percentile search time, before and after, over the questions both runs
    timed: the ratio after / before with a paired bootstrap interval."""

    setup: str
    stat: str
    """``median`` or ``p95``."""
    questions: int
    before_ms: float
    after_ms: float
    ratio: float
    ci: tuple[float, float]

    @property
    def significant(self) -> bool:
        return self.ci[0] > 1.0 or self.ci[1] < 1.0


class SettingChange(BaseModel):
    """A setting that differs between the two runs, and what it can change."""

    name: str
    before: Any
    after: Any
    affects: str
    """``results`` (the searches: depth, search settings, models, an index), ``times`` or ``measures``."""


class Comparison(BaseModel):
    before: str
    after: str
    golden_same: bool
    questions: int
    alpha: float
    rows: list[Change]
    only_before: list[str]
    only_after: list[str]
    latency: list[LatencyChange] = []
    settings: list[SettingChange] = []

    @property
    def searches_differ(self) -> list[SettingChange]:
        """Settings that make the two runs' searches differ (so a change may be theirs, not the system's)."""
        return [c for c in self.settings if c.affects == "results"]


RESULT_SETTINGS = ("depth", "relevance_threshold", "relevance_field", "by_document", "search.", "targets.")
TIME_SETTINGS = ("timing.",)
PLACES = ("models.scores", "models.embeddings")
"""Where caches were kept: they differ between machines and change nothing."""


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def settings_diff(before: Report, after: Report) -> list[SettingChange]:
    """Every setting that differs: the run's (depth, search, models, timing, measures) and each target's index
    (its settings, models and corpus)."""

    def flat(report: Report) -> dict[str, Any]:
        run = _flat(report.settings.model_dump(mode="json"))
        for name, target in report.targets.items():
            index = {"settings": target.settings, "models": target.models, "corpus_sha256": target.corpus_sha256}
            run.update(_flat(index, f"targets.{name}."))
        return {k: v for k, v in run.items() if k not in PLACES}

    a, b = flat(before), flat(after)
    changes = []
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            affects = (
                "results"
                if name.startswith(RESULT_SETTINGS) or name.startswith("models.")
                else "times"
                if name.startswith(TIME_SETTINGS)
                else "measures"
            )
            changes.append(SettingChange(name=name, before=a.get(name), after=b.get(name), affects=affects))
    return changes


def latency_changes(
    before: Report, after: Report, keys: list[str], *, samples: int = 1000, seed: int = 0
) -> list[LatencyChange]:
    """Median and p95 time of each setup in `keys`, before and after, over the questions both runs timed."""
    a_index = {q: i for i, q in enumerate(before.question_ids)}
    b_index = {q: i for i, q in enumerate(after.question_ids)}
    shared = [q for q in after.question_ids if q in a_index]
    out = []
    rng = np.random.default_rng(seed)
    for key in keys:
        a_times, b_times = before.setup(key).per_question.times_ms, after.setup(key).per_question.times_ms
        pairs = np.array(
            [
                (a_times[a_index[q]], b_times[b_index[q]])
                for q in shared
                if a_index[q] < len(a_times)
                and b_index[q] < len(b_times)
                and a_times[a_index[q]] is not None
                and b_times[b_index[q]] is not None
            ],
            dtype=float,
        ).reshape(-1, 2)
        if len(pairs) < 2:
            continue
        picked = rng.integers(0, len(pairs), size=(samples, len(pairs)))
        for stat, q in (("median", 50), ("p95", 95)):
            a_ms, b_ms = float(np.percentile(pairs[:, 0], q)), float(np.percentile(pairs[:, 1], q))
            ratios = np.percentile(pairs[picked, 1], q, axis=1) / np.maximum(
                np.percentile(pairs[picked, 0], q, axis=1), 1e-12
            )
            lo, hi = np.quantile(ratios, [0.025, 0.975])
            out.append(
                LatencyChange(
                    setup=key,
                    stat=stat,
                    questions=len(pairs),
                    before_ms=a_ms,
                    after_ms=b_ms,
                    ratio=b_ms / a_ms if a_ms > 0 else 1.0,
                    ci=(float(lo), float(hi)),
                )
            )
    return out


def load_report(ref: str, stores: Stores, runs_at: str, *, rankings: bool = False) -> Report:
    """A report by path (the file or its run folder), by run id under `runs_at`, or ``latest`` there; with
    `rankings`, its rankings too (`core.report.kept_rankings`)."""
    if is_uri(ref) or stores.exists(ref):
        location = ref if ref.endswith(".json") else join(ref, REPORT_NAME)
        return read_location(stores, location, rankings=rankings)
    return read_report(stores, runs_at, ref, rankings=rankings)


def read_location(stores: Stores, location: str, *, rankings: bool = False) -> Report:

    try:
        report = load_report_bytes(stores.read(location), location)
    except ReportError as exc:
        raise VxEvalError(str(exc)) from None
    return attach(report, stores, location) if rankings else report


@dataclass(frozen=True)
class _Draws:
    seed: int
    permutations: int
    bootstrap: int


def _change(key: str, measure: str, a: np.ndarray, b: np.ndarray, draws: _Draws) -> Change | None:
    """One setup's change in one measure over the questions both runs scored (None where there are none)."""
    both = ~np.isnan(a) & ~np.isnan(b)
    a, b = a[both], b[both]
    if not len(a):
        return None
    lo, hi = stats.paired_bootstrap_ci(b, a, samples=draws.bootstrap, seed=draws.seed)
    return Change(
        setup=key,
        measure=measure,
        questions=len(a),
        before=float(a.mean()),
        after=float(b.mean()),
        delta=float((b - a).mean()),
        ci=(lo, hi),
        p=stats.paired_randomization(b, a, samples=draws.permutations, seed=draws.seed),
    )


def _holm_per_measure(rows: list[Change], alpha: float) -> list[Change]:
    """The rows with Holm's correction over each measure's family of setups, and whether it is significant."""
    rows = list(rows)
    for measure in {r.measure for r in rows}:
        family = [i for i, r in enumerate(rows) if r.measure == measure]
        for i, adjusted in zip(family, stats.holm([rows[i].p for i in family]), strict=True):
            rows[i] = rows[i].model_copy(update={"p_holm": adjusted, "significant": adjusted < alpha})
    return rows


def compare_reports(
    before: Report,
    after: Report,
    *,
    allow_different_golden: bool = False,
    seed: int = 0,
    permutations: int = 10_000,
    bootstrap: int = 1000,
    alpha: float = 0.05,
) -> Comparison:
    """Per setup present in both runs and per measure both scored: after - before over the questions both
    evaluated, a paired 95% interval, a paired randomization p-value, and Holm's correction per measure."""
    a_sha, b_sha = before.golden.sha256 or "", after.golden.sha256 or ""
    if a_sha != b_sha and not allow_different_golden:
        raise VxEvalError(
            f"the runs read different golden files ({a_sha[:12]}… and {b_sha[:12]}…): their questions differ, so "
            "their scores do not compare; allow different golden files to compare the questions they share"
        )
    a_setups, b_setups = before.by_key, after.by_key
    a_index = {q: i for i, q in enumerate(before.question_ids)}
    b_index = {q: i for i, q in enumerate(after.question_ids)}
    shared_q = [q for q in after.question_ids if q in a_index]
    draws = _Draws(seed, permutations, bootstrap)
    rows: list[Change] = []
    for key in [k for k in b_setups if k in a_setups]:
        a_metrics, b_metrics = a_setups[key].per_question.metrics, b_setups[key].per_question.metrics
        for measure in [m for m in b_metrics if m in a_metrics]:
            a = np.array([a_metrics[measure][a_index[q]] for q in shared_q], dtype=float)
            b = np.array([b_metrics[measure][b_index[q]] for q in shared_q], dtype=float)
            change = _change(key, measure, a, b, draws)
            if change is not None:
                rows.append(change)
    rows = _holm_per_measure(rows, alpha)
    return Comparison(
        before=before.id,
        after=after.id,
        golden_same=a_sha == b_sha,
        questions=len(shared_q),
        alpha=alpha,
        rows=rows,
        only_before=sorted(set(a_setups) - set(b_setups)),
        only_after=sorted(set(b_setups) - set(a_setups)),
        latency=latency_changes(before, after, [k for k in b_setups if k in a_setups], samples=bootstrap, seed=seed),
        settings=settings_diff(before, after),
    )


def failed_gates(comparison: Comparison, gates: list[Gate]) -> list[str]:
    """The gates a comparison trips: a drop beyond the tolerance AND significant after Holm's correction."""
    tripped = []
    for gate in gates:
        rows = [r for r in comparison.rows if r.measure == gate.measure]
        if not rows:
            raise VxEvalError(f"a gate names {gate.measure}, which neither run scored; add it to evaluation.metrics")
        for row in rows:
            drop = row.before - row.after
            if drop > gate.tolerance(row.before) and row.significant:
                tripped.append(
                    f"{row.setup}: {gate.measure} dropped by {drop:.4f} ({row.before:.4f} → {row.after:.4f}, "
                    f"p = {row.p_holm:.4f} after Holm) — gate: {gate.text}"
                )
    return tripped


def partial_setups(comparison: Comparison, before: Report, after: Report) -> list[str]:
    """A line for each compared setup with searches that failed in either run: its scores leave those
    questions out, so no gate may pass on them."""
    compared = {r.setup for r in comparison.rows}
    lines = []
    for which, report in (("before", before), ("after", after)):
        for setup in report.setups:
            if setup.key in compared and setup.counts.failed:
                lines.append(
                    f"{setup.key}: {setup.counts.failed} searches failed in the {which} run ({report.id}); its "
                    "scores are partial and no gate passes on them"
                )
    return lines
