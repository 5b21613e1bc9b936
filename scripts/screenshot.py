"""Regenerate the README's picture of the Evaluate page from today's quickstart: `python scripts/screenshot.py`.

It runs the shipped quickstart (`configs/quickstart.yaml`) into a temporary folder, serves that run with
`vx-eval serve` on 127.0.0.1, opens the page in Debian's Chromium (Playwright, no downloaded browser), and
writes `docs/evaluate-page.png` with `docs/evaluate-page.json` beside it: the SHA-256 of everything the
picture was made from (the quickstart's config and data, the page's code). The test suite recomputes those
and fails while the picture is older than any of them.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PICTURE = REPO / "docs" / "evaluate-page.png"
INPUTS = REPO / "docs" / "evaluate-page.json"


def inputs() -> dict[str, str]:
    """Every file the picture depends on (path relative to the checkout) and its SHA-256."""
    files = [REPO / "configs" / "quickstart.yaml", *sorted((REPO / "configs" / "quickstart").glob("*.jsonl"))]
    files += sorted(
        p for p in (REPO / "src" / "vx_eval" / "html").rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    return {str(p.relative_to(REPO)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def main() -> None:
    sys.path.insert(0, str(REPO))
    from vx_eval.testing.browser import FLAGS, chromium
    from vx_eval.testing.processes import free_port, start_server

    found = chromium()
    if found is None:
        sys.exit("screenshot: needs Debian's chromium (apt-get install -y chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shutil.copytree(REPO / "configs", work / "configs")
        runs = work / "runs"
        vx = [sys.executable, "-m", "vx_eval"]
        subprocess.run([*vx, "run", "configs/quickstart.yaml", "--save-to", str(runs)], cwd=work, check=True)
        port = free_port()
        argv = [*vx, "serve", "--store", runs, "--users", work / "users.json", "--port", str(port)]
        with start_server(argv, port=port, what="vx-eval serve", cwd=work) as server:
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(found), args=FLAGS)
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                page.goto(server.url + "/")
                page.wait_for_selector("svg.scatter g.mark")
                PICTURE.parent.mkdir(exist_ok=True)
                page.screenshot(path=str(PICTURE))
                browser.close()
    INPUTS.write_text(json.dumps({"made_from": inputs()}, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {PICTURE.relative_to(REPO)} and {INPUTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
