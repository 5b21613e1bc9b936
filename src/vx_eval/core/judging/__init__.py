"""Judges: grading (question, result) pairs where no human label exists (`grading`), measuring how far a judge
agrees with people (`check`), how its noise could move the picks (`noise`) and whether stuffed passages fool
it (`gullible`). The `Judge` role is a contract (`core.contracts.judge`); running a whole check is a use case
(`core.usecases.judge_check`).

Imports `core.golden`, `core.report`, `core.models`, `core.stores`, `core.measures`, `core.contracts` and
`core.errors`."""
