"""The Python API: what the command line does, as functions returning data."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from vx_eval.core.config import GoldenSource, load_config
from vx_eval.core.errors import GoldenError
from vx_eval.core.golden import GoldenSet, Question, dump_rows, question_row
from vx_eval.core.plugins import load_plugins
from vx_eval.core.run import RunOptions, RunResult, run_experiment
from vx_eval.core.sources import read_golden as _read_golden
from vx_eval.core.stores import Fetcher, Stores


def evaluate(config: str | Path, **options: Any) -> RunResult:
    """Run the experiment in `config` (``vx-eval run``); options as `RunOptions` (save_to, only, skip, …)."""
    plugins = load_plugins()
    return run_experiment(load_config(config, plugins), plugins, RunOptions(**options))


def read_golden(location: str | GoldenSource, *, fetcher: Fetcher | None = None) -> GoldenSet:
    """Golden questions from a path, ``s3://…``, a Blob address or a BEIR folder, with sha256 and counts."""
    return _read_golden(
        location if isinstance(location, GoldenSource) else str(location),
        Stores(load_plugins(), fetcher=fetcher),
    )


def save_golden(rows: Iterable[Question | Mapping[str, Any]], location: str | Path, *, overwrite: bool = False) -> str:
    """Write golden rows (questions or row mappings) as JSONL, atomically; never over a file unless told."""
    stores = Stores(load_plugins())
    target = str(location)
    if not overwrite and stores.exists(target):
        raise GoldenError(f"{target} exists; pass overwrite=True to replace it")
    data = dump_rows(question_row(r) if isinstance(r, Question) else r for r in rows)
    stores.write(target, data)
    return target
