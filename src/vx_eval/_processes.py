"""Internal (no contract): child processes that never outlive the process that started them: a process group
of their own (so they are stopped as a group, by PID) and, on Linux, ``PR_SET_PDEATHSIG``, so the kernel stops
them the moment their parent ends however it ends. The server's runs and the tests' servers are started so."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from collections.abc import Callable

_PR_SET_PDEATHSIG = 1


def child_setup(parent: int, user: tuple[int, int] | None) -> Callable[[], None]:
    """What the child runs between fork and exec: a group of its own, death with its parent, a user."""

    def setup() -> None:
        os.setsid()
        if user is not None:  # first: changing the user clears the parent-death signal
            uid, gid = user
            os.setgid(gid)
            os.setgroups([gid])
            os.setuid(uid)
        if sys.platform.startswith("linux"):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before prctl took hold
                os._exit(1)

    return setup
