"""The use cases, above the capability rooms: a whole run (`pipeline`) and its plan before long work
(`plan`), checking a judge against labels (`judge_check`), checking a golden file (`golden_check`), comparing
two runs with their gates (`compare`), scoring a kept run again (`rescore`), exporting its rankings as TREC
files (`export`) and re-running on change (`watch`). A command parses what it is asked into one typed request
and calls one of these; each composes the rooms below it, and no room below imports one (import-linter's
layers contract over `vx_eval.core`, in `pyproject.toml`)."""
