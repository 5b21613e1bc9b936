"""Locations: which store plugin handles a path or URI, and safe joins below a root."""

from __future__ import annotations

import errno
import os
import posixpath
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from vx_eval.core.contracts.fields import is_uri
from vx_eval.core.contracts.store import Change, Fetcher, Store, StoreBusy, StoreDenied, StoreFull, StoreNotFound
from vx_eval.core.errors import StoreError, did_you_mean

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
"""The `OSError` numbers that mean "this place takes no more writes" rather than a bug or a bad path."""


def full_error(exc: OSError, where: str) -> StoreFull | None:
    """A `StoreFull` naming `where` for a full or read-only file system, else None."""
    if exc.errno not in FULL_ERRNOS:
        return None
    why = "it is a read-only file system" if exc.errno == errno.EROFS else "no space left on device"
    return StoreFull(f"{why} at {where}")


def conditional_update(
    location: str,
    read: Callable[[], tuple[bytes | None, str | None]],
    write_if: Callable[[bytes, str | None], bool],
    change: Change,
    attempts: int = 60,
) -> None:
    """A read-modify-write on a store that writes on condition (S3's If-Match, Blob's ETag): `read` gives the
    bytes and their version (None, None where nothing is there), `write_if` writes only where the version is
    still that one (None: only where nothing is there yet) and says whether it did. Tried again, after a
    random wait that grows, while another writer came between; `StoreBusy` after `attempts` tries (about
    half a minute), nothing of this change written."""
    for attempt in range(attempts):
        data, version = read()
        if write_if(change(data), version):
            return
        time.sleep(random.uniform(0, min(0.5, 0.01 * 2 ** min(attempt, 6))))
    raise StoreBusy(f"{location} kept changing while this change was written ({attempts} tries); try again")


def rewrite(store: Store, location: str, change: Change) -> None:
    """`change` of what `store` holds at `location` (None where nothing is there) written back: the step a
    store's `update` takes once no other writer can come between (under a lock)."""
    try:
        data: bytes | None = store.read(location)
    except StoreNotFound:
        data = None
    store.write(location, change(data))


_IN_PROCESS = threading.Lock()
"""Serialises updates on stores that offer no `update` of their own (within this process only)."""


_SAFE_PART = re.compile(r"^[A-Za-z0-9._=+-][A-Za-z0-9._=+@-]*$")


def local_folder(location: str) -> bool:
    """Whether `location` is a folder on this machine (never for a URI, nor for a name too long to be one:
    Python 3.11's `Path.is_dir` raises for that)."""
    try:
        return not is_uri(location) and Path(location).is_dir()
    except OSError:
        return False


def local_file(location: str) -> bool:
    """Whether `location` is a file on this machine (as `local_folder`)."""
    try:
        return not is_uri(location) and Path(location).is_file()
    except OSError:
        return False


def join(base: str, *parts: str) -> str:
    """`base` / parts, where each part is one plain name (no ``..``, no separators): names from outside
    (run ids, file names) can never climb out of the store's root."""
    for part in parts:
        for piece in PurePosixPath(part).parts:
            if piece in ("..", ".") or not _SAFE_PART.match(piece):
                raise StoreError(f"'{part}' is not a plain name below {base}: use letters, digits, '.', '_', '-' only")
    if is_uri(base):
        return posixpath.join(base.rstrip("/"), *parts)
    return os.path.join(base, *parts)


@dataclass
class Stores:
    """Reads and writes any location through the store plugin that handles it (or a caller's fetcher).

    `options` are each store's settings by name (the config's ``stores:`` block): ``{"s3": {"endpoint_url":
    …}}``. Stores are made once and kept, so their clients are too.
    """

    plugins: Plugins
    fetcher: Fetcher | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """Each store's settings by name: its validated `Options`, or a dict validated here."""

    def __post_init__(self) -> None:
        unknown = set(self.options) - set(self.plugins.stores.names())
        if unknown:
            name = sorted(unknown)[0]
            raise StoreError(
                f"stores.{name}: no store plugin is named '{name}'{did_you_mean(name, self.plugins.stores.names())} "
                f"(installed: {', '.join(self.plugins.stores.names())})"
            )
        self._made: dict[str, Store] = {}

    def _store(self, cls: Any) -> Store:
        if cls.name not in self._made:
            given = self.options.get(cls.name)
            if given is None or isinstance(given, dict):  # settings from Python, not from a checked config
                try:
                    given = cls.Options.model_validate(given or {})
                except ValidationError as exc:
                    problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or '(top)'}: {e['msg']}" for e in exc.errors())
                    raise StoreError(f"stores.{cls.name}: {problems}") from None
            self._made[cls.name] = cls(given)
        return self._made[cls.name]

    def store_for(self, location: str) -> Store:
        for cls in self.plugins.stores:
            store = self._store(cls)
            if store.handles(location):
                return store
        scheme = location.split("://", 1)[0] if is_uri(location) else "a local path"
        raise StoreError(
            f"no store plugin handles {location} ({scheme}); installed stores: "
            f"{', '.join(self.plugins.stores.names()) or 'none'} (see `vx-eval plugins`)"
        )

    def read(self, location: str) -> bytes:
        if self.fetcher is not None:
            try:
                return self.fetcher.fetch(location)
            except Exception as exc:  # a caller's fetcher may raise anything: say whose it was
                raise StoreError(f"the fetcher could not read {location}: {exc}") from exc
        return self.store_for(location).read(location)

    def read_below(self, root: str, location: str) -> bytes:
        """`read`, refused where `location` leads out of `root` (a link out of a local store)."""
        store = self.store_for(location)
        inside = getattr(store, "inside", None)
        if self.fetcher is None and inside is not None and not inside(root, location):
            raise StoreDenied(f"{location} leads out of {root} (a link); it is not read")
        return self.read(location)

    def sweep(self, root: str) -> list[str]:
        """Remove what killed writers left below `root`, where its store keeps temporary files (a local
        folder; object stores write whole objects and leave none)."""
        sweep = getattr(self.store_for(root), "sweep", None)
        return sweep(root) if sweep is not None else []

    def list_below(self, root: str, prefix: str) -> list[str]:
        """`list`, without the entries that lead out of `root`."""
        store = self.store_for(prefix)
        inside = getattr(store, "inside", None)
        return [loc for loc in store.list(prefix) if inside is None or inside(root, loc)]

    def write(self, location: str, data: bytes) -> None:
        self.store_for(location).write(location, data)

    def update(self, location: str, change: Change) -> None:
        """Replace what is at `location` with `change` of it (None where nothing is there) as one step: the
        store's own `update` (a lock, or a conditional write) where it has one, else serialised within this
        process."""
        store = self.store_for(location)
        own = getattr(store, "update", None)
        if own is not None:
            own(location, change)
            return
        with _IN_PROCESS:
            rewrite(store, location, change)

    def exists(self, location: str) -> bool:
        return self.store_for(location).exists(location)

    def list(self, prefix: str) -> list[str]:
        return self.store_for(prefix).list(prefix)

    def delete(self, location: str) -> None:
        store = self.store_for(location)
        if hasattr(store, "delete"):
            store.delete(location)
