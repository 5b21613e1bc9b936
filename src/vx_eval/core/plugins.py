"""The plugin manager: loads every `vx_eval` entry point (built-ins included) and collects the registries."""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pluggy

from vx_eval.core import hookspecs
from vx_eval.core.contracts.registry import DISABLE_ENV, Registry
from vx_eval.core.errors import PluginError, did_you_mean

if TYPE_CHECKING:
    from vx_eval.core.contracts.endpoints import Provider
    from vx_eval.core.contracts.engine import Adapter, Engine, SetupProvider
    from vx_eval.core.contracts.judge import Judge
    from vx_eval.core.contracts.models import ModelPlugin
    from vx_eval.core.contracts.store import Store
    from vx_eval.core.contracts.writer import QuestionWriter


@dataclass
class Plugins:
    """Everything the loaded plugins registered."""

    manager: pluggy.PluginManager
    engines: Registry[Engine[Any]] = field(default_factory=lambda: Registry("engine"))
    setups: Registry[SetupProvider] = field(default_factory=lambda: Registry("setup"))
    stores: Registry[Store] = field(default_factory=lambda: Registry("store"))
    writers: Registry[QuestionWriter] = field(default_factory=lambda: Registry("writer"))
    judges: Registry[Judge] = field(default_factory=lambda: Registry("judge"))
    models: Registry[ModelPlugin] = field(default_factory=lambda: Registry("model"))
    adapters: Registry[Adapter] = field(default_factory=lambda: Registry("adapter"))
    providers: Registry[Provider] = field(default_factory=lambda: Registry("model provider"))

    def distributions(self) -> list[dict[str, Any]]:
        """One row per loaded plugin: its name, the distribution that ships it and its version."""
        rows = []
        for name, module in self.manager.list_name_plugin():
            dist = next((d for p, d in self.manager.list_plugin_distinfo() if p is module), None)
            rows.append(
                {
                    "name": name,
                    "module": getattr(module, "__name__", repr(module)),
                    "package": dist.metadata["name"] if dist else None,
                    "version": dist.version if dist else None,
                }
            )
        return sorted(rows, key=lambda r: r["name"])


def disabled_plugins() -> set[str]:
    """Entry-point names listed in ``VX_EVAL_DISABLE_PLUGINS`` (comma- or space-separated)."""
    raw = os.environ.get(DISABLE_ENV, "")
    return {part.strip() for part in raw.replace(",", " ").split() if part.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """A new plugin manager with the hookspecs and every enabled ``vx_eval`` entry point loaded."""
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in disabled_plugins():
        pm.set_blocked(name)
    known = {ep.name for ep in importlib.metadata.entry_points(group=hookspecs.PROJECT)}
    for name in disabled_plugins() - known:
        raise PluginError(f"{DISABLE_ENV} names '{name}', which is not an installed plugin{did_you_mean(name, known)}")
    try:
        pm.load_setuptools_entrypoints(hookspecs.PROJECT)
    except ImportError as exc:
        raise PluginError(f"a vx_eval plugin failed to import: {exc}") from exc
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"a plugin implements a hook vx-eval does not have: {exc}") from exc
    return pm


def load_plugins(pm: pluggy.PluginManager | None = None) -> Plugins:
    """Call every registration hook once and return the filled registries."""
    plugins = Plugins(manager=pm or get_plugin_manager())
    hook = plugins.manager.hook
    hook.vx_eval_register_engines(register=plugins.engines)
    hook.vx_eval_register_setups(register=plugins.setups)
    hook.vx_eval_register_stores(register=plugins.stores)
    hook.vx_eval_register_writers(register=plugins.writers)
    hook.vx_eval_register_judges(register=plugins.judges)
    hook.vx_eval_register_models(register=plugins.models)
    hook.vx_eval_register_adapters(register=plugins.adapters)
    hook.vx_eval_register_providers(register=plugins.providers)
    return plugins
