"""`vx-eval serve`: the Evaluate page for the newest run, older runs twelve at a time, and the REST routes.

Runs hold scores and ids, never text, so whoever may read evaluations (`evaluation.read`: guests too, unless
the server says otherwise) may read them. The golden file holds the questions' text: it goes only to an
admin signed in as a person, and every download is written to the access log with that person's name.
"""

from __future__ import annotations

import contextlib
import sys
import traceback
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Form, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.middleware.sessions import SessionMiddleware

from vx_eval.core.errors import redact
from vx_eval.core.stores import Stores
from vx_eval.serve.access import Refused, refused
from vx_eval.serve.auth import (
    SESSION_HOURS,
    Throttle,
    UsersUnreadable,
    session_secret,
)
from vx_eval.serve.grading_api import grading_routes
from vx_eval.serve.limits import BodyLimit, strict_route, unavailable, validation_error
from vx_eval.serve.mixpeek import mixpeek_routes
from vx_eval.serve.openapi import complete as complete_openapi
from vx_eval.serve.pages import login_page
from vx_eval.serve.runs_api import run_routes
from vx_eval.serve.service import ServeSettings, Service


def create_app(settings: ServeSettings, stores: Stores, throttle: Throttle | None = None) -> FastAPI:
    """The ASGI application (FastAPI) over the runs at `settings.store`."""
    service = Service(settings, stores, throttle)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        service.jobs.close()  # the runs it started stop with it, and resume when it starts again

    app = FastAPI(
        lifespan=lifespan,
        title="vx-eval",
        summary="Runs of every search setup on your golden questions: read them, start them, keep datasets.",
        docs_url="/docs",
        redoc_url=None,
    )
    app.router.route_class = strict_route(settings.limits.max_rows)
    app.add_exception_handler(RequestValidationError, validation_error)
    app.add_exception_handler(UsersUnreadable, unavailable)
    app.add_exception_handler(Refused, refused)
    complete_openapi(app)
    limits = settings.limits
    app.add_middleware(BodyLimit, max_body=limits.max_body, body_timeout=limits.body_timeout)  # its 413s are logged
    app.state.service = service

    @app.middleware("http")
    async def access(request: Request, call_next: Any) -> Any:
        try:
            response = await call_next(request)
        except Exception:  # a bug: logged as the 500 it is, its traceback (secrets masked) on stderr
            sys.stderr.write(redact(traceback.format_exc()))
            response = JSONResponse({"detail": "the server failed on this request; see its log"}, status_code=500)
        who = getattr(request.state, "vx_principal", None)
        service.log.write(
            method=request.method,
            path=request.url.path,
            status=response.status_code,
            caller=who.kind if who else None,
            name=who.name if who else None,
        )
        return response

    app.add_middleware(
        SessionMiddleware,
        secret_key=session_secret(settings.users),
        session_cookie="vx_eval_session",
        same_site="strict",
        https_only=settings.secure_cookies,
        max_age=SESSION_HOURS * 3600,
    )

    @app.get("/", response_class=HTMLResponse)
    def newest_page(request: Request, runs: int = Query(0, ge=0)) -> Response:
        return service.page(request, "latest", runs)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str, runs: int = Query(0, ge=0)) -> Response:
        return service.page(request, run_id, runs)

    @app.get("/login", response_class=HTMLResponse)
    def login_form(next: str = "/", failed: int = 0) -> Response:
        return login_page(next, "That name and password do not match." if failed else None)

    @app.post("/login")
    async def login(
        request: Request, username: str = Form(min_length=1), password: str = Form(min_length=1), next: str = Form("/")
    ) -> Response:
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        return await service.sign_in(request, username, password, target)

    @app.post("/logout")
    def logout(request: Request) -> Response:
        return service.sign_out(request)

    @app.get("/api/v1/evaluations/{run_id}/golden")
    def golden(request: Request, run_id: str) -> Response:
        return service.golden(request, run_id)

    app.include_router(run_routes(app.router.route_class))
    app.include_router(grading_routes(app.router.route_class))
    app.include_router(mixpeek_routes(app.router.route_class))

    @app.get("/healthz", summary="Whether the server can answer and run jobs (503 when its queue cannot)")
    async def health() -> Response:
        queue = service.jobs.health()
        body = {"status": "ok" if queue.ok else "unhealthy", "queue": queue.model_dump()}
        return JSONResponse(body, status_code=200 if queue.ok else 503)

    return app
