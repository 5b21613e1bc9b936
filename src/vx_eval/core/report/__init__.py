"""The report: the typed `Report` (`schema`), the ranking and picks (`picks`), analysis views (`views`,
`headroom`), ids, saving and a run's checkpoint manifest (`saving`), earlier formats brought up to date
(`upgrade`), plain mappings (`mapping`), the rankings kept beside it (`kept_rankings`), runs kept at a location
(`history`), comparing two (`compare`), and what was missing (`missing`).

Imports `core.config`, `core.models`, `core.stores`, `core.measures`, `core.contracts` and `core.errors`;
never the run, judging or golden rooms above it, and never a view: the Report's table, frames and page come
from a plugin (the `vx_eval_report_views` hook; vx-eval's own gives `vx_eval.python.notebook`)."""
