"""Experiment configs: the pydantic models of a YAML file (`experiment`), pydantic's errors as a config's
messages (`validation`), and reading YAML and JSON from outside safely (`yamlio`, `jsonio`). The field types
plugins share (`ConfigPath`, `SecretRef`, `SearchConfig`, …) are contracts (`core.contracts.fields`).

Imports `core.models` (to check the model names a config uses), `core.measures`, `core.contracts` and
`core.errors`."""
