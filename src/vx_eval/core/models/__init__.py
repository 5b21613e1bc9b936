"""Models: short names resolved to real models and loaded once (`loading`), served models' calls at run time
(`served`) and what they cost (`prices`), and the keyed cache of what is computed once (`cache`). The roles
(encoders, `ModelPlugin`, `Provider`, `ModelEndpoint`) are contracts (`core.contracts.models`, `.endpoints`).

Imports `core.stores`, `core.remote` (timeouts, retries, the rate), the hooks' `Registry`,
`core.contracts` and `core.errors`."""
