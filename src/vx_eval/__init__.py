"""vx-eval: evaluate every search setup on your own golden questions.

From Python: ``vx_eval.evaluate({"mine": search, "Local": {"engine": "sqlite", ...}}, "golden.jsonl")`` gives
the typed `Report` (``report.table()``, ``report.to_pandas()``, ``report.picks``). Everything here loads on
first use, so the command line starts without pluggy, pydantic or numpy.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "Hit",
    "MissingDocumentsWarning",
    "Question",
    "Report",
    "Retriever",
    "Target",
    "__version__",
    "embed_corpus",
    "evaluate",
    "export_trec",
    "golden_template",
    "hookimpl",
    "load_model",
    "load_report",
    "open_engine",
    "read_golden",
    "rescore",
    "save_questions",
    "write_golden",
]

_LAZY = {
    "hookimpl": "vx_eval.core.hookspecs",
    "Hit": "vx_eval.core.contracts.engine",
    "Question": "vx_eval.python.questions",
    "Target": "vx_eval.python.questions",
    "save_questions": "vx_eval.python.questions",
    "read_golden": "vx_eval.python.questions",
    "golden_template": "vx_eval.python.questions",
    "write_golden": "vx_eval.python.questions",
    "Report": "vx_eval.core.report.schema",
    "Retriever": "vx_eval.python.evaluation",
    "MissingDocumentsWarning": "vx_eval.python.evaluation",
    "evaluate": "vx_eval.python.evaluation",
    "embed_corpus": "vx_eval.python.evaluation",
    "load_model": "vx_eval.python.evaluation",
    "load_report": "vx_eval.python.evaluation",
    "open_engine": "vx_eval.python.evaluation",
    "rescore": "vx_eval.python.evaluation",
    "export_trec": "vx_eval.python.evaluation",
}


def __getattr__(name: str) -> Any:
    """The public names on first use; `__version__` from the package's metadata."""
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    if name == "__version__":
        # lazy: importlib.metadata takes 20 ms to load; only `--version` and the report ask
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("vx-eval")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0.0.0"
    raise AttributeError(f"module 'vx_eval' has no attribute {name!r}")
