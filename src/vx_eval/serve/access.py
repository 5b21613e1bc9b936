"""Who may call a route, as a FastAPI dependency: ``who: Annotated[Principal, Depends(allowed("dataset.write"))]``
gives the caller where they may do that, and answers 401 or 403 (with the reason) where they may not, before
the route runs. ``service: Annotated[Service, Depends(service_of)]`` gives the app's `Service`."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request
from fastapi.responses import Response

from vx_eval.serve.auth import Principal
from vx_eval.serve.service import Service


class Refused(Exception):
    """A request its caller may not make: the response that says why (401: who are you; 403: not you)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


async def refused(_request: Request, exc: Exception) -> Response:
    """The app's handler of `Refused`: the response it carries."""
    assert isinstance(exc, Refused)
    return exc.response


def service_of(request: Request) -> Service:
    """The app's `Service` (``app.state.service``)."""
    service = request.app.state.service
    assert isinstance(service, Service)
    return service


def allowed(action: str) -> Callable[[Request], Principal]:
    """A dependency giving the caller where they may do `action` (`Service.caller`), else refusing the request."""

    def caller(request: Request) -> Principal:
        who = service_of(request).caller(request, action)
        if not isinstance(who, Principal):
            raise Refused(who)
        return who

    caller.__name__ = f"may_{action.replace('.', '_')}"
    return caller
