"""Language models and what is written with them: the chat clients (an OpenAI-compatible endpoint, or SmolLM2 in
process) behind the chat judge and the question writers, the writers' drafting and the checks every draft passes.

Shared machinery, not a plugin: the writer and judge plugins use it, and so do `vx_eval.python.commands` and
the CLI. Like the plugins, it reaches the core only through the SDK (`vx_eval.plugin`); import-linter holds that in CI.
"""
