"""Files a killed process leaves behind: a half-built index (``.docs.db.<pid>.building``) or a report not yet
renamed into place (``.report.json.<pid>.<random>.tmp``).

Whatever writes such a file names it after its process, so a later run can tell a leftover from the file
of a run still going: a file is stale when its process is gone (on this machine) and it has not been
written for a minute, or when nobody wrote it for a day (a process on another machine sharing the
folder, or a reused pid). Stale files are removed at the next run; live ones are never touched.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

QUIET_FOR = 60.0
"""Seconds without a write before a file whose process is gone counts as left behind."""
ABANDONED_AFTER = 24 * 3600.0
"""Seconds without a write after which a file counts as left behind whatever its name says."""

_OWNER = re.compile(r"\.(\d+)(?:\.[A-Za-z0-9_]+)?\.(?:building|tmp)$")


def owned_by_this_process(path: Path, suffix: str) -> Path:
    """Where this process writes the temporary file for `path`: ``.<name>.<pid>.<suffix>`` beside it."""
    return path.with_name(f".{path.name}.{os.getpid()}.{suffix}")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    except OverflowError:  # not a pid at all
        return False
    return True


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether `path` is a leftover of a process that is gone (see the module's rule)."""
    try:
        quiet = (time.time() if now is None else now) - path.stat().st_mtime
    except OSError:
        return False
    if quiet > ABANDONED_AFTER:
        return True
    owner = _OWNER.search(path.name)
    return owner is not None and quiet > QUIET_FOR and not _alive(int(owner.group(1)))


def sweep(folder: Path, pattern: str, *, recursive: bool = False) -> list[Path]:
    """Remove the stale files matching `pattern` (a glob of dot-files) in `folder`; the ones removed."""
    if not folder.is_dir():
        return []
    found = folder.rglob(pattern) if recursive else folder.glob(pattern)
    removed = []
    for path in found:
        if path.is_file() and not path.is_symlink() and is_stale(path):
            try:
                path.unlink()
            except OSError:  # gone already, or not ours to remove: leave it
                continue
            removed.append(path)
    return removed
