"""The store role: a plugin that reads and writes bytes at locations (`Store`), and the failures every store
tells apart (`StoreNotFound`, `StoreDenied`, `StoreFull`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar, Protocol

from vx_eval.core.errors import StoreError


class StoreNotFound(StoreError):
    """Nothing is at that location."""


class StoreDenied(StoreError):
    """The location exists (or may) but the credentials in use may not read or write it."""


class StoreFull(StoreError):
    """Nothing more can be written there: no space left on the device, a quota reached, or a read-only file
    system. What was written before is whole; free space (or make it writable) and go on."""


class StoreBusy(StoreError):
    """Others kept changing what is at a location while this change was tried, too often to go on: nothing
    of this change was written; try it again."""


Change = Callable[[bytes | None], bytes]
"""What a read-modify-write makes of the bytes at a location (None where nothing is there yet)."""


class Store(Protocol):
    """A store plugin: bytes at locations it `handles`, written atomically."""

    name: ClassVar[str]

    def handles(self, location: str) -> bool:
        """Whether this store reads and writes `location` (a classmethod where settings do not matter)."""
        ...

    def read(self, location: str) -> bytes: ...

    def write(self, location: str, data: bytes) -> None: ...

    def exists(self, location: str) -> bool: ...

    def list(self, prefix: str) -> list[str]: ...

    def delete(self, location: str) -> None:
        """Remove what is at `location` (nothing there is no error). Optional: a store without it keeps
        everything, and vx-eval never needs it to be correct (only tidy)."""
        ...

    def update(self, location: str, change: Change) -> None:
        """Replace what is at `location` with `change` of it, as one step no other writer can come between
        (a lock, or a write on condition that the object is unchanged, tried again while it changed): so
        writers appending at once never lose one another's lines. `change` may be called more than once.
        Optional: without it, vx-eval serialises updates within its own process only."""
        ...

    def inside(self, root: str, location: str) -> bool:
        """Whether `location` really lies below `root` (a link may lead out of it). Optional: stores
        without links (object stores) need not have it."""
        ...


class Fetcher(Protocol):
    """Any object that reads a location for the caller, around a client the caller built."""

    def fetch(self, uri: str) -> bytes: ...
