"""Golden data: the JSONL format, read, linted and saved (`files`), other tools' formats (`importers`),
where questions and documents come from (`sources`), and templates to fill in (`template`).

Imports `core.config`, `core.run` (the units a question names), `core.stores` and `core.errors`."""
