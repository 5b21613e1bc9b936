"""The server's OpenAPI description, complete: FastAPI describes what each route returns when it succeeds and
its validation error; every route can also answer what the doors in front of it answer (a key that is not
valid 401, a role that may not 403, no such run or dataset 404, a body too slow 408 or too large 413, a full
queue 429, a users file that cannot be read 503), so each of those is described on every operation, as JSON
``{"detail": …}`` (and as HTML where the route is a page)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

ERROR_SCHEMA = {
    "type": "object",
    "title": "Error",
    "properties": {"detail": {"description": "What is wrong, in words (a list of problems for a 422)"}},
    "required": ["detail"],
}
DOORS = {
    "401": "No valid credentials: the API key is not valid, or this server admits no guests",
    "403": "The caller's role may not do this",
    "404": "No such run, dataset or experiment",
    "408": "The request's head or body did not arrive in time (vx-eval serve --head-timeout, --body-timeout)",
    "413": "The body, or an array in it, is over the server's limit (--max-body, --max-dataset-rows)",
    "422": "The request is not valid: each problem with where it is",
    "429": "Too many runs queued, or too many sign-in tries: wait (Retry-After) and try again",
    "503": "The server cannot answer now (its users file cannot be read, or sign-ins are busy)",
}
PAGES = {("post", "/login"), ("post", "/logout"), ("post", "/evaluations/start")}
"""Form posts a browser sends: they answer a page or a redirect to one, not JSON."""


def complete(app: FastAPI) -> None:
    """Make `app` describe every answer its routes can give (see the module)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                routes=app.routes,
                description=app.description,
            )
            for path, operations in spec.get("paths", {}).items():
                for method, operation in operations.items():
                    _add_doors(operation, page=(method, path) in PAGES or _is_page(operation))
            app.openapi_schema = spec
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _is_page(operation: dict[str, Any]) -> bool:
    ok = operation.get("responses", {}).get("200", {}).get("content", {})
    return "text/html" in ok


def _add_doors(operation: dict[str, Any], *, page: bool) -> None:
    responses = operation.setdefault("responses", {})
    content: dict[str, Any] = {"application/json": {"schema": ERROR_SCHEMA}}
    if page:
        content["text/html"] = {"schema": {"type": "string"}}
        for status, answer in list(responses.items()):
            if status.startswith("2"):
                answer["content"] = {"text/html": {"schema": {"type": "string"}}}
        responses.setdefault("303", {"description": "Done: go to the page the Location header names"})
    for status, words in DOORS.items():
        answer = responses.setdefault(status, {"description": words})
        if status != "422" or page:
            answer["content"] = content
