"""What the report page shows, worked out from a saved report (and the earlier runs on the same questions).

Everything here reads the report only, so a page can be made for any saved run, on any machine, long after
the engines are gone. Numbers are worded the way the command line words them (`vx_eval.views.format`).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vx_eval.core.report.schema import Graded, Report, Settings, SetupResult, TargetInfo
from vx_eval.core.report.views import JudgeInfo
from vx_eval.views.format import fmt_ms as display_ms

PICKS = (
    ("finds_the_most", "Finds the most", "the best {measure}"),
    (
        "best_for_balance",
        "Best for balance",
        "the fastest setup within {balance:g} points of the best {measure} (times within the noise tie)",
    ),
    (
        "best_for_time",
        "Best for time",
        "the fastest setup within {time:g} points of the best {measure} (times within the noise tie)",
    ),
)
PER_PAGE = 7


def fmt_ms(value: float | None) -> str:
    return "–" if value is None else f"{display_ms(value)} ms"


def index_signature(report: Report, target: str) -> str:
    """What identifies the index a target searched: its documents, when they were indexed, the settings."""
    t = report.targets.get(target) or TargetInfo()
    keep = {
        "corpus_sha256": t.corpus_sha256,
        "indexed_at": t.indexed_at,
        "settings": t.settings,
        "models": t.models,
        "documents": t.documents,
        "chunks": t.chunks,
    }
    return json.dumps(keep, sort_keys=True, default=str)


@dataclass
class HistoryRow:
    id: str
    created_at: str | None
    found10: float | None
    primary: float | None
    index_changed: bool
    this_run: bool
    measures: dict[str, float | None] = field(default_factory=dict)
    """Every measure that run scored this setup on (and its graded view's DCG@10 and mean relevance), for the
    page's picker of one measure over runs."""


def _measures_of(setup: SetupResult) -> dict[str, float | None]:
    values: dict[str, float | None] = dict(setup.summary)
    if setup.graded is not None:
        values.setdefault("dcg@10", setup.graded.dcg)
        values["mean relevance"] = setup.graded.mean_rel
    return values


@dataclass
class NeighbourView:
    key: str
    change: str
    label: str


@dataclass
class SetupView:
    number: int
    key: str
    label: str
    target: str
    error: str | None
    tied: bool
    primary: float | None
    primary_ci: tuple[float, float] | None
    found10: float | None
    found10_ci: tuple[float, float] | None
    median_ms: float | None
    p95_ms: float | None
    server_ms: float | None
    place: float | None
    mrr: float | None
    positions: list[tuple[str, int, str]] = field(default_factory=list)
    times: list[tuple[str, int, str]] = field(default_factory=list)
    timed: int = 0
    neighbours: list[NeighbourView] = field(default_factory=list)
    history: list[HistoryRow] = field(default_factory=list)
    found_at: list[float | None] = field(default_factory=list)
    graded: Graded | None = None
    summary: dict[str, float | None] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return f"setup-{self.number}"


def _evaluated_positions(setup: SetupResult) -> list[int | None]:
    pq = setup.per_question
    return [p for p, s in zip(pq.positions, pq.status, strict=False) if s == "evaluated"]


def _positions(setup: SetupResult, depth: int) -> list[tuple[str, int, str]]:
    """How far down the first right answer was: a bar per place 1-10, one for 11 to the depth, one for not found."""
    positions = _evaluated_positions(setup)
    total = len(positions) or 1
    bins: list[tuple[str, int, str]] = []
    for place in range(1, 11):
        n = sum(1 for p in positions if p == place)
        bins.append((str(place), n, f"{n} questions ({n / total:.0%}) had their first right answer at place {place}"))
    if depth > 10:
        n = sum(1 for p in positions if p is not None and p > 10)
        bins.append((f"11–{depth}", n, f"{n} questions ({n / total:.0%}) had it at places 11 to {depth}"))
    n = sum(1 for p in positions if p is None)
    bins.append(("none", n, f"{n} questions ({n / total:.0%}) had no right answer in the first {depth}"))
    return bins


def _times(setup: SetupResult) -> tuple[list[tuple[str, int, str]], int]:
    """Search times in bins doubling in width, and how many searches were timed."""
    times = [t for t in setup.per_question.times_ms if t is not None and t > 0]
    if not times:
        return [], 0
    lo = 2 ** math.floor(math.log2(min(times)))
    edges = [lo]
    while edges[-1] <= max(times):
        edges.append(edges[-1] * 2)
    out = []
    for a, b in itertools.pairwise(edges):
        n = sum(1 for t in times if a <= t < b)
        label = f"{a:g}" if a < 1000 else f"{a / 1000:g}s"
        out.append((label, n, f"{n} searches took {a:g} to {b:g} ms"))
    return out, len(times)


def found_metrics(settings: Settings) -> list[str]:
    found = [m for m in settings.metrics if m.startswith("found@")]
    return sorted(found, key=lambda m: int(m.split("@")[1]))


def _mrr(setup: SetupResult) -> float | None:
    if setup.summary.get("mrr") is not None:
        return setup.summary.get("mrr")
    ranks = _evaluated_positions(setup)
    return sum(1 / p for p in ranks if p) / len(ranks) if ranks else None


def _history(report: Report, runs: Sequence[Report], setup: SetupResult) -> list[HistoryRow]:
    """The setup's found@10 (and primary) run by run, marking where the index it searched changed."""
    primary = report.settings.primary
    rows, previous = [], None
    for r in runs:
        other = r.by_key.get(setup.key)
        if other is None:
            continue
        signature = index_signature(r, setup.target)
        rows.append(
            HistoryRow(
                id=r.id,
                created_at=r.created_at,
                found10=other.summary.get("found@10"),
                primary=other.summary.get(primary),
                index_changed=previous is not None and signature != previous,
                this_run=r.id == report.id,
                measures=_measures_of(other),
            )
        )
        previous = signature
    return rows


def setup_views(report: Report, earlier: Sequence[Report] = ()) -> list[SetupView]:
    settings = report.settings
    primary = settings.primary
    found = found_metrics(settings)
    labels = {s.key: s.label for s in report.setups}
    runs = sorted([*earlier, report], key=lambda r: r.id)
    views: list[SetupView] = []
    for s in sorted(report.setups, key=lambda s: s.rank or 10**6):
        mrr = _mrr(s)
        times, timed = _times(s)
        views.append(
            SetupView(
                number=s.rank or len(views) + 1,
                key=s.key,
                label=s.label,
                target=s.target,
                error=s.error,
                tied=s.tied_with_best,
                primary=s.summary.get(primary),
                primary_ci=s.ci.get(primary),
                found10=s.summary.get("found@10"),
                found10_ci=s.ci.get("found@10"),
                median_ms=s.times_ms.median,
                p95_ms=s.times_ms.p95,
                server_ms=s.server_ms.median if s.server_ms else None,
                place=1 / mrr if mrr else None,
                mrr=mrr,
                positions=_positions(s, settings.depth),
                times=times,
                timed=timed,
                neighbours=[NeighbourView(n.key, n.change, labels.get(n.key, n.key)) for n in s.neighbours],
                history=_history(report, runs, s),
                found_at=[s.summary.get(m) for m in found],
                graded=s.graded,
                summary=s.summary,
            )
        )
    return views


@dataclass
class WithWithout:
    method: str
    plain: float | None
    reranked: list[tuple[str, float | None]]


@dataclass
class KindRow:
    """One type of question on Databricks' dashboard: DCG@10 and mean relevance without and with the reranker
    (the best setup of each by DCG@10 over every question)."""

    kind: str
    questions: int
    plain_dcg: float | None
    reranked_dcg: float | None
    plain_rel: float | None
    reranked_rel: float | None
    by_place: list[float | None]
    """The best setup's mean grade at each of the first ten places, over this type's questions."""


@dataclass(frozen=True)
class GradedView:
    best_key: str
    best_label: str
    best_dcg: float | None
    best_ci: tuple[float, float] | None
    with_without: list[WithWithout]
    by_place: list[float | None]
    distribution: dict[str, float]
    strongest: list[tuple[str, float]]
    weakest: list[tuple[str, float]]
    failed: list[str]
    judge: JudgeInfo | None
    max_grade: int
    kinds: list[KindRow] = field(default_factory=list)
    plain_label: str | None = None
    """The best setup without a reranker (the kinds' "without"), and the best with one (their "with")."""
    reranked_label: str | None = None


def _dcg(s: SetupResult) -> float:
    return (s.graded.dcg if s.graded else None) or 0.0


def _by_type(best: SetupResult, setups: Sequence[SetupResult]) -> dict[str, Any]:
    """The per-type part of the graded view: each type's row, and which setups are "without" and "with" the
    reranker (the best of each by DCG@10)."""
    plain = max((s for s in setups if not s.ranker), key=_dcg, default=None)
    reranked = max((s for s in setups if s.ranker), key=_dcg, default=None)
    return {
        "kinds": _kind_rows(best, plain, reranked),
        "plain_label": plain.label if plain else None,
        "reranked_label": reranked.label if reranked else None,
    }


def _kind_rows(best: SetupResult, plain: SetupResult | None, reranked: SetupResult | None) -> list[KindRow]:
    """Each type of question the best setup was graded on, with the best plain and reranked setups' views."""
    rows = []
    for kind, view in sorted((best.graded.by_kind if best.graded else {}).items()):
        mine = [s.graded.by_kind.get(kind) if s is not None and s.graded else None for s in (plain, reranked)]
        rows.append(KindRow(kind=kind, questions=view.questions,
                            plain_dcg=mine[0].dcg if mine[0] else None, reranked_dcg=mine[1].dcg if mine[1] else None,
                            plain_rel=mine[0].mean_rel if mine[0] else None,
                            reranked_rel=mine[1].mean_rel if mine[1] else None,
                            by_place=view.mean_grade_by_place))  # fmt: skip
    return rows


def graded_view(report: Report) -> GradedView | None:
    """Databricks' dashboard: the best DCG@10 and who reached it, DCG@10 per method with and without the
    reranker, mean grade by place, the grade distribution, strongest, weakest and failed questions."""
    if not report.settings.graded:
        return None
    setups = {s.key: s for s in report.setups if s.graded is not None and not s.error}
    if not setups:
        return None

    def dcg(s: SetupResult) -> float | None:
        return s.graded.dcg if s.graded else None

    best_key = max(setups, key=lambda k: dcg(setups[k]) or 0.0)
    best = setups[best_key]
    groups: dict[tuple[str, str, tuple[str, ...]], tuple[list[SetupResult], list[SetupResult]]] = {}
    for s in setups.values():
        plain, reranked = groups.setdefault((s.target, s.method, tuple(sorted(s.models))), ([], []))
        (reranked if s.ranker else plain).append(s)
    with_without = [
        WithWithout(
            method=(plain or reranked)[0].label,
            plain=dcg(plain[0]) if plain else None,
            reranked=[(r.ranker or "", dcg(r)) for r in reranked],
        )
        for plain, reranked in groups.values()
    ]
    dashboard = report.graded_questions
    graded = best.graded or Graded()
    return GradedView(
        best_key=best_key,
        best_label=best.label,
        best_dcg=graded.dcg,
        best_ci=graded.ci.get("dcg"),
        with_without=with_without,
        by_place=graded.mean_grade_by_place,
        distribution=best.relevance_distribution,
        strongest=[(q.id, q.dcg) for q in dashboard.strongest] if dashboard else [],
        weakest=[(q.id, q.dcg) for q in dashboard.weakest] if dashboard else [],
        failed=dashboard.failed if dashboard else [],
        judge=report.judge,
        max_grade=report.golden.max_grade,
        **_by_type(best, list(setups.values())),
    )
