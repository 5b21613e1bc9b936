"""The server's own small pages: the sign-in form (with a notice, a status and a Retry-After where asked), a run
that has no report yet (`progress_page`), a server with no runs (`first_page`); and a job as the API shows it
(`job_view`)."""

from __future__ import annotations

import math
from typing import Any

from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup, escape

from vx_eval.html.render import Account, small_page, start_form
from vx_eval.serve.jobs import Job
from vx_eval.serve.public import public_text


def escape_html(text: str) -> str:
    return str(escape(text))


def login_page(next_page: str, notice: str | None = None, status: int = 200, retry_after: float = 0) -> Response:
    note = f'<p class="notice" id="login-failed">{escape_html(notice)}</p>' if notice else ""
    html = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Sign in — vx-eval</title>"
        "<style>body{font:15px system-ui,sans-serif;max-width:360px;margin:80px auto}"
        "label{display:block;margin:10px 0 4px}input{width:100%;padding:6px}button{margin-top:14px;padding:6px 14px}"
        ".notice{background:#fff7ed;border:1px solid #fed7aa;padding:8px}</style></head><body>"
        f"<h1>Sign in</h1>{note}<form method=post action=/login>"
        f'<input type=hidden name=next value="{escape_html(next_page)}">'
        "<label for=username>Name</label><input id=username name=username autocomplete=username required>"
        "<label for=password>Password</label><input id=password name=password type=password "
        "autocomplete=current-password required><button type=submit id=sign-in>Sign in</button></form></body></html>"
    )
    headers = {"Retry-After": str(math.ceil(retry_after))} if retry_after else None
    return HTMLResponse(html, status_code=status, headers=headers)


def job_view(job: Job) -> dict[str, Any]:
    """A run the server started, as the API shows it (no question text; no host paths)."""
    progress = job.progress
    return {
        "id": job.id,
        "experiment": job.experiment,
        "target": job.target,
        "status": job.status,
        "reason": public_text(job.reason) if job.reason else None,
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
        "dataset": job.request.dataset,
        "golden_sha256": job.golden_sha256,
        "progress": {
            "stage": progress.stage,
            "setups": progress.setups,
            "questions": progress.questions,
            "searches_done": progress.searches_done,
            "searches_total": progress.searches_total,
        },
    }


def progress_page(job: Job) -> HTMLResponse:
    """A run the server started that has no report yet: where it is, refreshed every two seconds."""
    p = job.progress
    done = f"{p.searches_done} of {p.searches_total} searches" if p.searches_total else "starting"
    body = Markup(
        '<header><h1>Run {id}</h1><p>{kind} <b>{experiment}</b>{dataset}.</p></header><main class="progress">'
        '<p>Status: <b id="run-status">{status}</b>{stage} · <span id="run-progress">{done}</span></p>{bar}{reason}'
        '<p><a href="/">All runs</a></p></main>'
    ).format(
        id=job.id,
        kind="Experiment" if job.target is None else "Target",
        experiment=job.experiment if job.target is None else job.target,
        dataset=Markup(", dataset <b>{}</b>").format(job.request.dataset) if job.request.dataset else "",
        status=job.status,
        stage=f" · {p.stage}" if p.stage else "",
        done=done,
        bar=Markup('<progress max="{}" value="{}"></progress>').format(p.searches_total, p.searches_done)
        if p.searches_total
        else "",
        reason=Markup('<p class="notice" id="run-reason">{}</p>').format(public_text(job.reason)) if job.reason else "",
    )
    live = job.status in ("pending", "in_progress")
    return HTMLResponse(small_page(f"Run {job.id}", body, refresh=2 if live else None))


def first_page(account: Account) -> HTMLResponse:
    """The page of a server with no runs yet: who is signed in and, for a runner, the form to start one."""
    who = (
        Markup(
            'Signed in as <b id="signed-in">{}</b> · <form method="post" action="/logout" style="display:inline">'
            '<button type="submit" id="sign-out">sign out</button></form>'
        ).format(account.name)
        if account.name
        else Markup('<a href="/login" id="sign-in-link">Sign in</a>')
    )
    start = start_form(account.start) if account.start else Markup("<p>A runner can start one once signed in.</p>")
    body = Markup('<header><p class="account" id="account">{}</p><h1>No runs yet</h1></header><main>{}</main>')
    return HTMLResponse(small_page("No runs yet", body.format(who, start)))
