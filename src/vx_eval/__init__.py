"""vx-eval: evaluate every search setup on your own golden questions."""

from __future__ import annotations

from typing import Any

__all__ = ["__version__", "hookimpl"]


def __getattr__(name: str) -> Any:
    """`hookimpl` and `__version__` on first use: the command line starts without pluggy or package
    metadata, which only plugins and reports need."""
    if name == "hookimpl":
        from vx_eval.core.hookspecs import hookimpl

        return hookimpl
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("vx-eval")
        except PackageNotFoundError:  # running from a source tree that was never installed
            return "0.0.0"
    raise AttributeError(f"module 'vx_eval' has no attribute {name!r}")
