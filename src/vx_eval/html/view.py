"""What the report page shows, worked out from a saved report (and the earlier runs on the same questions).

Everything here reads the JSON report only, so a page can be made for any saved run, on any machine, long
after the engines are gone. Numbers are worded the way the command line words them.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from vx_eval.core import metrics
from vx_eval.display import fmt_ms as display_ms

PICKS = (
    ("finds_the_most", "Finds the most", "most questions with a right answer in the top 10"),
    (
        "best_for_balance",
        "Best for balance",
        "the fastest setup within {balance:g} points of the one that finds the most",
    ),
    ("best_for_time", "Best for time", "the fastest setup within {time:g} points of the one that finds the most"),
)
PER_PAGE = 7

# What each measure means in plain words, and the names it goes by in papers and RAG tools.
MEANINGS = {
    "found": (
        "Found in the top {k}",
        "share of questions with a right answer among the first {k} results",
        "recall@k / hit rate@k",
    ),
    "recall": (
        "Recall in the top {k}",
        "share of all the right answers a question has that came back in the first {k}",
        "recall@k",
    ),
    "p": ("Precision in the top {k}", "share of the first {k} results that are right answers", "precision@k"),
    "mrr": (
        "How far down the answer was",
        "the average of 1 over the first right answer's place: 1 when it is first every time",
        "MRR, mean reciprocal rank",
    ),
    "ndcg": (
        "Order quality in the top {k}",
        "how close the first {k} come to the best possible order, grades weighed by place (1 = ideal)",
        "nDCG@k",
    ),
    "dcg": (
        "Graded gain in the top {k}",
        "the sum of each result's grade divided by log2(place + 1), over the first {k}",
        "DCG@k",
    ),
    "map": ("Average precision", "precision at each right answer's place, averaged, then over questions", "MAP"),
    "mean_rel": (
        "Mean relevance",
        "the average grade of the first {k} results (ungraded counts 0)",
        "mean relevance@k",
    ),
    "f1": ("F1 in the top {k}", "harmonic mean of precision and recall in the first {k}", "F1@k"),
    "f2": (
        "F2 in the top {k}",
        "precision and recall in the first {k}, a missed answer weighed four times a wrong one",
        "F2@k",
    ),
    "rprec": ("R-precision", "precision at R, R being how many right answers the question has", "R-Prec"),
    "judged": ("Judged in the top {k}", "share of the first {k} results that carry a grade", "judged@k"),
}


def meaning(metric: str) -> dict[str, str]:
    """The plain name, the sentence and the names elsewhere of a measure written as in the report."""
    parsed = metrics.parse(metric)
    base = parsed.definition.name
    k = "" if parsed.k is None else str(parsed.k)
    plain, sentence, elsewhere = MEANINGS.get(base, (metric, metric, metric))
    if not k:
        plain, sentence = (
            plain.replace(" in the top {k}", "").replace(" {k}", ""),
            sentence.replace("first {k}", "results"),
        )
    return {
        "metric": metric,
        "plain": plain.format(k=k),
        "sentence": sentence.format(k=k),
        "elsewhere": elsewhere.replace("@k", f"@{k}" if k else ""),
    }


def fmt_ms(value: float | None) -> str:
    return "–" if value is None else f"{display_ms(value)} ms"


def index_signature(report: dict[str, Any], target: str) -> str:
    """What identifies the index a target searched: its documents, when they were indexed, the settings."""
    t = (report.get("targets") or {}).get(target) or {}
    keep = {k: t.get(k) for k in ("corpus_sha256", "indexed_at", "settings", "models", "documents", "chunks")}
    return json.dumps(keep, sort_keys=True, default=str)


@dataclass
class SetupView:
    number: int
    key: str
    label: str
    target: str
    error: str | None
    tied: bool
    primary: float | None
    primary_ci: list[float] | None
    found10: float | None
    found10_ci: list[float] | None
    median_ms: float | None
    p95_ms: float | None
    server_ms: float | None
    place: float | None
    mrr: float | None
    positions: list[tuple[str, int, str]] = field(default_factory=list)
    times: list[tuple[str, int, str]] = field(default_factory=list)
    timed: int = 0
    neighbours: list[dict[str, str]] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    found_at: list[float | None] = field(default_factory=list)
    graded: dict[str, Any] | None = None
    summary: dict[str, float | None] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return f"setup-{self.number}"


def _positions(setup: dict[str, Any], depth: int) -> list[tuple[str, int, str]]:
    """How far down the first right answer was: a bar per place 1-10, one for 11 to the depth, one for not found."""
    pq = setup.get("per_question") or {}
    positions = [p for p, s in zip(pq.get("positions", []), pq.get("status", []), strict=False) if s == "evaluated"]
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


def _times(setup: dict[str, Any]) -> tuple[list[tuple[str, int, str]], int]:
    """Search times in bins doubling in width, and how many searches were timed."""
    times = [t for t in (setup.get("per_question") or {}).get("times_ms", []) if t is not None and t > 0]
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


def found_metrics(settings: dict[str, Any]) -> list[str]:
    found = [m for m in settings.get("metrics", []) if m.startswith("found@")]
    return sorted(found, key=lambda m: int(m.split("@")[1]))


def _mrr(setup: dict[str, Any]) -> float | None:
    if setup.get("summary", {}).get("mrr") is not None:
        return float(setup["summary"]["mrr"])
    pq = setup.get("per_question") or {}
    ranks = [p for p, s in zip(pq.get("positions", []), pq.get("status", []), strict=False) if s == "evaluated"]
    return sum(1 / p for p in ranks if p) / len(ranks) if ranks else None


def setup_views(report: dict[str, Any], earlier: Sequence[dict[str, Any]] = ()) -> list[SetupView]:
    settings = report.get("settings", {})
    primary = settings.get("primary", "found@10")
    depth = int(settings.get("depth", 10))
    found = found_metrics(settings)
    labels = {s["key"]: s.get("label", s["key"]) for s in report.get("setups", [])}
    runs = sorted([*earlier, report], key=lambda r: r.get("id", ""))
    views = []
    for s in sorted(report.get("setups", []), key=lambda s: s.get("rank") or 10**6):
        summary, ci = s.get("summary") or {}, s.get("ci") or {}
        mrr = _mrr(s)
        times, timed = _times(s)
        history = []
        previous = None
        for r in runs:
            other = next((o for o in r.get("setups", []) if o.get("key") == s["key"]), None)
            if other is None:
                continue
            signature = index_signature(r, s.get("target", ""))
            history.append(
                {
                    "id": r.get("id"),
                    "created_at": r.get("created_at"),
                    "found10": (other.get("summary") or {}).get("found@10"),
                    "primary": (other.get("summary") or {}).get(primary),
                    "index_changed": previous is not None and signature != previous,
                    "this_run": r.get("id") == report.get("id"),
                }
            )
            previous = signature
        views.append(
            SetupView(
                number=int(s.get("rank") or len(views) + 1),
                key=s["key"],
                label=s.get("label", s["key"]),
                target=s.get("target", ""),
                error=s.get("error"),
                tied=bool(s.get("tied_with_best")),
                primary=summary.get(primary),
                primary_ci=ci.get(primary),
                found10=summary.get("found@10"),
                found10_ci=ci.get("found@10"),
                median_ms=(s.get("times_ms") or {}).get("median"),
                p95_ms=(s.get("times_ms") or {}).get("p95"),
                server_ms=(s.get("server_ms") or {}).get("median") if s.get("server_ms") else None,
                place=1 / mrr if mrr else None,
                mrr=mrr,
                positions=_positions(s, depth),
                times=times,
                timed=timed,
                neighbours=[{**n, "label": labels.get(n["key"], n["key"])} for n in s.get("neighbours", [])],
                history=history,
                found_at=[summary.get(m) for m in found],
                graded=s.get("graded"),
                summary=summary,
            )
        )
    return views


def graded_view(report: dict[str, Any], views: Sequence[SetupView]) -> dict[str, Any] | None:
    """Databricks' dashboard: the best DCG@10 and who reached it, DCG@10 per method with and without the
    reranker, mean grade by place, the grade distribution, strongest, weakest and failed questions."""
    if not report.get("settings", {}).get("graded"):
        return None
    setups = {s["key"]: s for s in report.get("setups", []) if s.get("graded") and not s.get("error")}
    if not setups:
        return None
    best_key = max(setups, key=lambda k: setups[k]["graded"].get("dcg@10") or 0.0)
    best = setups[best_key]
    pairs: dict[tuple[str, str, tuple[str, ...]], dict[str, Any]] = {}
    for s in setups.values():
        group = pairs.setdefault(
            (s["target"], s["method"], tuple(sorted(s["models"]))), {"plain": None, "reranked": []}
        )
        if s.get("ranker"):
            group["reranked"].append(s)
        else:
            group["plain"] = s
    with_without = [
        {
            "method": (g["plain"] or g["reranked"][0])["label"],
            "plain": g["plain"]["graded"]["dcg@10"] if g["plain"] else None,
            "reranked": [(r["ranker"], r["graded"]["dcg@10"]) for r in g["reranked"]],
        }
        for g in pairs.values()
    ]
    dashboard = report.get("graded_questions") or {}
    return {
        "best_key": best_key,
        "best_label": best["label"],
        "best_dcg": best["graded"]["dcg@10"],
        "best_ci": best["graded"]["ci"].get("dcg@10"),
        "with_without": with_without,
        "by_place": best["graded"]["mean_grade_by_place"],
        "distribution": best.get("relevance_distribution") or {},
        "strongest": [(q["id"], q["dcg@10"]) for q in dashboard.get("strongest", [])],
        "weakest": [(q["id"], q["dcg@10"]) for q in dashboard.get("weakest", [])],
        "failed": dashboard.get("failed", []),
        "judge": report.get("judge"),
        "max_grade": (report.get("golden") or {}).get("max_grade"),
    }
