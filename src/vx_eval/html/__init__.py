"""The run's page: one self-contained HTML file (`vx-eval report RUN --html FILE`), also what `vx-eval serve` shows."""

from __future__ import annotations

from typing import Any

from vx_eval.core.report.history import same_questions
from vx_eval.core.report.schema import Report
from vx_eval.core.stores import Stores
from vx_eval.html.render import render_page


def page_for(report: Report, stores: Stores | None = None, save_to: str | None = None, **served: Any) -> str:
    """The page of a saved run, with the earlier runs on the same questions read from where it was saved."""

    earlier = same_questions(stores, save_to, report) if stores is not None and save_to else []
    return render_page(report, earlier, **served)
