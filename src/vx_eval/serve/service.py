"""What the server's routes share (`Service`): its settings, the people, the access log, the reports, the jobs
and datasets, the sign-in throttle; and who a request's caller is and what they may do (`Service.caller`)."""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import ValidationError

from vx_eval.core.config.experiment import Experiment, load_config
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import StoreError, VxEvalError
from vx_eval.core.golden.sources import read_golden
from vx_eval.core.plugins import Plugins, load_plugins
from vx_eval.core.report.history import golden_bytes, list_runs, read_head
from vx_eval.core.report.schema import Report
from vx_eval.core.stores import Stores
from vx_eval.html import page_for
from vx_eval.html.render import Account, Menu, MenuEntry, StartForm
from vx_eval.serve import auth
from vx_eval.serve.auth import GUEST, Busy, Principal, Session, Throttle, Users
from vx_eval.serve.bounds import Limits
from vx_eval.serve.datasets import Datasets
from vx_eval.serve.jobs import Jobs
from vx_eval.serve.pages import escape_html, first_page, login_page, progress_page
from vx_eval.serve.public import public_report, public_text
from vx_eval.serve.reports import Reports

MENU_SIZE = 12


@dataclass
class ServeSettings:
    store: str
    users: Path
    guests: bool = True
    admin_key: str | None = None
    access_log: Path | None = None
    secure_cookies: bool = False
    experiments: dict[str, Path] = field(default_factory=dict)
    """Configs the server may run, by name (`vx-eval serve --experiments FOLDER`, `--config`)."""
    targets: dict[str, str] = field(default_factory=dict)
    """Indexes the server may run with no configuration, by name: ``ENGINE:WHERE`` as ``run --target``
    takes it (`vx-eval serve --target NAME=ENGINE:WHERE`)."""
    jobs: Path | None = None
    """Where the runs it starts are queued (default: `default_jobs`)."""
    workers: int = 2
    """Runs at once, each in a process of its own."""
    limits: Limits = field(default_factory=Limits)
    """Bodies, dataset rows, runs queued per person and in all, how long finished jobs' files stay."""


def default_jobs(settings: ServeSettings) -> Path:
    """``jobs/<store's sha256>/`` beside the users file: servers of other stores that share a users file
    never take each other's runs."""

    return settings.users.parent / "jobs" / hashlib.sha256(settings.store.encode()).hexdigest()[:12]


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


