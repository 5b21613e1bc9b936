"""A report for people working in Python: the terminal table as text, DataFrames (one row per setup, or
long format per question), the page inside a notebook, and saving. `core.report.schema.Report`'s methods call these."""

from __future__ import annotations

import io
from html import escape
from typing import TYPE_CHECKING, Any

from vx_eval.core.errors import VxEvalError, redact
from vx_eval.core.optional import on_first_use
from vx_eval.core.plugins import load_plugins
from vx_eval.core.report.saving import save_report
from vx_eval.core.stores import Stores
from vx_eval.html.render import render_page
from vx_eval.views.display import show_run

_rich_console = on_first_use("rich.console")

if TYPE_CHECKING:
    from vx_eval.core.report.schema import Report

QUESTION_COLUMNS = ["setup", "question", "status", "time_ms", "position", "measure", "value"]


def pandas() -> Any:
    """pandas, or a clear error naming the extra that installs it."""
    try:
        # lazy: an optional dependency (vx-eval[notebook]), loaded only where it is used
        import pandas as pd
    except ImportError:
        raise VxEvalError('reports as DataFrames need pandas: pip install "vx-eval[notebook]"') from None
    return pd


def table_text(report: Report, width: int, wide: bool) -> str:
    """The ranked table and the picks as `vx-eval run` prints them, in plain text `width` columns wide."""

    console = _rich_console.Console(
        width=width, record=True, color_system=None, force_terminal=False, file=io.StringIO()
    )
    show_run(console, report, None, wide=wide)
    return console.export_text()


def setups_frame(report: Report) -> Any:
    """One row per setup in rank order, indexed by key: what it is, every measure (its interval as
    ``<measure>_lo`` / ``<measure>_hi``), the search times, the question counts and the picks it is."""
    picked: dict[str, list[str]] = {}
    for name, key in report.picks.items():
        if key:
            picked.setdefault(key, []).append(name)
    rows = []
    for s in report.setups:
        row: dict[str, Any] = {
            "rank": s.rank,
            "key": s.key,
            "label": s.label,
            "target": s.target,
            "engine": s.engine,
            "method": s.method,
            "models": "+".join(s.models),
            "ranker": s.ranker,
            "tied_with_best": s.tied_with_best,
        }
        for metric, value in s.summary.items():
            row[metric] = value
            if metric in s.ci:
                row[f"{metric}_lo"], row[f"{metric}_hi"] = s.ci[metric]
        row.update(
            median_ms=s.times_ms.median,
            p95_ms=s.times_ms.p95,
            evaluated=s.counts.evaluated,
            failed=s.counts.failed,
            skipped=s.counts.skipped,
            error=s.error,
            picks=",".join(picked.get(s.key, [])),
        )
        rows.append(row)
    return pandas().DataFrame(rows).set_index("key")


def questions_frame(report: Report) -> Any:
    """Long format: one row per (setup, question, measure) with the question's status, its search time and
    the place of its first right answer (`QUESTION_COLUMNS`)."""
    rows = []
    for s in report.setups:
        pq = s.per_question
        for i, qid in enumerate(report.question_ids):
            base = [
                s.key,
                qid,
                _at(pq.status, i),
                _at(pq.times_ms, i),
                _at(pq.positions, i),
            ]
            for metric, values in pq.metrics.items():
                rows.append([*base, metric, _at(values, i)])
    return pandas().DataFrame(rows, columns=QUESTION_COLUMNS)


def _at(values: list[Any], i: int) -> Any:
    return values[i] if i < len(values) else None


def page_frame(report: Report) -> str:
    """The run's page (picks, the quality-against-time chart, every setup ranked) in a frame of its own,
    so that its styles and script stay its own inside a notebook."""

    page = render_page(report)
    return (
        f'<iframe srcdoc="{escape(page, quote=True)}" title="vx-eval run {escape(report.id)}" '
        'style="width: 100%; height: 900px; border: 1px solid #ddd; border-radius: 6px"></iframe>'
    )


def save(report: Report, location: str) -> str:
    """Write the report: to `location` itself when it names a ``.json`` file, else into the runs kept at
    `location` (``<location>/retrieval/runs/<id>/report.json``, where `vx-eval runs` finds it); where."""

    stores = Stores(load_plugins())
    if location.endswith(".json"):
        stores.write(location, redact(report.to_json()).encode())
        return location
    return save_report(report, None, stores, location)[1]
