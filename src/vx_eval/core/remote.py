"""One policy for every call a remote engine plugin makes to its service, not only searches.

Each call has a timeout (the client's, from the target's ``timeout`` option), is tried again after a
transient failure (429, 502-504, a timeout, a dropped connection, and a 500 where the call is idempotent, as
searches, reads, writes by id and creates are) at most ``retries`` more times with exponential backoff, or
after the wait a 429's or 503's ``Retry-After`` asks for where that is longer, and ends, if it still fails,
in one `EngineError` naming the target, the address and what was being done: refused credentials
(401/403) at once and never retried, an unreachable service in one line, anything else the service
answered in its own words. Only the client library's own exceptions are turned into messages; a bug in
vx-eval stays a bug, with its traceback.

Creating an index (or a collection, a pipeline) is not idempotent: a create whose answer was lost to a
timeout may have happened. `create` treats "already exists" after such a retry as the success it is.

Every policy adds what its calls did to one tally per target (`tally`): calls (tries included), tries after
a failure, and calls that failed after every try; a run reads it into its report.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from vx_eval.core.errors import EngineError, service_text

T = TypeVar("T")

Classifier = Callable[[BaseException], bool]


def _never(exc: BaseException) -> bool:
    return False


_TALLY: dict[str, Counter[str]] = {}
_TALLY_LOCK = threading.Lock()


def tally() -> dict[str, dict[str, int]]:
    """Per target, what every policy's calls did in this process so far: ``calls``, ``retried``, ``failed``
    (a run takes the difference across itself)."""
    with _TALLY_LOCK:
        return {target: dict(counts) for target, counts in _TALLY.items()}


def tally_since(before: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Per target, what its calls did since `before` (a `tally` taken earlier); targets with no call left out."""
    now = tally()
    since = {t: {k: n - before.get(t, {}).get(k, 0) for k, n in counts.items()} for t, counts in now.items()}
    return {t: counts for t, counts in since.items() if any(counts.values())}


def _headers_of(exc: BaseException) -> Any:
    """The response headers a client library's exception carries, wherever it keeps them."""
    for holder in (exc, getattr(exc, "response", None), getattr(exc, "meta", None)):
        headers = getattr(holder, "headers", None)
        if headers is not None:
            return headers
    return None


def retry_after_of(exc: BaseException) -> float | None:
    """Seconds a 429's or 503's ``Retry-After`` asks for (a number, or an HTTP date), found on the exception
    (`retry_after`, as a plugin's connection sets it) or on its response's headers; None where none was sent."""
    value = getattr(exc, "retry_after", None)
    if value is None:
        value = getattr(exc, "retry_after_s", None)  # qdrant-client's ResourceExhaustedResponse
    if value is None:
        headers = _headers_of(exc)
        try:
            value = headers.get("retry-after") or headers.get("Retry-After") if headers is not None else None
        except (AttributeError, TypeError):
            value = None
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except (TypeError, ValueError):
        pass
    try:
        return max((parsedate_to_datetime(str(value)).timestamp() - time.time()), 0.0)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass
class RemotePolicy:
    """How one remote target calls its service (see the module's docstring)."""

    target: str
    where: str
    """The address people read: a URL without credentials, or a path."""
    name: str = ""
    """The target's name, where `target` words it otherwise ("target X"): what its calls are tallied under."""
    retries: int = 3
    errors: tuple[type[BaseException], ...] = (OSError,)
    """The client library's exception classes: only these become messages."""
    transient: Classifier = _never
    refused: Classifier = _never
    unreachable: Classifier = _never
    already_exists: Classifier = _never
    status: Callable[[BaseException], object] = field(default=lambda exc: getattr(exc, "status_code", None))
    server_error: Classifier | None = None
    """A failure the service answered with a 500 (an error of its own, often passing): retried where the call
    is idempotent. None: the status (`status`) is 500-599."""
    retry_after: Callable[[BaseException], float | None] = retry_after_of
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

    def __call__(
        self,
        what: str,
        call: Callable[[], T],
        *,
        expected: tuple[type[BaseException], ...] = (),
        idempotent: bool = True,
    ) -> T:
        """`call()`, under the policy; `what` says in words what it does ("creating index x"). Errors of the
        `expected` classes (a 404 the caller handles) are raised as they are, never retried; a call that must
        not happen twice (`idempotent` False) is not tried again after a 500."""
        return self._run(what, call, create=False, expected=expected, idempotent=idempotent)

    def create(self, what: str, call: Callable[[], T]) -> T | None:
        """A create that may be retried: "already exists" after a retried attempt is success (None)."""
        return self._run(what, call, create=True, expected=(), idempotent=True)

    def _count(self, what: str) -> None:
        with _TALLY_LOCK:
            _TALLY.setdefault(self.name or self.target, Counter())[what] += 1

    def _is_server_error(self, exc: BaseException) -> bool:
        if self.server_error is not None:
            return self.server_error(exc)
        status = self.status(exc)
        return isinstance(status, int) and 500 <= status <= 599

    def _run(
        self,
        what: str,
        call: Callable[[], T],
        *,
        create: bool,
        expected: tuple[type[BaseException], ...],
        idempotent: bool,
    ) -> T:
        try:
            return self._tries(what, call, create=create, expected=expected, idempotent=idempotent)
        except EngineError:
            self._count("failed")
            raise

    def _tries(
        self,
        what: str,
        call: Callable[[], T],
        *,
        create: bool,
        expected: tuple[type[BaseException], ...],
        idempotent: bool,
    ) -> T:
        wait, retried = self.backoff, False
        for attempt in range(self.retries + 1):
            with self._counting:
                self.calls += 1
            self._count("calls")
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
                again = self.transient(exc) or self.unreachable(exc) or (idempotent and self._is_server_error(exc))
                if not again or last:
                    raise self._error(what, exc, attempt + 1) from None
                retried = True
                with self._counting:
                    self.retried += 1
                self._count("retried")
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


class RateLimit:
    """At most `rate` starts a second (a token bucket holding one second's worth), shared by threads."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.lock = threading.Lock()
        self.tokens = rate or 0.0
        self.stamp = time.monotonic()

    def wait(self) -> None:
        if not self.rate:
            return
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.rate, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                delay = (1 - self.tokens) / self.rate
            time.sleep(delay)