class Service:
    """What the routes share: the settings, the people, the access log, the reports, the throttle."""

    def __init__(self, settings: ServeSettings, stores: Stores, throttle: Throttle | None = None) -> None:
        self.settings, self.stores = settings, stores
        self.users = Users(settings.users)
        self.log = AccessLog(settings.access_log)
        self.reports = Reports(stores, settings.store)
        self.throttle = throttle or Throttle()
        self.checks = anyio.CapacityLimiter(auth.CHECKS_AT_ONCE)
        self.experiments = dict(settings.experiments)
        self.datasets = Datasets(stores, settings.store)
        self.targets = dict(settings.targets)
        self._configs: dict[str, tuple[int, Experiment]] = {}
        self._setups: dict[str, tuple[set[str], set[str]]] = {}
        self.jobs = Jobs(
            settings.jobs or default_jobs(settings),
            self.experiments,
            settings.store,
            stores,
            settings.workers,
            self.targets,
            settings.limits,
        )

    @functools.cached_property
    def plugins(self) -> Plugins:

        return load_plugins()

    def experiment(self, name: str) -> Experiment | None:
        """An experiment's config as it is now (read again when its file changes), or None where it cannot
        be read here (the run says why)."""

        path = self.experiments[name]
        try:
            stamp = path.stat().st_mtime_ns
            cached = self._configs.get(name)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            loaded = load_config(path, self.plugins)
        except (VxEvalError, OSError):
            return None
        self._configs[name] = (stamp, loaded)
        return loaded

    def setups_of(self, experiment: str) -> tuple[set[str], set[str]] | None:
        """The setup keys and methods of the experiment's newest completed run here, or None (it has not
        run here, or its report cannot be read)."""
        try:
            entries, _ = list_runs(self.stores, self.settings.store, limit=50)
        except StoreError:
            return None
        for entry in entries:
            if entry.name != experiment or entry.status not in (None, "completed"):
                continue
            if entry.id not in self._setups:
                try:
                    head = read_head(self.stores, self.settings.store, entry.id)
                except (StoreError, ValueError):
                    continue
                keys = {str(s["key"]) for s in head.setups if "key" in s}
                self._setups[entry.id] = (keys, {str(s["method"]) for s in head.setups if "method" in s})
            return self._setups[entry.id]
        return None

    def config_golden_sha(self, experiment: str) -> str | None:
        """The sha256 of the golden file an experiment's config names as it is now (None: unreadable here)."""

        loaded = self.experiment(experiment)
        if loaded is None:
            return None
        try:
            return read_golden(loaded.config.golden_source, Stores(self.plugins, options=loaded.stores)).sha256
        except (VxEvalError, OSError):
            return None

    def account(self, who: Principal) -> Account:
        """Who the page is for, and what its "Start a new evaluation" form offers them (nothing: they may
        not start runs, or the server knows no experiment)."""
        name = who.name if who.kind == "person" else None
        if not who.may("evaluation.start") or not (self.experiments or self.targets):
            return Account(name)
        return Account(name, StartForm(sorted(self.experiments), self.datasets.names(), sorted(self.targets)))

    def principal(self, request: Request) -> Principal | None:
        """The caller, or None when the credentials given are wrong (never silently a guest)."""
        header = request.headers.get("authorization", "")
        token = header[7:].strip() if header.lower().startswith("bearer ") else request.headers.get("x-api-key")
        if token:
            return self.users.key(token, self.settings.admin_key)
        if not request.session:
            return GUEST
        try:
            session = Session.model_validate(request.session)
        except ValidationError:  # a cookie from an older server, signed with this key
            request.session.clear()
            return GUEST
        who = self.users.person(session)
        if who is None:  # signed out elsewhere, a new password, expired, or no longer in the file
            request.session.clear()
            return GUEST
        return who

    def caller(self, request: Request, action: str) -> Principal | Response:
        who = self.principal(request)
        if who is None:
            return JSONResponse({"detail": "the API key is not valid"}, status_code=401)
        request.state.vx_principal = who
        if who.kind == "guest" and not self.settings.guests:
            return JSONResponse({"detail": "sign in first: this server admits no guests"}, status_code=401)
        if not who.may(action):
            return JSONResponse({"detail": f"{who.describe()} may not do {action}"}, status_code=403)
        return who

    def shown(self, who: Principal, report: Report) -> Report:
        """The report as `who` may see it: an admin whole, anyone else without host details."""
        return report if who.admin else public_report(report)

    def menu(self, offset: int) -> Menu:
        entries, total = list_runs(self.stores, self.settings.store, limit=MENU_SIZE, offset=offset)
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

    def page(self, request: Request, run_id: str, offset: int) -> Response:
        who = self.caller(request, "evaluation.read")
        if not isinstance(who, Principal):
            if who.status_code == 401:
                return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
            return who
        job = self.jobs.get(run_id) if run_id != "latest" else None
        if job is not None and job.status != "completed":
            return progress_page(job)
        try:
            report = self.reports.get(run_id)
            newest = self.reports.get("latest").id
        except StoreError as exc:
            if run_id == "latest" and isinstance(exc, StoreNotFound):
                return first_page(self.account(who))  # no runs yet: what a runner may start
            status = 404 if isinstance(exc, StoreNotFound) else 500
            text = escape_html(public_text(str(exc)))
            return HTMLResponse(f"<!doctype html><title>vx-eval</title><p>{text}</p>", status_code=status)
        golden_url = (
            f"/api/v1/evaluations/{quote(report.id)}/golden"
            if who.may("golden.download") and self.reports.has_golden(report)
            else None
        )
        html = page_for(
            self.shown(who, report),
            self.stores,
            self.settings.store,
            menu=self.menu(offset),
            older="/" if report.id != newest else None,
            golden_url=golden_url,
            account=self.account(who),
        )
        return HTMLResponse(html)

    def foreign(self, request: Request) -> Response | None:
        """A 403 for a form posted from another site (its Origin, else its Referer, names another host)."""
        sent = request.headers.get("origin") or request.headers.get("referer")
        if not sent:
            return None  # not a browser, or a browser that sends neither for same-site posts
        parts = urlsplit(sent)
        ours = urlsplit(str(request.base_url))
        if (parts.scheme, parts.netloc) == (ours.scheme, ours.netloc):
            return None
        self.log.write(event="cross-site post refused", path=request.url.path, origin=public_text(sent))
        return JSONResponse({"detail": "this form may only be posted from this server's own pages"}, status_code=403)

    async def sign_in(self, request: Request, username: str, password: str, target: str) -> Response:
        """A password check runs on one of `CHECKS_AT_ONCE` threads of its own; sign-ins waiting for one
        hold no thread, so a flood of them never starves the other routes."""
        refused = self.foreign(request)
        if refused is not None:
            return refused
        address = request.client.host if request.client else "unknown"
        wait = self.throttle.begin(username, address)
        if wait > 0:
            self.log.write(event="sign-in throttled", name=username, address=address)
            return login_page(target, f"Too many tries. Wait {math.ceil(wait)} s and try again.", 429, wait)
        try:
            with anyio.fail_after(auth.CHECK_WAIT_S):
                session = await anyio.to_thread.run_sync(self.users.sign_in, username, password, limiter=self.checks)
        except (TimeoutError, Busy):
            self.throttle.abandoned(username, address)
            return login_page(target, "The server is busy checking other sign-ins; try again in a few seconds.", 503, 5)
        if session is None:
            self.throttle.failed(username, address)
            self.log.write(event="sign-in refused", name=username, address=address)
            return RedirectResponse(f"/login?failed=1&next={quote(target)}", status_code=303)
        self.throttle.succeeded(username, address)
        request.session.clear()
        request.session.update(session.model_dump())
        self.log.write(event="signed in", name=username)
        return RedirectResponse(target, status_code=303)

    def sign_out(self, request: Request) -> Response:
        refused = self.foreign(request)
        if refused is not None:
            return refused
        who = self.principal(request)
        if who is not None and who.kind == "person" and who.name:
            self.users.sign_out_everywhere(who.name)  # the cookie, copied or not, is no good any more
            self.log.write(event="signed out", name=who.name)
        request.session.clear()
        return RedirectResponse("/", status_code=303)

    def golden(self, request: Request, run_id: str) -> Response:
        who = self.caller(request, "golden.download")
        if not isinstance(who, Principal):
            refused = self.principal(request)
            self.log.write(
                event="golden download refused",
                run=run_id,
                caller=refused.kind if refused else "bad key",
                name=refused.name if refused else None,
            )
            return who
        try:
            report = self.reports.get(run_id)
            data = golden_bytes(self.stores, self.settings.store, report)
        except StoreNotFound as exc:
            return error_response(exc, 404)
        except StoreError as exc:
            return error_response(exc, 500)
        sha = report.golden.sha256 or ""
        self.log.write(event="golden download", run=report.id, person=who.name, sha256=sha, bytes=len(data))
        return Response(
            data,
            media_type="application/x-ndjson",
            headers={
                "Content-Disposition": f'attachment; filename="golden-{sha[:12]}.jsonl"',
                "Cache-Control": "no-store",
            },
        )


def error_response(exc: Exception, status: int) -> Response:
    """An error as JSON, with no place on the server's disk in it."""
    return JSONResponse({"detail": public_text(str(exc))}, status_code=status)
