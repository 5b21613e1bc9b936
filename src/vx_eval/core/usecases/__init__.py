"""The use cases, above the capability rooms: a whole run (`pipeline`) and its plan before long work
(`plan`), checking a judge against labels (`judge_check`), scoring a kept run again (`rescore`), exporting
its rankings as TREC files (`export`) and re-running on change (`watch`). Each composes the rooms below it;
no room below imports one (import-linter's layers contract over `vx_eval.core`, in `pyproject.toml`)."""
