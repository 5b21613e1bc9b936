"""One policy for every call a remote engine plugin makes to its service, not only searches.

Each call has a timeout (the client's, from the target's ``timeout`` option), is tried again after a
transient failure (429, 502-504, a timeout, a dropped connection) at most ``retries`` more times with
exponential backoff, and ends, if it still fails, in one `EngineError` naming the target, the address and
what was being done: refused credentials (401/403) at once and never retried, an unreachable service in
one line, anything else the service answered in its own words. Only the client library's own exceptions
are turned into messages; a bug in vx-eval stays a bug, with its traceback.

Creating an index (or a collection, a pipeline) is not idempotent: a create whose answer was lost to a
timeout may have happened. `create` treats "already exists" after such a retry as the success it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from vx_eval.core.errors import EngineError, service_text

T = TypeVar("T")

Classifier = Callable[[BaseException], bool]


def _never(exc: BaseException) -> bool:
    return False


@dataclass
class RemotePolicy:
    """How one remote target calls its service (see the module's docstring)."""

    target: str
    where: str
    """The address people read: a URL without credentials, or a path."""
    retries: int = 3
    errors: tuple[type[BaseException], ...] = (OSError,)
    """The client library's exception classes: only these become messages."""
    transient: Classifier = _never
    refused: Classifier = _never
    unreachable: Classifier = _never
    already_exists: Classifier = _never
    status: Callable[[BaseException], object] = field(default=lambda exc: getattr(exc, "status_code", None))
    retry_after: Callable[[BaseException], float | None] = field(default=lambda exc: None)
    """Seconds the service asked to wait before the next try (a 429's Retry-After): waited, at most
    `max_retry_after`, instead of the backoff when longer."""
    max_retry_after: float = 60.0
    credentials: str = "the credentials"
    """What was refused, in words: "the key named by api_key (env X)"."""
    check: str = "check the key or password the target names"
    backoff: float = 0.5
    """Seconds before the first retry; doubled each time, at most `max_wait`."""
    max_wait: float = 8.0
    sleep: Callable[[float], None] = time.sleep
    calls: int = 0
    """Calls made (tries included): a bound tests can read."""
    retried: int = 0
    """Tries after a transient failure."""
    _counting: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False, compare=False)
    """Calls run in many threads at once (concurrent embedding, the thread executor): counts are locked."""

    def __call__(self, what: str, call: Callable[[], T], *, expected: tuple[type[BaseException], ...] = ()) -> T:
        """`call()`, under the policy; `what` says in words what it does ("creating index x"). Errors of the
        `expected` classes (a 404 the caller handles) are raised as they are, never retried."""
        return self._run(what, call, create=False, expected=expected)

    def create(self, what: str, call: Callable[[], T]) -> T | None:
        """A create that may be retried: "already exists" after a retried attempt is success (None)."""
        return self._run(what, call, create=True, expected=())

    def _run(self, what: str, call: Callable[[], T], *, create: bool, expected: tuple[type[BaseException], ...]) -> T:
        wait, retried = self.backoff, False
        for attempt in range(self.retries + 1):
            with self._counting:
                self.calls += 1
            try:
                return call()
            except expected:
                raise
            except self.errors as exc:
                if create and retried and self.already_exists(exc):
                    return None  # type: ignore[return-value]  # our own earlier try made it
                if self.refused(exc):
                    raise EngineError(
                        f"{self.target}: {self.where} refused {self.credentials} ({self.status(exc)}) while {what}: "
                        f"{self.check}"
                    ) from None
                last = attempt == self.retries
                if not (self.transient(exc) or self.unreachable(exc)) or last:
                    raise self._error(what, exc, attempt + 1) from None
                retried = True
                with self._counting:
                    self.retried += 1
                asked = self.retry_after(exc)
                self.sleep(min(max(wait, asked), self.max_retry_after) if asked is not None else wait)
                wait = min(wait * 2, self.max_wait)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _error(self, what: str, exc: BaseException, tries: int) -> EngineError:
        reason = service_text(exc).splitlines()[0]
        tried = f" after {tries} tries" if tries > 1 else ""
        if self.unreachable(exc):
            return EngineError(
                f"{self.target}: cannot reach {self.where}{tried} while {what} ({reason}); is the service running "
                "and the address right?"
            )
        return EngineError(f"{self.target}: {self.where} failed{tried} while {what}: {reason}")
