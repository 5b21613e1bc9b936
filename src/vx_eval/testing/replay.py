"""A recording HTTP server for testing remote engine plugins where no real service runs.

It answers on 127.0.0.1 with responses the test gives (shaped like the service's documentation), and
keeps every request it got, so a test can assert the exact body a plugin sent::

    with Replay() as server:
        server.route("POST", r"/index/_search", {"took": 3, "hits": {"hits": []}})
        ...  # point the client at server.url
        assert server.requests[-1].json == {"size": 10, "query": {...}}

A route may answer with a list of responses (one per call, the last repeated) or a status other than 200,
to test retries and errors.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    """Header names lower-cased."""
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class Route:
    method: str
    pattern: re.Pattern[str]
    responses: list[tuple[int, Any]]
    calls: int = 0
    headers: dict[str, str] = field(default_factory=dict)
    delays: list[float] = field(default_factory=list)
    body: re.Pattern[bytes] | None = None

    def matches(self, method: str, path: str, body: bytes) -> bool:
        return (
            self.method == method
            and self.pattern.fullmatch(path) is not None
            and (self.body is None or self.body.search(body) is not None)
        )

    def next(self) -> tuple[int, Any, float]:
        turn = min(self.calls, len(self.responses) - 1)
        status, body = self.responses[turn]
        delay = self.delays[min(self.calls, len(self.delays) - 1)] if self.delays else 0.0
        self.calls += 1
        return status, body, delay


class Replay:
    """A local HTTP server that records requests and replays the responses routed to it."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.routes: list[Route] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                replay.requests.append(
                    Recorded(
                        self.command,
                        parts.path,
                        parse_qs(parts.query),
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                status, payload, headers = replay._respond(self.command, parts.path, body)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":  # a HEAD answer has headers only
                    self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def route(
        self,
        method: str,
        pattern: str,
        *responses: Any,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delays: list[float] | None = None,
        body_matches: str | None = None,
    ) -> Route:
        """Answer `method` on paths matching `pattern` (a regex, matched in full) with `responses` in turn;
        a response given as ``(status, body)`` sets its own status; `delays` (seconds, in turn, the last
        repeated) hold answers back, to test timeouts; `body_matches` (a regex searched in the request body)
        narrows the route to some requests. Later routes win over earlier ones."""
        answers = [r if isinstance(r, tuple) else (status, r) for r in responses] or [(status, {})]
        route = Route(
            method.upper(),
            re.compile(pattern),
            answers,
            headers=headers or {},
            delays=list(delays or []),
            body=re.compile(body_matches.encode()) if body_matches is not None else None,
        )
        self.routes.insert(0, route)
        return route

    def _respond(self, method: str, path: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        for route in self.routes:
            if route.matches(method, path, body):
                status, body, delay = route.next()
                if delay:
                    time.sleep(delay)
                return status, body, route.headers
        return 404, {"error": f"no route for {method} {path} in this replay"}, {}

    def last(self, method: str, pattern: str) -> Recorded:
        """The last request with this method to a path matching `pattern`."""
        found = [r for r in self.requests if r.method == method and re.fullmatch(pattern, r.path)]
        if not found:
            seen = ", ".join(f"{r.method} {r.path}" for r in self.requests) or "none"
            raise AssertionError(f"no {method} request to {pattern}; requests: {seen}")
        return found[-1]

    def __enter__(self) -> Replay:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
