"""Comparing two runs as CI does (`vx-eval compare`): both read, refused where their golden files or (when
asked) their search settings differ, every change with its interval and Holm-corrected test, and the gates
each tripped (a setup whose searches failed in either run passes none)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from vx_eval.core.errors import VxEvalError
from vx_eval.core.report.compare import Comparison, Gate, compare_reports, failed_gates, load_report, partial_setups
from vx_eval.core.stores import Stores


@dataclass(frozen=True)
class CompareRequest:
    """What to compare: two runs (ids, ``latest`` or paths) kept at `runs`, the gates, and what to refuse."""

    before: str
    after: str
    runs: str
    gates: Sequence[str] = ()
    allow_different_golden: bool = False
    same_settings: bool = False


@dataclass(frozen=True)
class Compared:
    comparison: Comparison
    gates: list[Gate]
    tripped: list[str]
    """The gates each setup tripped, and the setups no gate may pass (failed searches), one line each."""


def compare_runs(request: CompareRequest, stores: Stores) -> Compared:
    """The comparison of the two runs and the gates it trips; `VxEvalError` for a gate that does not parse, runs
    of different golden files (unless allowed) or, with `same_settings`, of different search settings."""
    try:
        gates = [Gate.parse(g) for g in request.gates]
    except VxEvalError as exc:
        raise VxEvalError(f"--fail-if: {exc}") from None
    first = load_report(request.before, stores, request.runs)
    second = load_report(request.after, stores, request.runs)
    if first.golden.sha256 != second.golden.sha256 and not request.allow_different_golden:
        raise VxEvalError(
            f"the runs read different golden files ({(first.golden.sha256 or '')[:12]}… and "
            f"{(second.golden.sha256 or '')[:12]}…): their questions differ, so their scores do not compare; "
            "pass --allow-different-golden to compare the questions they share"
        )
    comparison = compare_reports(first, second, allow_different_golden=True)
    if request.same_settings and comparison.searches_differ:
        differ = "; ".join(f"{c.name}: {c.before!r} → {c.after!r}" for c in comparison.searches_differ[:5])
        raise VxEvalError(f"the runs searched with different settings ({differ}); --same-settings refuses them")
    tripped = failed_gates(comparison, gates)
    if gates:  # a run with failed searches passes no gate, whatever its partial scores say
        tripped += partial_setups(comparison, first, second)
    return Compared(comparison, gates, tripped)
