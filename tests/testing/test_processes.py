"""Servers started for tests: stopped by their PID, and gone when the process that started them dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

from vx_eval.testing.processes import free_port, start_server

SERVE = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1"]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:  # a zombie has ended: it only waits to be reaped
        return stat.read().split(") ")[1][0] != "Z"


def wait_until_gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_server_answers_and_is_stopped_by_its_pid(tmp_path):
    port = free_port()
    with start_server([*SERVE, str(port)], port=port, what="http.server", cwd=tmp_path) as server:
        (tmp_path / "hello.txt").write_text("hi")
        with urllib.request.urlopen(f"{server.url}/hello.txt") as response:
            assert response.read() == b"hi"
        pid = server.pid
        assert os.getpgid(pid) == pid  # a process group of its own
    assert wait_until_gone(pid)


def test_a_server_does_not_outlive_a_test_process_killed_with_sigkill(tmp_path):
    port = free_port()
    script = (
        "import sys, time\n"
        "from vx_eval.testing.processes import start_server\n"
        f"server = start_server({[*SERVE, str(port)]!r}, port={port}, what='http.server')\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    pid = int(parent.stdout.readline())
    assert alive(pid)
    parent.send_signal(signal.SIGKILL)  # no finally, no atexit: only the kernel can stop the server now
    parent.wait()
    assert wait_until_gone(pid), f"the server (pid {pid}) outlived the process that started it"


def test_a_server_that_never_listens_is_stopped_with_a_clear_error(tmp_path):
    port = free_port()
    try:
        start_server([sys.executable, "-c", "import time; time.sleep(60)"], port=port, what="sleeper", seconds=1)
    except RuntimeError as exc:
        assert f"sleeper did not listen on 127.0.0.1:{port} within 1 s" in str(exc)
    else:
        raise AssertionError("a server that never listened was taken as started")


def test_postgresql_run_as_another_user_dies_with_the_process_that_started_it(tmp_path):
    """PostgreSQL refuses root, so as root it runs as another account; changing the account clears the
    parent-death signal, which must therefore be set after it (or a killed test leaves PostgreSQL running)."""
    script = (
        "import time\n"
        "from vx_eval.testing.postgres import postgres_server\n"
        "with postgres_server() as pg:\n"
        "    print(pg.server.pid, pg.folder, flush=True)\n"
        "    time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=tmp_path)
    pid, folder = parent.stdout.readline().split()
    assert alive(int(pid))
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    try:
        assert wait_until_gone(int(pid), seconds=20), f"PostgreSQL (pid {pid}) outlived the process that started it"
    finally:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)  # what the killed process could not remove
