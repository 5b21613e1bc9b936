"""`vx-eval serve`: the Evaluate page for the newest run, older runs twelve at a time, and the REST routes.

Runs hold scores and ids, never text, so whoever may read evaluations (`evaluation.read`: guests too, unless
the server says otherwise) may read them. The golden file holds the questions' text: it goes only to an
admin signed in as a person, and every download is written to the access log with that person's name.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, Form, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.middleware.sessions import SessionMiddleware

from vx_eval.core.errors import StoreError
from vx_eval.core.history import golden_bytes, has_golden, latest_finished, list_runs, read_report
from vx_eval.core.report import check_run_id
from vx_eval.core.schema import Report
from vx_eval.core.stores import StoreNotFound, Stores
from vx_eval.html import page_for
from vx_eval.html.render import Menu, MenuEntry
from vx_eval.serve.auth import GUEST, Principal, Users, session_secret

MENU_SIZE = 12
CACHED_REPORTS = 8


@dataclass
class ServeSettings:
    store: str
    users: Path
    guests: bool = True
    admin_key: str | None = None
    access_log: Path | None = None
    secure_cookies: bool = False


class AccessLog:
    """One JSON line per request, and one per golden download naming the person; appended under a lock."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, **event: Any) -> None:
        if self.path is None:
            return
        event = {"time": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"), **event}
        line = json.dumps(event, ensure_ascii=False) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)


class Reports:
    """Finished reports never change, so the last few read are kept in memory."""

    def __init__(self, stores: Stores, save_to: str) -> None:
        self.stores, self.save_to = stores, save_to
        self._cache: OrderedDict[str, Report] = OrderedDict()
        self._lock = threading.Lock()

    def resolve(self, run_id: str) -> str:
        return latest_finished(self.stores, self.save_to) if run_id == "latest" else check_run_id(run_id)

    def get(self, run_id: str) -> Report:
        run_id = self.resolve(run_id)
        with self._lock:
            if run_id in self._cache:
                self._cache.move_to_end(run_id)
                return self._cache[run_id]
        report = read_report(self.stores, self.save_to, run_id)
        with self._lock:
            self._cache[run_id] = report
            while len(self._cache) > CACHED_REPORTS:
                self._cache.popitem(last=False)
        return report

    def has_golden(self, report: Report) -> bool:
        return has_golden(self.stores, self.save_to, report)


