"""The server's own small pages: the sign-in form (with a notice, a status and a Retry-After where asked)."""

from __future__ import annotations

import math

from fastapi.responses import HTMLResponse, Response
from markupsafe import escape


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
