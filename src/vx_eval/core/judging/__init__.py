"""Judges: grading (question, result) pairs where no human label exists (`grading`) and measuring how far
a judge agrees with people (`check`).

Imports `core.measures`, `core.golden`, `core.models`, `core.report`, `core.run` (to search for a
check), `core.stores` and `core.errors`."""
