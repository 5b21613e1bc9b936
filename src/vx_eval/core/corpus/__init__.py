"""The corpus as every engine indexes it: documents cut into chunks (`text`, `prepare`) and each chunk embedded
once per model, kept by content (`embeddings`), so the embedded engine and every remote one index the same
chunks with the same vectors; what a killed run left behind is swept (`leftovers`). Plugins reach it through
the SDK (`vx_eval.plugin`).

Imports `core.config`, `core.models`, `core.contracts` and `core.errors`."""
