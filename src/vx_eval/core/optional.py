"""Libraries loaded on first use: a module's optional dependencies (an extra's client library) and the slow ones
(torch, pyarrow), declared once at the module's top and imported the first time one of their names is read::

    sql = on_first_use("psycopg.sql", "pgvector")  # then sql.SQL(...) inside a function

Every plugin module is imported when plugins load (each command's start), so importing its client library
there would cost every command the time to load every installed client; declared this way it costs nothing
until the engine is used. A library that is not installed is one clear error naming the extra to install."""

from __future__ import annotations

import importlib
import threading
from types import ModuleType
from typing import Any

from vx_eval.core.errors import PluginError

_LOCK = threading.Lock()


class OnFirstUse:
    """A module, imported the first time one of its names is read (`module` imports it at once)."""

    __slots__ = ("_extra", "_loaded", "_name")

    def __init__(self, name: str, extra: str | None = None) -> None:
        self._name = name
        self._extra = extra
        self._loaded: ModuleType | None = None

    @property
    def module(self) -> ModuleType:
        if self._loaded is None:
            with _LOCK:
                if self._loaded is None:
                    self._loaded = self._import()
        return self._loaded

    def _import(self) -> ModuleType:
        try:
            return importlib.import_module(self._name)
        except ImportError:
            if self._extra is None:
                raise
            raise PluginError(
                f"this needs the Python package behind '{self._name}', which is not installed: "
                f"pip install 'vx-eval[{self._extra}]'"
            ) from None

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.module, attribute)

    def __repr__(self) -> str:
        state = "loaded" if self._loaded is not None else "not loaded yet"
        return f"<module {self._name!r}, on first use ({state})>"


def on_first_use(name: str, extra: str | None = None) -> Any:
    """Module `name`, imported the first time one of its names is read; where it is not installed, a
    `PluginError` naming `extra` (``pip install 'vx-eval[extra]'``); `extra` None for a dependency every
    install has (torch, pyarrow: slow to load, never missing)."""
    return OnFirstUse(name, extra)
