"""One self-contained HTML page for a run: styles, script and charts inline, nothing fetched from anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from vx_eval import __version__
from vx_eval.core.report.schema import Report
from vx_eval.html import charts
from vx_eval.html.view import (
    PER_PAGE,
    PICKS,
    GradedView,
    SetupView,
    fmt_ms,
    found_metrics,
    graded_view,
    setup_views,
)
from vx_eval.views.format import (
    audit_headline,
    circular_note,
    corpus_note,
    corrected_words,
    fmt,
    meaning,
    measures_shown,
    sources_note,
    suspect_lines,
    tie_notes,
    timing_note,
    tuning_notes,
)

OVER_TIME_SERIES = 7
GRADED_COLUMNS = (
    ("dcg", "dcg@10", "each of the first 10 results' grade divided by log2(place + 1), summed (DCG@10)"),
    (
        "mean_rel",
        "mean relevance",
        "the average grade of the results in the first 10 places (Databricks' mean relevance: an ungraded "
        "result counts 0, an empty place is left out)",
    ),
    ("p_strict", "p@10 (grade ≥ 2)", "share of the first 10 results graded 2 or 3 (precision@10, Databricks' rule)"),
    ("mrr_strict", "mrr (grade ≥ 2)", "1 over the place of the first result graded 2 or 3, averaged (MRR)"),
)
"""The graded view's columns: the field of `schema.Graded`, its heading and what it means."""


@dataclass(frozen=True)
class MenuEntry:
    id: str
    href: str
    created_at: str | None
    collections: list[str]
    status: str | None


@dataclass(frozen=True)
class Menu:
    """A page of older runs for the served page (twelve at a time)."""

    entries: list[MenuEntry]
    total: int
    first: int
    last: int
    newer: str | None = None
    older: str | None = None


@dataclass(frozen=True)
class StartForm:
    """What the served page's "Start a new evaluation" form offers: the server's experiments, the targets it
    may run with no configuration, and its datasets."""

    experiments: list[str]
    datasets: list[str]
    targets: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Account:
    """Who the served page is for: `name` None for nobody signed in; `start` None for a caller who may not
    start runs."""

    name: str | None = None
    start: StartForm | None = None


def start_form(form: StartForm) -> Markup:
    """The "Start a new evaluation" form, as the page and the server's no-runs-yet page show it."""
    return Markup(_environment().from_string(_asset("start.html.j2")).render(form=form))


def small_page(title: str, body: Markup, *, refresh: int | None = None) -> str:
    """A page of the served site that is not a report (no runs yet, a run in progress), styled as the
    report's page is; `refresh`: seconds before the browser loads it again."""
    meta = Markup('<meta http-equiv="refresh" content="{}">').format(refresh) if refresh else ""
    return str(
        Markup(
            '<!doctype html><html lang="en"><head><meta charset="utf-8">{}<title>{} — vx-eval</title>'
            "<style>{}</style></head><body>{}</body></html>"
        ).format(meta, title, Markup(_asset("page.css")), body)
    )


def run_labels(created: Sequence[str | None]) -> list[str]:
    """Short names for runs on a chart's axis: the time when they all ran on one day, else the day."""
    days = {c[:10] for c in created if c}
    if len(days) <= 1:
        return [c[11:16] if c else "?" for c in created]
    return [c[5:10] if c else "?" for c in created]


def _asset(name: str) -> str:
    return resources.files("vx_eval.html").joinpath("assets", name).read_text(encoding="utf-8")


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(fmt=fmt, fmt_ms=fmt_ms)
    return env


def _setup_charts(v: SetupView, primary_label: str) -> dict[str, Any]:
    history = charts.lines(
        [(str(v.number), v.label, [h.found10 for h in v.history])],
        run_labels([h.created_at for h in v.history]),
        "found in the top 10",
        "run",
        f"{v.label}: found in the top 10, run by run",
        "history-chart",
        marks=[i for i, h in enumerate(v.history) if h.index_changed],
        from_zero=False,
    )
    measures = list(dict.fromkeys(m for h in v.history for m in h.measures))
    over_runs = {
        m: charts.lines(
            [(str(v.number), v.label, [h.measures.get(m) for h in v.history])],
            run_labels([h.created_at for h in v.history]),
            m,
            "run",
            f"{v.label}: {m}, run by run",
            "history-chart",
            marks=[i for i, h in enumerate(v.history) if h.index_changed],
            from_zero=False,
        )
        for m in measures
        if m != "found@10" and any(h.measures.get(m) is not None for h in v.history)
    }
    return {
        "over_runs": over_runs,
        "positions": charts.bars(
            v.positions, "questions", "place of the first right answer", f"{v.label}: how far down", "positions"
        ),
        "times": charts.bars(
            v.times, "searches", "search time, ms (each bar doubles)", f"{v.label}: search times", "times"
        ),
        "history": history,
    }


