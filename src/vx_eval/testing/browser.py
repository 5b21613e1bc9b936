"""Debian's Chromium, as the browser tests and the README's screenshot drive it through Playwright (never a
browser Playwright downloads): where it is, and the flags it runs headless with on a CI machine."""

from __future__ import annotations

import shutil
from pathlib import Path

FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium() -> Path | None:
    """Debian's chromium, or None where it is not installed (`apt-get install -y chromium`)."""
    found = Path(shutil.which("chromium") or "/usr/bin/chromium")
    return found if found.exists() else None
