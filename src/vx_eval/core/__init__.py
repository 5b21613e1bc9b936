"""The small core of vx-eval, in rooms by capability and in layers, top to bottom (import-linter holds them in
CI, `pyproject.toml`; a room imports only the rooms below it):

- `usecases` (a whole run, its plan, judge check, rescore, export, watch) and `trec` (trec_eval's command line);
- `run` (the stages of a run), `judging`, `golden` data, the `report`, the `corpus`, `config`, `models`;
- `stores`, `remote` (the policy for remote calls), the hooks (`plugins`, `hookspecs`), the `measures`;
- `contracts` (every role's Protocol and the value types rooms share) and `errors` at the bottom.

The core never imports a plugin or a view."""