@dataclass(frozen=True)
class PickCard:
    name: str
    title: str
    rule: str
    key: str | None
    view: SetupView | None
    reason: str | None = None
    """Why, in words (how much and how surely faster), where the report says."""


def _relations(report: Report) -> dict[str, str]:
    """Each setup that stands in a relation to the judge: `circular` or `related` (a report from before
    relations were told apart says circular for all)."""
    judge = report.judge
    return {key: relation for key in judge.circular if (relation := judge.relation(key))} if judge else {}


def _picks(report: Report, by_key: dict[str, SetupView]) -> list[PickCard]:
    settings, chosen, picking = report.settings, dict(report.picks.items()), report.picking
    measure = picking.measure if picking else settings.primary
    reasons = picking.reasons if picking else {}
    return [
        PickCard(
            name,
            title,
            rule.format(balance=settings.balance_points, time=settings.time_points, measure=measure),
            chosen.get(name),
            by_key.get(chosen.get(name) or ""),
            reasons[name].text if name in reasons else None,
        )
        for name, title, rule in PICKS
    ]


def _scatter(report: Report, views: Sequence[SetupView], measure: str) -> Markup:
    """The measure that decided the picks against median time, one numbered mark per setup, the frontier
    (on that measure) joined."""
    plain = meaning(measure).plain
    points = []
    for v in views:
        value = report.setup(v.key).summary.get(measure)
        if v.error is None and value is not None:
            tip = f"{v.number}. {v.label}: {plain} {fmt(measure, value)}, median {fmt_ms(v.median_ms)}"
            points.append(charts.Point(v.key, v.label, v.number, v.median_ms or 0.0, value, tip))
    return charts.quality_vs_time(points, report.frontier, plain)


def _depths(report: Report, views: Sequence[SetupView]) -> Markup | None:
    found = found_metrics(report.settings)
    if len(found) < 2:
        return None
    return charts.lines(
        [(str(v.number), v.label, v.found_at) for v in views if v.error is None],
        [m.split("@")[1] for m in found],
        "share of questions found",
        "depth k (results read)",
        "found at each depth",
        "depths",
    )


def _over_time(report: Report, earlier: Sequence[Report], views: Sequence[SetupView], plain: str) -> Markup | None:
    runs = sorted([*earlier, report], key=lambda r: r.id)
    if len(runs) < 2:
        return None
    primary = report.settings.primary
    series = []
    for v in views[:OVER_TIME_SERIES]:
        values = []
        for r in runs:
            other = r.by_key.get(v.key)
            values.append(other.summary.get(primary) if other else None)
        series.append((str(v.number), v.label, values))
    labels = run_labels([r.created_at for r in runs])
    return charts.lines(series, labels, plain, "run", f"{plain} over time", "over-time", from_zero=False)


def _graded_charts(graded: GradedView) -> tuple[Markup, Markup]:
    """DCG@10 per method without and with the reranker, and the mean grade at each place."""
    rows = []
    for row in graded.with_without:
        group = []
        if row.plain is not None:
            group.append(("without", row.plain, f"{row.method}: DCG@10 {row.plain:.3f} without a reranker"))
        for ranker, value in row.reranked:
            if value is not None:
                group.append((f"+ {ranker}", value, f"{row.method} reranked by {ranker}: DCG@10 {value:.3f}"))
        rows.append((row.method, group))
    bars = charts.paired_bars(rows, "DCG@10", "DCG@10 per method, without and with the reranker", "graded-bars")
    places = [
        (str(i + 1), v or 0.0, f"place {i + 1}: mean grade {v:.2f}" if v is not None else f"place {i + 1}: no results")
        for i, v in enumerate(graded.by_place)
    ]
    return bars, charts.bars(places, "mean grade", "result place", "mean grade by place", "by-place")


def _kind_charts(graded: GradedView) -> tuple[Markup, Markup] | None:
    """Per type of question: DCG@10 without and with the reranker (bars), and the mean grade by place (a line a
    type), as Databricks' dashboard draws them; None where the questions have no types."""
    if not graded.kinds:
        return None
    rows = []
    for k in graded.kinds:
        group = [(name, value, f"{k.kind}, {label}: DCG@10 {value:.3f}")
                 for name, value, label in (("without", k.plain_dcg, graded.plain_label),
                                            ("reranked", k.reranked_dcg, graded.reranked_label))
                 if value is not None]  # fmt: skip
        rows.append((f"{k.kind} ({k.questions})", group))
    bars = charts.paired_bars(rows, "DCG@10", "DCG@10 per type of question, without and with the reranker", "kind-bars")
    series = [(str(i), k.kind, k.by_place) for i, k in enumerate(graded.kinds, start=1)]
    places = charts.lines(series, [str(i + 1) for i in range(10)], "mean grade", "result place",
                          f"mean grade by place per type ({graded.best_label})", "kind-places")  # fmt: skip
    return bars, places


