"""What the server takes from one caller, and how a request body is read: bounded before it is read whole.

A body past `Limits.max_body` is refused with 413 (`BodyLimit`): a declared ``Content-Length`` past it before
any byte is read, a body of no declared length as its bytes arrive. JSON bodies are read strictly: ``NaN``
and ``Infinity`` are not JSON and are refused as a parse error (422), and no array in a body may hold more
than `Limits.max_rows` items (413), checked before any row is validated. A validation error is answered with
where and what, never the value sent (which may be huge, or not serialisable at all).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vx_eval.serve.bounds import Limits, mib


def _not_a_number(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: send a finite number")


class StrictJsonRequest(Request):
    """A request whose JSON body refuses non-finite numbers and arrays longer than the server's bound."""

    max_rows: int = Limits.max_rows

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            try:
                data = json.loads(body, parse_constant=_not_a_number)
            except ValueError as exc:
                if isinstance(exc, json.JSONDecodeError):
                    raise
                raise json.JSONDecodeError(str(exc), body.decode("utf-8", "replace")[:1], 0) from None
            too_long = _longest_array(data)
            if too_long is not None and too_long[1] > self.max_rows:
                field, count = too_long
                raise HTTPException(
                    413,
                    f"{field} holds {count:,} items, over the server's limit of {self.max_rows:,} "
                    "(vx-eval serve --max-dataset-rows): send fewer",
                )
            self._json = data
        return self._json


def _longest_array(data: Any) -> tuple[str, int] | None:
    """The longest array at the top of a JSON body, or one level into it, with its field name."""
    if isinstance(data, list):
        return "the body", len(data)
    if not isinstance(data, dict):
        return None
    arrays = [(str(k), len(v)) for k, v in data.items() if isinstance(v, list)]
    return max(arrays, key=lambda a: a[1]) if arrays else None


def strict_route(max_rows: int) -> type[APIRoute]:
    """A route class whose handlers read JSON bodies as `StrictJsonRequest` does, with `max_rows`."""

    class StrictRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def strict(request: Request) -> Response:
                wrapped = StrictJsonRequest(request.scope, request.receive)
                wrapped.max_rows = max_rows
                return await handler(wrapped)

            return strict

    return StrictRoute


async def validation_error(request: Request, exc: Exception) -> Response:
    """422 with each problem's place, message and kind; the value sent is never echoed back."""
    assert isinstance(exc, RequestValidationError)
    detail = []
    for error in exc.errors():
        shown = {k: error[k] for k in ("loc", "msg", "type") if k in error}
        if error.get("ctx"):
            shown["ctx"] = {k: str(v) for k, v in error["ctx"].items()}
        detail.append(shown)
    return JSONResponse({"detail": jsonable_encoder(detail)}, status_code=422)


class BodyLimit:
    """An ASGI middleware that bounds request bodies: a declared ``Content-Length`` past `max_body` is a 413
    before any byte is read; a body with no length is counted as it arrives and refused once past it."""

    def __init__(self, app: ASGIApp, max_body: int) -> None:
        self.app, self.max_body = app, max_body

    def _refusal(self) -> HTTPException:
        return HTTPException(
            413, f"the request body is over the server's limit of {mib(self.max_body)} (vx-eval serve --max-body)"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body):
            refused = self._refusal()
            await JSONResponse({"detail": refused.detail}, status_code=413)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_body:
                    raise self._refusal()  # FastAPI answers it as any HTTP error: a 413 with this detail
            return message

        await self.app(scope, counted, send)
