"""A flaky network on 127.0.0.1, for testing that remote plugins survive faults in every call they make.

`FaultProxy` forwards HTTP to a real (or recording) server and, for a share of the requests chosen with a
seed, answers 429 (with a ``Retry-After`` where `retry_after` is set), 500 or 503, waits past the client's
timeout, or drops the connection without an answer. At
most `burst` requests in a row are faulted, so a client that retries as often survives every fault; a
`doomed` predicate makes some requests fail every time (a question the service cannot answer) with
`doomed_answer` (status, body; or a function of the request's headers giving them, for a server that
echoes the request back), to see them recorded as failed rather than crash the run. It counts what
it did, so a test can bound the retries::

    with FaultProxy(upstream, rate=0.2, delay=1.5) as proxy:
        ...  # point the plugin at proxy.url, with a timeout under 1.5 s
        assert proxy.faults["drop"] > 0 and proxy.requests <= bound

`FaultProxy.latency(upstream, 0.05)` delays every request by 50 ms instead: a remote engine's round trip,
for measuring how executors overlap searches.
"""

from __future__ import annotations

import http.client
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit

KINDS = ("429", "500", "503", "delay", "drop")
Answer = tuple[int, bytes]
HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade", "content-length"}


class _Server(ThreadingHTTPServer):
    request_queue_size = 128  # many callers at once: the default backlog of 5 overflows and stalls them


class FaultProxy:
    """Forwards to `upstream` (``http://127.0.0.1:PORT``), faulting a seeded share of the requests."""

    def __init__(
        self,
        upstream: str,
        *,
        rate: float = 0.2,
        seed: int = 0,
        kinds: tuple[str, ...] = KINDS,
        delay: float = 1.5,
        burst: int = 3,
        doomed: Callable[[str, str, bytes], bool] | None = None,
        doomed_answer: Answer | Callable[[dict[str, str]], Answer] = (503, b'{"error": "injected fault"}'),
        retry_after: float | None = None,
    ) -> None:
        self.upstream = urlsplit(upstream)
        self.rate, self.kinds, self.delay, self.burst = rate, kinds, delay, burst
        self.doomed, self.doomed_answer, self.retry_after = doomed, doomed_answer, retry_after
        self.random = random.Random(seed)
        self.lock = threading.Lock()
        self.requests = 0
        self.faults: Counter[str] = Counter()
        self._row = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # quiet
                return None

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fault = proxy._choose(self.command, self.path, body)
                if fault == "drop":
                    self.close_connection = True
                    self.connection.close()
                    return
                if fault == "doomed":
                    given = proxy.doomed_answer
                    answer = given(dict(self.headers)) if callable(given) else given
                    self._answer(*answer, {"Content-Type": "application/json"})
                    return
                if fault in ("429", "500", "503"):
                    headers = {"Content-Type": "application/json"}
                    if fault == "429" and proxy.retry_after is not None:
                        headers["Retry-After"] = f"{proxy.retry_after:g}"
                    self._answer(int(fault), b'{"error": "injected fault"}', headers)
                    return
                if fault == "delay":
                    time.sleep(proxy.delay)
                status, headers, data = proxy._forward(self.command, self.path, dict(self.headers), body)
                self._answer(status, data, headers)

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout): fine
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = _handle

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @classmethod
    def latency(cls, upstream: str, seconds: float) -> FaultProxy:
        """A proxy that delays every request by `seconds` and faults none."""
        return cls(upstream, rate=1.0, kinds=("delay",), delay=seconds, burst=1 << 62)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def _choose(self, method: str, path: str, body: bytes) -> str | None:
        with self.lock:
            self.requests += 1
            if self.doomed is not None and self.doomed(method, path, body):
                self.faults["doomed"] += 1
                return "doomed"
            if self._row < self.burst and self.random.random() < self.rate:
                self._row += 1
                kind = self.random.choice(self.kinds)
                self.faults[kind] += 1
                return kind
            self._row = 0
            return None

    def _forward(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, str], bytes]:
        host = self.upstream.hostname or "127.0.0.1"
        connection = http.client.HTTPConnection(host, self.upstream.port, timeout=60)
        try:
            sent = {k: v for k, v in headers.items() if k.lower() not in HOP | {"host"}}
            connection.request(method, path, body=body or None, headers=sent)
            response = connection.getresponse()
            data = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP}
            return response.status, kept, data
        finally:
            connection.close()

    def __enter__(self) -> FaultProxy:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()
