"""The small core of vx-eval, in rooms by capability and in layers, top to bottom (import-linter holds them in
CI, `pyproject.toml`; a room imports only the rooms below it):

- `usecases` (a whole run, its plan, judge check, rescore, export, watch) and `trec` (trec_eval's command line);
- `run` (the stages of a run), `judging`, `golden` data, the `report`, the `corpus`, `config`, `models`;
- `stores`, `remote` (the policy for remote calls), the hooks (`plugins`, `hookspecs`), the `measures`;
- `contracts` (every role's Protocol and the value types rooms share) and `errors` at the bottom.

The core never imports a plugin or a view."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vx_eval.core.report.schema import ReportViews

report_views: Callable[[], ReportViews] | None = None
"""Where the `Report`'s conveniences for people come from (``report.table()``, ``to_pandas()``,
``per_question()``, its notebook page, ``save()``): a function giving the module that holds them, set by the
`vx_eval` package above the core (to `vx_eval.python.notebook`), so that the core never imports a view."""
