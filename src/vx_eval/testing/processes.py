"""Servers for tests: started on 127.0.0.1 in a process group of their own, stopped by their PID, and never
left running when the test process dies.

A server started with `start_server` gets, on Linux, ``PR_SET_PDEATHSIG``: the kernel sends it SIGTERM the
moment the process that started it ends, however it ends (a segmentation fault or SIGKILL included), so a
crashed test run leaves nothing listening. `Server.stop` ends the whole group (the server and anything it
started), politely first::

    with start_server(["moto_server", "-H", "127.0.0.1", "-p", str(port)], port=port, what="moto") as server:
        ...  # server.url is http://127.0.0.1:<port>
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from vx_eval._processes import child_setup as _child_setup


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """A server process started by `start_server`; `url` is ``http://127.0.0.1:<port>``."""

    process: subprocess.Popen[Any]
    port: int | None
    what: str
    grace: float = 5.0
    """Seconds `stop` waits after SIGTERM before SIGKILL."""

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """SIGTERM to the server's process group, SIGKILL after `grace` seconds; waits for it to end."""
        grace = self.grace
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=grace)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)  # anything the server left behind in its group

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def wait_for_port(port: int, process: subprocess.Popen[Any], what: str, seconds: float = 60) -> None:
    """Until something listens on 127.0.0.1:`port`; a clear error if `process` ends first or time runs out."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited at start (code {process.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {seconds} s")


def start_server(
    argv: Sequence[str | Path],
    *,
    port: int | None,
    what: str,
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    user: str | None = None,
    stdout: int | IO[Any] | None = subprocess.DEVNULL,
    stderr: int | IO[Any] | None = subprocess.DEVNULL,
    seconds: float = 60,
    grace: float = 5.0,
) -> Server:
    """Start `argv` and wait until it listens on 127.0.0.1:`port` (not at all when `port` is None: a worker
    that only connects out). `user` runs it as that account (for servers that refuse root, PostgreSQL's);
    the server is stopped if it fails to start. `grace`: see `Server.grace`."""
    ids = None
    if user is not None:
        # lazy: pwd exists on POSIX only
        import pwd

        entry = pwd.getpwnam(user)
        ids = (entry.pw_uid, entry.pw_gid)
    process = subprocess.Popen(
        [str(a) for a in argv],
        env=dict(env) if env is not None else None,
        cwd=cwd,
        stdout=stdout,
        stderr=stderr,
        stdin=subprocess.DEVNULL,
        preexec_fn=_child_setup(os.getpid(), ids),  # only setsid, prctl and setuid: no locks
    )
    server = Server(process, port, what, grace)
    if port is None:
        return server
    try:
        wait_for_port(port, process, what, seconds)
    except BaseException:
        server.stop()
        raise
    return server
