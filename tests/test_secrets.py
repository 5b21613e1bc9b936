"""No secret in anything vx-eval prints or writes: a run whose service echoes the password back in its
errors, and a run that crashes on a bug whose message carries it. Every file under the project, the run's
page, stdout and stderr (the traceback included) are searched for the password's bytes."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vx_eval.testing.faults import FaultProxy

SECRET = "S3cret-Pa55-echoed-9876"
CRASH = """
import os, sys
import vx_eval.core.run.assembly as assembly

def broken(*args, **kwargs):  # a bug after every search finished, whose message carries the password
    raise RuntimeError("the service said: wrong password " + os.environ["VX_TEST_OS_PASSWORD"])

assembly.assemble = broken
from vx_eval.cli import main
sys.argv = ["vx-eval", *sys.argv[1:]]
main()
"""

pytestmark = pytest.mark.slow


def vx(project, *argv: str, crash: bool = False) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", CRASH, *argv] if crash else [sys.executable, "-m", "vx_eval", *argv]
    env = {**os.environ, "VX_TEST_OS_PASSWORD": SECRET}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=project.root, env=env)


def written_with_secret(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_no_secret_in_any_file_or_output_even_when_the_service_echoes_it_or_a_bug_crashes(project, osmem):
    echo = (400, json.dumps({"error": f"bad password {SECRET}"}).encode())  # as a misconfigured proxy might
    doomed = lambda method, path, body: "_search" in path and b"investments" in body  # noqa: E731
    with FaultProxy(osmem, rate=0.0, doomed=doomed, doomed_answer=echo) as proxy:
        target = {
            "name": "OpenSearch",
            "engine": "opensearch",
            "options": {
                "url": proxy.url,
                "collection": "secrets",
                "mode": "dense",
                "dense_models": [],
                "user": "admin",
                "password": {"env": "VX_TEST_OS_PASSWORD"},
                "retries": 1,
            },
        }
        config = project.write_config(targets=[target])
        done = vx(project, "run", str(config), "--html", "page.html")
        assert done.returncode == 4, done.stderr  # finished, its report kept; a search failed: not green
        report = json.loads(next((project.root / "runs").rglob("report.json")).read_text())
        errors = [e for s in report["setups"] for e in s["per_question"]["errors"] if e]
        assert errors and all("bad password ***" in e for e in errors)  # it was there, and it was masked
        crashed = vx(project, "run", str(config), crash=True)
    assert crashed.returncode == 1 and "Traceback" in crashed.stderr
    assert "RuntimeError: the service said: wrong password ***" in crashed.stderr
    for shown in (done.stdout, done.stderr, crashed.stdout, crashed.stderr):
        assert SECRET not in shown
    assert (project.root / "page.html").is_file()
    assert list((project.root / "runs").rglob("checkpoints/*")), "the crashed run keeps its checkpoints"
    assert written_with_secret(project.root) == []


def forms_of(user: str, password: str) -> list[bytes]:
    """Every form of the password a server may echo: as it is, URL-encoded, and in base64 inside a Basic
    header (whole, and its middle, which no neighbouring byte changes)."""
    from urllib.parse import quote

    basic = base64.b64encode(f"{user}:{password}".encode())
    return [password.encode(), quote(password, safe="").encode(), basic, basic[8:20]]


def test_no_form_of_the_password_in_any_output_when_a_500_echoes_the_authorization_header(project, osmem):
    def echoed(headers: dict[str, str]) -> tuple[int, bytes]:  # a proxy that answers 500 with the request
        from urllib.parse import quote

        sent = {k.lower(): v for k, v in headers.items()}
        said = (
            f"upstream failed for the request: Authorization {sent['authorization']} "
            f"(password={quote(SECRET, safe='')}) {json.dumps(sent) * 3}"  # the whole request, too long to keep
        )
        return 500, json.dumps({"error": said}).encode()

    doomed = lambda method, path, body: "_search" in path and b"investments" in body  # noqa: E731
    with FaultProxy(osmem, rate=0.0, doomed=doomed, doomed_answer=echoed) as proxy:
        target = {
            "name": "OpenSearch",
            "engine": "opensearch",
            "options": {
                "url": proxy.url,
                "collection": "echoed",
                "mode": "dense",
                "dense_models": [],
                "user": "admin",
                "password": {"env": "VX_TEST_OS_PASSWORD"},
                "retries": 1,
            },
        }
        config = project.write_config(targets=[target])
        done = vx(project, "run", str(config), "--html", "page.html", "--allow-failures")
        shown = vx(project, "runs", "show", "latest", "--config", str(config))
    assert done.returncode == 0, done.stderr
    report = json.loads(next((project.root / "runs").rglob("report.json")).read_text())
    errors = [e for s in report["setups"] for e in s["per_question"]["errors"] if e]
    assert errors and all("upstream failed for the request" in e and "***" in e for e in errors)  # echoed, masked
    assert all(len(e) <= 300 for e in errors)  # a service's words cut before they reach the report
    for form in forms_of("admin", SECRET):
        for output in (done.stdout, done.stderr, shown.stdout, shown.stderr):
            assert form.decode() not in output
        assert [p for p in project.root.rglob("*") if p.is_file() and form in p.read_bytes()] == []