def create_app(settings: ServeSettings, stores: Stores) -> FastAPI:
    """The ASGI application (FastAPI) over the runs at `settings.store`."""
    users = Users(settings.users)
    log = AccessLog(settings.access_log)
    reports = Reports(stores, settings.store)
    app = FastAPI(title="vx-eval", docs_url=None, redoc_url=None)

    def principal(request: Request) -> Principal | None:
        """The caller, or None when the credentials given are wrong (never silently a guest)."""
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-api-key")
        if token:
            return users.key(token, settings.admin_key)
        name = request.session.get("person")
        if name:
            return users.person(name) or GUEST
        return GUEST

    @app.middleware("http")
    async def access(request: Request, call_next: Any) -> Any:
        response = await call_next(request)
        who = getattr(request.state, "vx_principal", None)
        log.write(
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
        max_age=12 * 3600,
    )

    def caller(request: Request, action: str) -> Principal | Response:
        who = principal(request)
        if who is None:
            return JSONResponse({"detail": "the API key is not valid"}, status_code=401)
        request.state.vx_principal = who
        if who.kind == "guest" and not settings.guests:
            return JSONResponse({"detail": "sign in first: this server admits no guests"}, status_code=401)
        if not who.may(action):
            return JSONResponse({"detail": f"{who.describe()} may not do {action}"}, status_code=403)
        return who

    def not_found(exc: Exception) -> Response:
        return JSONResponse({"detail": str(exc)}, status_code=404)

    def _menu(offset: int) -> Menu:
        entries, total = list_runs(stores, settings.store, limit=MENU_SIZE, offset=offset)
        shown = [
            MenuEntry(e.id, f"/runs/{quote(e.id)}?runs={offset}", e.created_at, e.collections, e.status)
            for e in entries
        ]
        return Menu(
            entries=shown,
            total=total,
            first=offset + 1 if shown else 0,
            last=offset + len(shown),
            newer=f"?runs={max(0, offset - MENU_SIZE)}" if offset > 0 else None,
            older=f"?runs={offset + MENU_SIZE}" if offset + MENU_SIZE < total else None,
        )

    def page(request: Request, run_id: str, offset: int) -> Response:
        who = caller(request, "evaluation.read")
        if not isinstance(who, Principal):
            if who.status_code == 401:
                return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
            return who
        try:
            report = reports.get(run_id)
            newest = reports.resolve("latest")
        except StoreNotFound as exc:
            return HTMLResponse(f"<!doctype html><title>vx-eval</title><p>{_escape(str(exc))}</p>", status_code=404)
        golden_url = (
            f"/api/v1/evaluations/{quote(report.id)}/golden"
            if who.may("golden.download") and reports.has_golden(report)
            else None
        )
        html = page_for(
            report,
            stores,
            settings.store,
            menu=_menu(offset),
            older="/" if report.id != newest else None,
            golden_url=golden_url,
            account={"name": who.name if who.kind == "person" else None},
        )
        return HTMLResponse(html)

    @app.get("/", response_class=HTMLResponse)
    def newest_page(request: Request, runs: int = Query(0, ge=0)) -> Response:
        return page(request, "latest", runs)

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(request: Request, run_id: str, runs: int = Query(0, ge=0)) -> Response:
        return page(request, run_id, runs)

    @app.get("/login", response_class=HTMLResponse)
    def login_form(next: str = "/", failed: int = 0) -> Response:
        return HTMLResponse(_login_html(next, bool(failed)))

    @app.post("/login")
    def login(
        request: Request, username: str = Form(...), password: str = Form(...), next: str = Form("/")
    ) -> Response:
        who = users.sign_in(username, password)
        target = next if next.startswith("/") and not next.startswith("//") else "/"
        if who is None:
            log.write(event="sign-in refused", name=username)
            return RedirectResponse(f"/login?failed=1&next={quote(target)}", status_code=303)
        request.session.clear()
        request.session.update(person=who.name)
        log.write(event="signed in", name=who.name, role=who.role)
        return RedirectResponse(target, status_code=303)

    @app.post("/logout")
    def logout(request: Request) -> Response:
        request.session.clear()
        return RedirectResponse("/", status_code=303)

    @app.get("/api/v1/evaluations")
    def evaluations(request: Request, limit: int = Query(20, ge=1, le=200), offset: int = Query(0, ge=0)) -> Response:
        who = caller(request, "evaluation.read")
        if not isinstance(who, Principal):
            return who
        entries, total = list_runs(stores, settings.store, limit=limit, offset=offset)
        shown = [{k: v for k, v in e.as_dict().items() if k != "location"} for e in entries]
        return JSONResponse({"runs": shown, "total": total, "limit": limit, "offset": offset})

    @app.get("/api/v1/evaluations/{run_id}")
    def evaluation(request: Request, run_id: str) -> Response:
        who = caller(request, "evaluation.read")
        if not isinstance(who, Principal):
            return who
        try:
            report = reports.get(run_id)
        except StoreNotFound as exc:
            return not_found(exc)
        except StoreError as exc:
            return JSONResponse({"detail": str(exc)}, status_code=500)
        may = who.may("golden.download") and reports.has_golden(report)
        return JSONResponse({**report.model_dump(mode="json"), "golden_download": may})

    @app.get("/api/v1/evaluations/{run_id}/golden")
    def golden(request: Request, run_id: str) -> Response:
        who = caller(request, "golden.download")
        if not isinstance(who, Principal):
            refused = principal(request)
            log.write(
                event="golden download refused",
                run=run_id,
                caller=refused.kind if refused else "bad key",
                name=refused.name if refused else None,
            )
            return who
        try:
            report = reports.get(run_id)
            data = golden_bytes(stores, settings.store, report)
        except StoreNotFound as exc:
            return not_found(exc)
        sha = report.golden.sha256 or ""
        log.write(event="golden download", run=report.id, person=who.name, sha256=sha, bytes=len(data))
        return Response(
            data,
            media_type="application/x-ndjson",
            headers={
                "Content-Disposition": f'attachment; filename="golden-{sha[:12]}.jsonl"',
                "Cache-Control": "no-store",
            },
        )

    @app.get("/healthz")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    return app


def _escape(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


def _login_html(next_page: str, failed: bool) -> str:
    note = '<p class="notice" id="login-failed">That name and password do not match.</p>' if failed else ""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Sign in — vx-eval</title>"
        "<style>body{font:15px system-ui,sans-serif;max-width:360px;margin:80px auto}"
        "label{display:block;margin:10px 0 4px}input{width:100%;padding:6px}button{margin-top:14px;padding:6px 14px}"
        ".notice{background:#fff7ed;border:1px solid #fed7aa;padding:8px}</style></head><body>"
        f"<h1>Sign in</h1>{note}<form method=post action=/login>"
        f'<input type=hidden name=next value="{_escape(next_page)}">'
        "<label for=username>Name</label><input id=username name=username autocomplete=username required>"
        "<label for=password>Password</label><input id=password name=password type=password "
        "autocomplete=current-password required><button type=submit id=sign-in>Sign in</button></form></body></html>"
    )
