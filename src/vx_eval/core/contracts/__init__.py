"""The bottom of the core: what crosses a room's or a plugin's boundary, typed. Every role's Protocol (the
engine and its handle, setup provider, adapter, store, model, model provider, judge, question writer), the
`Registry` each registration hook receives, and the value types rooms hand each other (documents, hits,
queries, golden rows and questions, served-model calls). It imports nothing of vx-eval but `core.errors`;
every other room, the hooks and the plugin SDK (`vx_eval.plugin`) take these types from here."""
