"""A stand-in for hosted embedding and rerank APIs, serving real models on 127.0.0.1, for tests where no
hosted service can be reached.

It speaks the documented wire formats of OpenAI's ``POST /v1/embeddings`` (float or base64 vectors, with
``usage``), Voyage's ``/v1/embeddings`` and ``/v1/rerank``, Cohere's ``/v2/embed`` and ``/v2/rerank``, and the
Cohere-shaped ``/v1/rerank`` (``/rerank``) that Infinity, Jina and TEI's proxies answer, and OpenAI's
``/v1/chat/completions`` as a grader (`GRADER_MODEL`: a judge's answer, one digit), and computes with the
packaged models vx-eval runs in process (``all-MiniLM-L6-v2`` and ``ms-marco-MiniLM-L-6-v2``), so a setup
through it must score exactly as the in-process one::

    with ServedStandIn(key="sk-test") as server:
        ...  # an endpoint with base_url: server.url + "/v1", api_key: {env: ...}
        assert server.texts["embed"] == 0

It counts what it was sent (`texts`, per route kind) and how many requests it answered at once, can wait
`latency` seconds before each answer (a service across a network), answer a share of requests with a 429 and
a Retry-After (`storm`), or refuse a wrong key with a 401. It runs in a thread of the test's process, so it never
outlives it.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from vx_eval.python.evaluation import load_model

DENSE_MODEL = "all-MiniLM-L6-v2"
RERANK_MODEL = "ms-marco-MiniLM-L-6-v2"
GRADER_MODEL = "stand-in-grader"
"""The chat model that answers ``/v1/chat/completions``: a grade 0–3 for the ``<question>`` and ``<passage>``
of the last message, the reranker's logit cut at the cross-encoder judge's default points."""
GRADER_CUTS = (-1.0, 5.7, 7.2)


class _Listening(ThreadingHTTPServer):
    """A backlog of connections as a service's: with the default of 5, more requests than that opening at
    once (each request opens its own connection here) wait out a second of TCP retry, which is not latency
    any real service adds."""

    request_queue_size = 128
    daemon_threads = True


class ServedStandIn:
    """The stand-in server (see the module's docstring)."""

    def __init__(
        self, key: str | None = None, storm: float = 0.0, retry_after: float = 0.01, latency: float = 0.0
    ) -> None:

        self.key = key
        self.storm = storm
        """The share of requests answered with a 429 (every n-th, deterministic)."""
        self.retry_after = retry_after
        self.latency = latency
        """Seconds each answer waits before it is computed, as a service across a network would (outside the
        model's lock, so requests in flight overlap)."""
        self.in_flight = 0
        self.most_in_flight = 0
        """The most requests it was answering at once."""
        self._dense = load_model("minilm")
        self._reranker = load_model("ms-marco-minilm", "reranker")
        self._model_lock = threading.Lock()
        self._count_lock = threading.Lock()
        self.requests = 0
        self.refused = 0
        """Requests answered 429 by the storm."""
        self.texts: Counter[str] = Counter()
        """Texts received per kind: ``embed`` (documents and questions), ``rerank`` (passages), ``chat``
        (completions asked)."""
        self.embedded: list[str] = []
        """Every text sent to be embedded, in order."""
        self.seen_headers: list[dict[str, str]] = []
        self._server = _Listening(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> ServedStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------------------------------ answers

    def _tokens(self, texts: list[str]) -> int:
        return sum(len(ids) for ids in self._dense.model.tokenizer(texts)["input_ids"])

    def _embed(self, texts: list[str]) -> np.ndarray:
        with self._model_lock:
            vectors: np.ndarray = self._dense.encode_documents(texts)
        return vectors

    def _rerank(self, query: str, documents: list[str]) -> list[float]:
        with self._model_lock:
            return [float(s) for s in self._reranker.score(query, documents)]

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        path = path.rstrip("/")
        model = body.get("model")
        if path in ("/v1/embeddings", "/v2/embed"):
            if model != DENSE_MODEL:
                return 404, {"error": {"message": f"model {model} not found", "type": "invalid_request_error"}}
            raw = body.get("input", body.get("texts"))
            texts = [raw] if isinstance(raw, str) else list(raw or [])
            with self._count_lock:
                self.texts["embed"] += len(texts)
                self.embedded += texts
            vectors = self._embed(texts)
            tokens = self._tokens(texts)
            if path == "/v2/embed":
                return 200, {
                    "id": "stand-in",
                    "response_type": "embeddings_by_type",
                    "embeddings": {"float": [[float(x) for x in v] for v in vectors]},
                    "texts": texts,
                    "meta": {"billed_units": {"input_tokens": tokens}},
                }
            as_base64 = body.get("encoding_format") == "base64"
            data = [
                {
                    "object": "embedding",
                    "index": i,
                    "embedding": base64.b64encode(v.astype(np.float32).tobytes()).decode()
                    if as_base64
                    else [float(x) for x in v],
                }
                for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": tokens, "total_tokens": tokens}
            return 200, {"object": "list", "data": data, "model": model, "usage": usage}
        if path in ("/v1/rerank", "/rerank", "/v2/rerank"):
            if model != RERANK_MODEL:
                return 404, {"message": f"model {model} not found"}
            documents = [d if isinstance(d, str) else d.get("text", "") for d in body.get("documents") or []]
            with self._count_lock:
                self.texts["rerank"] += len(documents)
            scores = self._rerank(str(body.get("query", "")), documents)
            rows = sorted(
                ({"index": i, "relevance_score": s} for i, s in enumerate(scores)), key=lambda r: -r["relevance_score"]
            )
            tokens = self._tokens([f"{body.get('query', '')} {d}" for d in documents])
            return 200, {
                "id": "stand-in",
                "object": "list",
                "model": model,
                "results": rows,
                "data": rows,
                "meta": {"billed_units": {"search_units": 1}},
                "usage": {"total_tokens": tokens},
            }
        if path == "/v1/chat/completions":
            return self._grade(body)
        return 404, {"message": f"no route {path}"}

    def _grade(self, body: dict[str, Any]) -> tuple[int, Any]:
        """A chat completion in OpenAI's format whose answer is a grade (see `GRADER_MODEL`)."""

        model = body.get("model")
        if model != GRADER_MODEL:
            return 404, {"error": {"message": f"model {model} not found", "type": "invalid_request_error"}}
        said = str((body.get("messages") or [{}])[-1].get("content", ""))
        question, passage = (re.search(rf"<{tag}>\n(.*?)\n</{tag}>", said, re.S) for tag in ("question", "passage"))
        if question is None or passage is None:
            answer = "I cannot grade this."
        else:
            logit = self._rerank(question[1], [passage[1]])[0]
            answer = str(int(np.searchsorted(np.asarray(GRADER_CUTS), logit, side="right")))
        with self._count_lock:
            self.texts["chat"] += 1
        usage = {"prompt_tokens": len(said.split()), "completion_tokens": 1, "total_tokens": len(said.split()) + 1}
        return 200, {
            "id": "stand-in",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": usage,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with server._count_lock:
                    server.requests += 1
                    turn = server.requests
                    server.seen_headers.append({k.lower(): v for k, v in self.headers.items()})
                if server.key is not None and self.headers.get("Authorization") != f"Bearer {server.key}":
                    self._send(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                    return
                if server.storm and turn % max(1, round(1 / server.storm)) == 0:
                    with server._count_lock:
                        server.refused += 1
                    headers = {"Retry-After": str(server.retry_after)}
                    self._send(429, {"error": {"message": "rate limit", "type": "rate_limit"}}, headers)
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "body is not JSON"}})
                    return
                with server._count_lock:
                    server.in_flight += 1
                    server.most_in_flight = max(server.most_in_flight, server.in_flight)
                try:
                    if server.latency:
                        time.sleep(server.latency)
                    status, answer = server.answer(self.path.split("?")[0], body)
                finally:
                    with server._count_lock:
                        server.in_flight -= 1
                self._send(status, answer)

        return Handler
