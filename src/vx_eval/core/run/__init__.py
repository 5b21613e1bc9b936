"""The run, stage by stage as the data flows (`pipeline`): targets opened and indexed (`targets`), what to
search (`selection`), the searches (`search`, on an executor: `executors`; kept as they finish:
`checkpoints`), the scoring (`scoring`), the ranking (`ranking`); with the engine contract (`engine`), the
policy for remote calls (`remote`), fusion and its tuning (`fusion`, `tuning`), hits as golden units
(`units`), what killed runs leave (`leftovers`) and re-running on change (`watch`).

Imports every other room of the core; never `vx_eval.plugins` or a view (import-linter)."""