def render_page(
    report: Report,
    earlier: Sequence[Report] = (),
    *,
    menu: Menu | None = None,
    older: str | None = None,
    golden_url: str | None = None,
    account: Account | None = None,
) -> str:
    """The page for `report`. `earlier`: reports of earlier runs on the same questions (for the run-by-run
    views); `menu`, `older` and `golden_url` are what a server adds (other runs, the way back to the newest,
    the golden download for a caller allowed it, and `account`: who is signed in and what they may start)."""
    settings = report.settings
    primary = settings.primary
    views = setup_views(report, earlier)
    by_key = {v.key: v for v in views}
    primary_meaning = meaning(primary)
    deciding = report.picking.measure if report.picking else primary
    graded = graded_view(report)
    graded_bars, by_place = _graded_charts(graded) if graded else (None, None)
    kind_charts = _kind_charts(graded) if graded else None
    metric_names = list(dict.fromkeys((primary, *settings.metrics, *(("dcg@10", "mean_rel@10") if graded else ()))))
    return (
        _environment()
        .from_string(_asset("page.html.j2"))
        .render(
            version=__version__,
            css=Markup(_asset("page.css")),
            js=Markup(_asset("page.js")),
            report=report,
            golden=report.golden,
            golden_name=report.golden.source.replace("\\", "/").rsplit("/", 1)[-1] or "(questions held in memory)",
            golden_url=golden_url,
            older=older,
            account=account,
            sources=sources_note(report),
            audit_headline=audit_headline(report),
            suspects=suspect_lines(report),
            corpus_note=corpus_note(report),
            start=start_form(account.start) if account and account.start else None,
            picks=_picks(report, by_key),
            primary=primary,
            primary_meaning=primary_meaning,
            measures=[meaning(m) for m in measures_shown(report)[1:]],
            picking_note=report.picking.note if report.picking else None,
            picking_sure=report.picking.sure if report.picking else None,
            judge_sure=report.picking.judge_sure if report.picking else None,
            corrected=corrected_words(report),
            circular_note=circular_note(report),
            relations=_relations(report),
            scatter=_scatter(report, views, deciding),
            deciding_meaning=meaning(deciding),
            frontier=report.frontier,
            depths=_depths(report, views),
            views=views,
            by_key=by_key,
            anchors={v.key: v.anchor for v in views},
            charts={v.key: _setup_charts(v, primary_meaning.plain) for v in views},
            per_page=PER_PAGE,
            detectable=report.detectable_difference.value,
            graded=graded,
            graded_columns=GRADED_COLUMNS,
            graded_bars=graded_bars,
            kind_bars=kind_charts[0] if kind_charts else None,
            kind_places=kind_charts[1] if kind_charts else None,
            by_place=by_place,
            over_time=_over_time(report, earlier, views, primary_meaning.plain),
            menu=menu,
            timing_note=timing_note(report),
            glossary=[meaning(m) for m in metric_names],
            headroom=report.headroom,
            tie_flags=[f"{by_key[key].label if key in by_key else key}: {text}" for key, text in tie_notes(report)],
            pairs=_pairs(report, views),
            tuning=tuning_notes(report),
        )
    )


@dataclass(frozen=True)
class PairsView:
    measure: str
    method: str
    trials: int
    questions: int
    alpha: float
    count: int
    rows: list[tuple[str, str, list[tuple[str, str, str]]]]


def _pairs(report: Report, views: Sequence[SetupView]) -> PairsView | None:
    """The all-pairs matrix: a row and a column per setup tested, each cell the row's mean minus the
    column's, marked where the family-wise test tells it from noise."""
    pairs = report.pairs
    if pairs is None:
        return None
    by_pair = {(t.a, t.b): t for t in pairs.pairs}
    keys = list(dict.fromkeys(k for t in pairs.pairs for k in (t.a, t.b)))
    by_key = {v.key: v for v in views}
    rows = []
    for a in keys:
        cells = []
        for b in keys:
            if a == b:
                cells.append(("", "self", ""))
                continue
            test = by_pair.get((a, b))
            delta, p = (test.delta, test.p) if test else (-by_pair[(b, a)].delta, by_pair[(b, a)].p)
            surely = p < pairs.alpha
            mark = ("▲" if delta > 0 else "▼") if surely else "·"
            css = ("better" if delta > 0 else "worse") if surely else "alike"
            shown = "0.000" if abs(delta) < 5e-4 else f"{delta:+.3f}"
            cells.append((f"{shown} {mark}", css, f"p = {p:.3g}"))
        view = by_key.get(a)
        rows.append((view.label if view else a, view.anchor if view else "", cells))
    return PairsView(pairs.measure, pairs.method, pairs.trials, pairs.questions, pairs.alpha, len(pairs.pairs), rows)
