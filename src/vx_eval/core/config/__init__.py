"""Experiment configs: the pydantic models of a YAML file (`experiment`), the field types they share
(`fields`), pydantic's errors as a config's messages (`validation`), and reading YAML and JSON from outside
safely (`yamlio`, `jsonio`).

Imports `core.golden`, `core.measures`, `core.models` and `core.run` (to check the names a config
uses) and `core.errors`."""
