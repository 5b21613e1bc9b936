"""vx-eval: evaluate every search setup on your own golden questions."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from vx_eval.core.hookspecs import hookimpl

try:
    __version__ = version("vx-eval")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__", "hookimpl"]
