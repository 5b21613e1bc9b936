"""The local-path store: files on this machine, written atomically (temp file + rename)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import ClassVar

from filelock import FileLock, Timeout
from pydantic import BaseModel, ConfigDict

from vx_eval import hookimpl
from vx_eval.plugin import (
    Change,
    StoreBusy,
    StoreDenied,
    StoreError,
    StoreNotFound,
    full_error,
    is_uri,
    local_folder,
    rewrite,
    sweep,
)

LOCK_WAIT_S = 30.0
"""How long an update waits for another process's (or thread's) lock on the same file before it gives up."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class LocalStore:
    """Paths and ``file://`` URIs on the local file system."""

    name: ClassVar[str] = "local"

    class Options(BaseModel):
        """The local store has no settings."""

        model_config = ConfigDict(extra="forbid", frozen=True)

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or self.Options()

    @classmethod
    def handles(cls, location: str) -> bool:
        return not is_uri(location) or location.startswith("file://")

    @staticmethod
    def _path(location: str) -> Path:
        return Path(location.removeprefix("file://")).expanduser()

    def read(self, location: str) -> bytes:
        path = self._path(location)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise StoreNotFound(f"{path} does not exist") from None
        except IsADirectoryError:
            raise StoreNotFound(f"{path} is a folder, not a file") from None
        except PermissionError:
            raise StoreDenied(f"no permission to read {path}") from None
        except OSError as exc:  # a name too long, a broken link loop, an I/O error
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None

    def write(self, location: str, data: bytes) -> None:
        path = self._path(location)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=path.parent)
        except PermissionError:
            raise StoreDenied(f"no permission to write in {path.parent}") from None
        except OSError as exc:
            failed = full_error(exc, str(path.parent)) or StoreError(f"cannot write {path}: {exc.strerror or exc}")
            raise failed from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; a report is as readable as any file written here
            os.replace(tmp, path)
        except OSError as exc:  # a full disk: the temporary file goes, what was at `path` before stays whole
            Path(tmp).unlink(missing_ok=True)
            full = full_error(exc, str(path.parent))
            if full is None:
                raise
            raise full from None
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def update(self, location: str, change: Change) -> None:
        """Read, change and write `location` holding an exclusive lock on ``.<name>.lock`` beside it (an OS
        lock: threads, processes and server workers alike wait for one another; it goes with a killed
        holder), the write atomic as every write here."""
        path = self._path(location)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            lock = FileLock(path.parent / f".{path.name}.lock", timeout=LOCK_WAIT_S, thread_local=False)
            with lock:
                rewrite(self, location, change)
        except Timeout:
            raise StoreBusy(f"{path} stayed locked by another writer for {LOCK_WAIT_S:.0f} s; try again") from None
        except PermissionError:
            raise StoreDenied(f"no permission to write in {path.parent}") from None

    def exists(self, location: str) -> bool:
        try:
            return self._path(location).exists()
        except OSError:  # a name too long to exist
            return False

    def sweep(self, root: str) -> list[str]:
        """Remove the temporary files killed writers left below `root` (never a live writer's)."""
        return [str(p) for p in sweep(self._path(root), ".*.tmp", recursive=True)]

    def inside(self, root: str, location: str) -> bool:
        """Whether `location`, every link followed, is still below `root` (itself followed)."""
        base = os.path.realpath(self._path(root))
        return os.path.realpath(self._path(location)).startswith(base.rstrip(os.sep) + os.sep)

    def delete(self, location: str) -> None:
        path = self._path(location)
        if local_folder(str(path)):
            return  # only files: a folder is left to whoever made it
        path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            path.parent.rmdir()  # the folder goes too once it is empty

    def list(self, prefix: str) -> list[str]:
        root = self._path(prefix)
        if not local_folder(str(root)):
            return []
        return sorted(str(p) for p in root.iterdir() if not p.name.startswith("."))


@hookimpl
def vx_eval_register_stores(register):
    register.add(LocalStore)
