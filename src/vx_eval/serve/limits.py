"""What the server takes from one caller, and how a request body is read: bounded before it is read whole.

A body past `Limits.max_body` is refused with 413 (`BodyLimit`): a declared ``Content-Length`` past it before
any byte is read, a body of no declared length as its bytes arrive. JSON bodies are read strictly: ``NaN``
and ``Infinity`` are not JSON and are refused as a parse error (422), text that cannot be written as UTF-8
(a lone surrogate escape) is refused (422), and no array anywhere in a body, however deeply nested, may hold
more than `Limits.max_rows` items (413), checked before any row is validated. A validation error is answered with
where and what, never the value sent (which may be huge, or not serialisable at all).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import h11
from fastapi import Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from vx_eval.core.config.jsonio import JsonInputError, refuse_unwritable
from vx_eval.serve.bounds import Limits, mib
from vx_eval.serve.public import public_text


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
            try:
                refuse_unwritable(data)
            except JsonInputError as exc:
                raise HTTPException(422, exc.message) from None
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
    """The longest array anywhere in a JSON body (a row's nested list of ids counts as much as the rows), with
    where it is (``rows[3].expected``)."""
    longest: tuple[str, int] | None = None
    stack: list[tuple[str, Any]] = [("the body", data)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, list):
            if longest is None or len(item) > longest[1]:
                longest = (where, len(item))
            stack += [(f"{where}[{i}]", v) for i, v in enumerate(item) if isinstance(v, list | dict)]
        elif isinstance(item, dict):
            prefix = "" if where == "the body" else f"{where}."
            stack += [(f"{prefix}{k}", v) for k, v in item.items() if isinstance(v, list | dict)]
    return longest


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


async def unavailable(request: Request, exc: Exception) -> Response:
    """503 where the server cannot tell who asks (its users file is damaged): the reason, no path; try later."""

    detail = f"the server cannot check who is asking: {public_text(str(exc))}; an admin must repair the users file"
    return JSONResponse({"detail": detail}, status_code=503, headers={"Retry-After": "60"})


class BodyLimit:
    """An ASGI middleware that bounds request bodies: a declared ``Content-Length`` past `max_body` is a 413
    before any byte is read; a body with no length is counted as it arrives and refused once past it; a body
    that takes more than `body_timeout` seconds to arrive in all is a 408."""

    def __init__(self, app: ASGIApp, max_body: int, body_timeout: float = Limits.body_timeout) -> None:
        self.app, self.max_body, self.body_timeout = app, max_body, body_timeout

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
        seen, whole = 0, False
        deadline = time.monotonic() + self.body_timeout

        async def counted() -> Message:
            nonlocal seen, whole
            if whole:  # the body is in: what follows (a disconnect, while a response streams) has no deadline
                return await receive()
            try:
                with anyio.fail_after(max(deadline - time.monotonic(), 0.0)):
                    message = await receive()
            except TimeoutError:
                raise HTTPException(
                    408, f"the request body did not arrive within {self.body_timeout:g} s: send it at once"
                ) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if seen > self.max_body:
                    raise self._refusal()  # FastAPI answers it as any HTTP error: a 413 with this detail
            return message

        await self.app(scope, counted, send)


_SLOW = b'{"detail": "the request did not arrive in time: send it at once"}'
TOO_SLOW = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    + f"content-length: {len(_SLOW)}\r\n\r\n".encode()
    + _SLOW
)


def head_deadline(head_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's line and headers: a connection that
    sends nothing, or trickles a request's head, for `head_timeout` seconds is answered 408 and closed
    (uvicorn itself waits for them for ever, so a thousand slow clients would hold a thousand connections)."""

    class HeadDeadline(H11Protocol):  # type: ignore[misc, unused-ignore]
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.conn.their_state is h11.IDLE:  # part of a head arrived, not all of it
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            if self._deadline is None and not self.transport.is_closing():
                self._deadline = self.loop.call_later(head_timeout, self._too_slow)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _too_slow(self) -> None:
            self._deadline = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.write(TOO_SLOW)
                self.transport.close()

    return HeadDeadline
