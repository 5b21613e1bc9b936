"""The server's bounds, as `vx-eval serve` takes them (no web framework needed to read them)."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The server's bounds (`vx-eval serve --max-body`, `--max-dataset-rows`, `--max-queued`,
    `--max-queued-per-person`, `--keep-jobs-days`, `--keep-jobs`)."""

    max_body: int = 8 * MIB
    """Bytes in one request body."""
    max_rows: int = 20_000
    """Items in any one array of a JSON body: a dataset's questions."""
    max_queued: int = 200
    """Runs waiting or running at once, from everyone."""
    max_queued_per_person: int = 10
    """Runs waiting or running at once that one person started (with any of their keys or signed in), and
    that one key started."""
    keep_jobs_days: float = 30.0
    """Days a finished run's job files (its status, log and progress) are kept; its report stays in the store."""
    keep_jobs: int = 1000
    """Finished runs whose job files are kept at most (the newest)."""
    head_timeout: float = 10.0
    """Seconds a connection may take to send a request's line and headers (and to send anything at all once
    open): a client that trickles them is answered 408 and closed, so slow clients cannot hold the server's
    connections."""
    body_timeout: float = 30.0
    """Seconds a request's body may take to arrive in all (408 past it)."""


def mib(size: int) -> str:
    return f"{size / MIB:g} MiB" if size >= MIB else f"{size:,} bytes"
