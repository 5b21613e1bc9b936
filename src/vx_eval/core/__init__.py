"""The small core of vx-eval, in rooms by capability: `measures` (and trec_eval's command line, `trec`), the
`run` stage by stage, its `report`, `golden` data, `config`, `models` and `judging`; beside them the hooks
(`hookspecs`, `plugins`), `stores` and `errors`. The core never imports a plugin or a view (import-linter holds
it in CI: `pyproject.toml`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vx_eval.core.report.schema import ReportViews

report_views: Callable[[], ReportViews] | None = None
"""Where the `Report`'s conveniences for people come from (``report.table()``, ``to_pandas()``,
``per_question()``, its notebook page, ``save()``): a function giving the module that holds them, set by the
`vx_eval` package above the core (to `vx_eval.notebook`), so that the core never imports a view."""
