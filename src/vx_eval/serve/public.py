"""What the server shows callers who are not admins: a report and error messages without host details.

A report records where the run's machine kept things (the config's and the golden file's paths, a local
index's path, the platform). Guests and readers see file names instead of absolute paths, service
addresses without anything after the host, and no platform; scores, ids and picks are untouched.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from vx_eval.core.report.schema import Report

_POSIX = re.compile(r"(?<![\w.:/~-])(?:~/|/)(?:[^\s/'\"`()<>,;]+/)+([^\s/'\"`()<>,;]*)")
_WINDOWS = re.compile(r"\b[A-Za-z]:\\(?:[^\s\\'\"`()<>,;]+\\)*([^\s\\'\"`()<>,;]*)")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"`<>]+", re.IGNORECASE)


def public_text(text: str) -> str:
    """`text` with every absolute path reduced to its last part and every address to its scheme and host."""
    text = _URL.sub(lambda m: _host_only(m.group(0)), text)
    text = _WINDOWS.sub(lambda m: m.group(1) or "…", text)
    return _POSIX.sub(lambda m: m.group(1) or "…", text)


def _host_only(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme == "file":
        return public_text(parts.path)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if _port(parts) else "")


def _port(parts: Any) -> int | None:
    try:
        return parts.port
    except ValueError:  # not a number: leave it out
        return None


def _walk(value: Any) -> Any:
    if isinstance(value, str):
        return public_text(value)
    if isinstance(value, list):
        return [_walk(v) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v) for k, v in value.items()}
    return value


def public_report(report: Report) -> Report:
    """The report as a caller who is not an admin sees it (see the module). Only the free-text fields
    that may hold a place are rewritten: ids (which may look like paths) never are."""
    targets = {
        name: t.model_copy(
            update={
                "location": _walk(t.location),
                "describe_error": _walk(t.describe_error),
                "details": _walk(t.details),
                "settings": _walk(t.settings),
            }
        )
        for name, t in report.targets.items()
    }
    setups = [
        s.model_copy(
            update={
                "error": _walk(s.error),
                "per_question": s.per_question.model_copy(
                    update={"errors": _walk(s.per_question.errors), "notes": _walk(s.per_question.notes)}
                ),
            }
        )
        for s in report.setups
    ]
    judge = report.judge.model_copy(update={"details": _walk(report.judge.details)}) if report.judge else None
    return report.model_copy(
        update={
            "config": report.config.model_copy(update={"path": _last_part(report.config.path)}),
            "golden": report.golden.model_copy(update={"source": _last_part(report.golden.source) or ""}),
            "targets": targets,
            "missing_notes": _walk(report.missing_notes),
            "settings": report.settings.model_copy(
                update={"search": _walk(report.settings.search), "models": _walk(report.settings.models)}
            ),
            "setups": setups,
            "judge": judge,
            "provenance": report.provenance.model_copy(
                update={"platform": "", "models": _walk(report.provenance.models)}
            ),
        }
    )


def _last_part(path: str | None) -> str | None:
    if not path:
        return path
    if _URL.match(path) and not path.startswith("file:"):
        return _host_only(path) + "/…/" + path.rstrip("/").rsplit("/", 1)[-1]
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
