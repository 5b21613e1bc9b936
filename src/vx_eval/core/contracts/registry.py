"""What every registration hook receives: a `Registry` of one role's plugin classes, by their stable name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Generic, TypeVar

from vx_eval.core.errors import PluginError, did_you_mean

DISABLE_ENV = "VX_EVAL_DISABLE_PLUGINS"


T = TypeVar("T")


class Registry(Generic[T]):
    """Plugin classes of one role, by their stable ``name``; a duplicate name is an error. Typed by the
    role's class (`Registry[Engine]` holds engine classes), so `get` gives back what was added."""

    def __init__(self, role: str) -> None:
        self.role = role
        self._items: dict[str, type[T]] = {}

    def add(self, cls: type[T]) -> type[T]:
        name = getattr(cls, "name", None)
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.role} plugin {cls.__module__}.{cls.__qualname__} has no `name`")
        if name in self._items:
            other = self._items[name]
            raise PluginError(
                f"two {self.role} plugins are named '{name}': {other.__module__}.{other.__qualname__} and "
                f"{cls.__module__}.{cls.__qualname__}; uninstall one or disable it with {DISABLE_ENV}"
            )
        self._items[name] = cls
        return cls

    def get(self, name: str, *, where: str = "") -> type[T]:
        try:
            return self._items[name]
        except KeyError:
            known = ", ".join(sorted(self._items)) or "none"
            at = f"{where}: " if where else ""
            raise PluginError(
                f"{at}no {self.role} named '{name}'{did_you_mean(name, self._items)} (installed: {known})"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[type[T]]:
        return iter(self._items.values())

    def __len__(self) -> int:
        return len(self._items)

    def names(self) -> list[str]:
        return sorted(self._items)
