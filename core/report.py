"""The run's report: ids that sort by time and never collide, provenance, and saving through a store."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import platform
import secrets
import sys
from typing import Any

from vx_eval import __version__
from vx_eval.core.errors import redact
from vx_eval.core.stores import Stores, join

FORMAT = 1
REPORT_NAME = "report.json"
PACKAGES = ("click", "numpy", "pluggy", "pydantic", "pyyaml", "rich")


def new_run_id(now: dt.datetime | None = None) -> str:
    """``20261130T114530123456Z-3f9a1c``: sorts by time; 24 random bits make two ids in one µs differ."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def runs_folder(save_to: str) -> str:
    return join(save_to, "retrieval", "runs")


def golden_copy_location(save_to: str, sha256: str) -> str:
    return join(save_to, "golden_dataset", f"{sha256}.jsonl")


def provenance(plugins: Any, models: dict[str, Any]) -> dict[str, Any]:
    packages = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return {
        "vx_eval": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": packages,
        "plugins": plugins.distributions(),
        "models": models,
    }


def save_report(report: dict[str, Any], golden_raw: bytes, stores: Stores, save_to: str) -> str:
    """Keep the golden file's exact bytes once per version, then write the report atomically; its location."""
    golden_at = golden_copy_location(save_to, report["golden"]["sha256"])
    if not stores.exists(golden_at):
        stores.write(golden_at, golden_raw)
    folder = runs_folder(save_to)
    while stores.exists(join(folder, report["id"])):  # a clash is all but impossible; never overwrite
        report["id"] = new_run_id()
    location = join(folder, report["id"], REPORT_NAME)
    stores.write(location, redact(json.dumps(report, indent=1, ensure_ascii=False)).encode())
    return location
