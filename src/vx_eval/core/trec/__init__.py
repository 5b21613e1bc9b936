"""trec_eval's command line (`vx-eval eval`): TREC qrels and runs read as byte columns (`columns`, `files`),
big runs streamed (`stream`), trec_eval's names, sets and order (`names`), its output and z-scores (`output`),
preference judgements (`prefs`) and judgement groups (`groups`).

Imports `core.measures`, `core.golden` (a golden file read as qrels) and `core.errors` only (an
import-linter contract in `pyproject.toml`)."""
