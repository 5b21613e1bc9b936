"""The stages of a run (`core.usecases.pipeline` calls them in order): targets opened and indexed (`targets`),
what to search (`selection`), the searches (`search`, on an executor: `executors`; kept as they finish:
`checkpoints`), the scoring (`scoring`), the ranking (`ranking`), the report's sections put together
(`assembly`); fusion and its tuning (`fusion`, `tuning`), where model work goes (`work`, `cluster`) and the
load a run ran under (`load`).

Imports every room below it; never `core.usecases`, `vx_eval.plugins` or a view (import-linter)."""
