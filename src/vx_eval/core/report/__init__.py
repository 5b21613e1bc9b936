"""The report: the typed `Report` (`schema`) and its sections put together (`assembly`), the ranking and
picks (`picks`), analysis views (`views`, `headroom`), ids and saving (`saving`), earlier formats brought up
to date (`upgrade`), plain mappings (`mapping`), the rankings kept beside it (`kept_rankings`) and exported
as TREC files (`export`), runs kept at a location (`history`), scoring again (`rescore`), comparing two
(`compare`).

Imports `core.measures`, `core.golden`, `core.config`, `core.judging`, `core.models`, `core.run` (the
stages a rescore repeats), `core.stores` and `core.errors`; never a view: the Report's table, frames and
page come from the `vx_eval` package above (`core.report_views`)."""
