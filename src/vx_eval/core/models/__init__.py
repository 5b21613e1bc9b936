"""Models: short names resolved to real models and loaded once (`loading`), served models' endpoints and
prices (`endpoints`) and their calls at run time (`served`), and the keyed cache of what is computed once
(`cache`).

Imports `core.config`, `core.run` (the executor that calls served models concurrently) and `core.errors`."""
