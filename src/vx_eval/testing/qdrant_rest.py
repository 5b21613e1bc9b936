"""Qdrant's REST API on 127.0.0.1, answered by qdrant-client's local mode, for testing the `url:` path.

No Qdrant server binary can be had where the tests run, so `QdrantRest` serves the part of the REST API
the Qdrant plugin calls (collections, payload indexes, upserts, retrieve, scroll, query) over one in-memory
local-mode client. Request bodies are parsed with qdrant-client's own REST models and answers serialised
from the local client's, so the plugin's HTTP client sees the shapes a server sends; put a `FaultProxy` in
front to see every call survive a flaky network::

    with QdrantRest() as server:
        ...  # a Qdrant target with url: server.url

It is a protocol double, not a server: one lock serialises every call, and scores are local mode's.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from vx_eval.core.optional import on_first_use

_qdrant_client = on_first_use("qdrant_client", "qdrant")
models = on_first_use("qdrant_client.http.models", "qdrant")

COLLECTION = r"/collections/(?P<name>[^/]+)"


class QdrantRest:
    """Serves the REST calls the Qdrant plugin makes over `qdrant_client.QdrantClient(':memory:')`."""

    def __init__(self) -> None:

        self.client = _qdrant_client.QdrantClient(location=":memory:")
        self.lock = threading.Lock()
        self.routes: list[tuple[str, re.Pattern[str], Callable[[str, Any], Any]]] = [
            ("GET", re.compile(r"/"), lambda name, body: {"title": "qdrant (vx-eval double)", "version": "1.15.0"}),
            ("GET", re.compile(COLLECTION + "/exists"), self._exists),
            ("GET", re.compile(COLLECTION), lambda name, body: self.client.get_collection(name)),
            ("DELETE", re.compile(COLLECTION), lambda name, body: self.client.delete_collection(name)),
            ("PUT", re.compile(COLLECTION), self._create),
            ("PATCH", re.compile(COLLECTION), self._update),
            ("PUT", re.compile(COLLECTION + "/index"), lambda name, body: {"operation_id": 0, "status": "completed"}),
            ("PUT", re.compile(COLLECTION + "/points"), self._upsert),
            ("POST", re.compile(COLLECTION + "/points"), self._retrieve),
            ("POST", re.compile(COLLECTION + "/points/scroll"), self._scroll),
            ("POST", re.compile(COLLECTION + "/points/query"), self._query),
        ]
        rest = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return None

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, answer = rest.answer(self.command, urlsplit(self.path).path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, method: str, path: str, body: Any) -> tuple[int, dict[str, Any]]:
        for verb, pattern, handle in self.routes:
            found = pattern.fullmatch(path)
            if verb == method and found:
                try:
                    with self.lock:
                        result = handle(found.groupdict().get("name", ""), body)
                except Exception as e:  # a request the double (or local mode) cannot take: the server's 400
                    return 400, {"status": {"error": f"{type(e).__name__}: {e}"}, "time": 0.0}
                return 200, {"result": _plain(result), "status": "ok", "time": 0.0}
        return 404, {"status": {"error": f"{method} {path} is not served by this double"}, "time": 0.0}

    def _exists(self, name: str, body: Any) -> dict[str, bool]:
        return {"exists": self.client.collection_exists(name)}

    def _create(self, name: str, body: Any) -> bool:

        request = models.CreateCollection.model_validate(body)
        return self.client.create_collection(
            name,
            vectors_config=request.vectors or {},
            sparse_vectors_config=request.sparse_vectors,
            metadata=request.metadata,
        )

    def _update(self, name: str, body: Any) -> bool:

        return self.client.update_collection(name, metadata=models.UpdateCollection.model_validate(body).metadata)

    def _upsert(self, name: str, body: Any) -> Any:

        return self.client.upsert(name, points=models.PointsList.model_validate(body).points, wait=True)

    def _retrieve(self, name: str, body: Any) -> Any:

        request = models.PointRequest.model_validate(body)
        return self.client.retrieve(name, ids=request.ids, with_payload=request.with_payload or True)

    def _scroll(self, name: str, body: Any) -> dict[str, Any]:

        request = models.ScrollRequest.model_validate(body)
        points, offset = self.client.scroll(
            name,
            scroll_filter=request.filter,
            limit=request.limit or 10,
            offset=request.offset,
            with_payload=request.with_payload if request.with_payload is not None else True,
            with_vectors=request.with_vector or False,
        )
        return {"points": points, "next_page_offset": offset}

    def _query(self, name: str, body: Any) -> Any:

        request = models.QueryRequest.model_validate(body)
        return self.client.query_points(
            name,
            query=request.query,
            using=request.using,
            prefetch=request.prefetch,
            query_filter=request.filter,
            search_params=request.params,
            limit=request.limit or 10,
            with_payload=request.with_payload if request.with_payload is not None else False,
        )

    def __enter__(self) -> QdrantRest:
        self.thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.client.close()


def _plain(value: Any) -> Any:
    """Local mode's answers (pydantic models, lists, tuples) as the JSON a server sends."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
