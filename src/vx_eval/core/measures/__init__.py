"""The measures: each one a pure function over a `Batch` of questions, registered by name and parsed from
text (`metrics`), trec_eval's measures beyond the common ones (`trec_only`), and what is said about a score
(`stats`: intervals and paired tests; `ties`: how far ties in score move it).

Imports nothing of vx-eval but `core.errors`: every other room reads the measures, and they read no
other room (an import-linter contract in `pyproject.toml`)."""
