"""Where a `Report`'s conveniences for people come from, registered as a plugin (the `vx_eval_report_views` hook,
as a third party would register its own): the notebook module, imported only when a report's table, frames,
page or saving is first asked for, so that loading plugins costs nothing."""

from __future__ import annotations

from typing import Any

from vx_eval.core.hookspecs import hookimpl


@hookimpl
def vx_eval_report_views() -> Any:
    from vx_eval.python import notebook  # lazy: rich, jinja and pandas load only when a report's view is asked

    return notebook
