"""Golden data: the JSONL format, read, linted and saved (`files`), other tools' formats (`importers`),
where questions and documents come from (`sources`), templates to fill in (`template`), and the units a hit
or a question names (`units`). The rows and questions themselves are contracts (`core.contracts.golden`).

Imports the rooms below it: `core.report` (what a corpus cut left out), `core.config`, `core.stores`,
`core.measures`, `core.contracts` and `core.errors`."""
