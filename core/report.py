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
from vx_eval.core.stores import StoreNotFound, Stores, join

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
    """Keep the golden file's exact bytes once per version, then write the report atomically; its location.
    The run's folder may already hold its checkpoints; an id whose report exists is never overwritten."""
    golden_at = golden_copy_location(save_to, report["golden"]["sha256"])
    if not stores.exists(golden_at):
        stores.write(golden_at, golden_raw)
    folder = runs_folder(save_to)
    while stores.exists(join(folder, report["id"], REPORT_NAME)):  # a clash is all but impossible
        report["id"] = new_run_id()
    location = join(folder, report["id"], REPORT_NAME)
    stores.write(location, redact(json.dumps(report, indent=1, ensure_ascii=False)).encode())
    return location


CHECKPOINTS = "checkpoints"
MANIFEST = "run.json"


class Checkpoints:
    """Finished (setup, shard) searches of one run, kept in its folder as they finish, so a run killed at
    any moment resumes (`vx-eval run CONFIG --resume RUN`) with only what did not finish left to do. Each
    part is written whole (as reports are); the report itself is written only when the run completes."""

    def __init__(self, stores: Stores, save_to: str, run_id: str) -> None:
        self.stores = stores
        self.run_id = run_id
        self.folder = join(runs_folder(save_to), run_id, CHECKPOINTS)

    def start(self, manifest: dict[str, Any]) -> None:
        self.stores.write(join(self.folder, MANIFEST), json.dumps(manifest, indent=1).encode())

    def manifest(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.stores.read(join(self.folder, MANIFEST)))
        except StoreNotFound:
            return None

    @staticmethod
    def _name(key: str, shard: int) -> str:
        return f"{key}.shard{shard:05d}.json"

    def save(self, key: str, shard: int, part: dict[str, list]) -> None:
        self.stores.write(join(self.folder, self._name(key, shard)), redact(json.dumps(part)).encode())

    def done(self, keys: list[str], shards: int) -> dict[tuple[str, int], dict[str, list]]:
        """Every checkpointed part of these setups, read back (a part that cannot be read is searched again)."""
        present = {loc.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] for loc in self.stores.list(self.folder)}
        out = {}
        for key in keys:
            for shard in range(shards):
                name = self._name(key, shard)
                if name in present:
                    try:
                        out[(key, shard)] = json.loads(self.stores.read(join(self.folder, name)))
                    except (StoreNotFound, json.JSONDecodeError):
                        continue
        return out

    def clear(self) -> None:
        """Remove the checkpoints once the report is saved (where the store can delete)."""
        for location in self.stores.list(self.folder):
            self.stores.delete(location)
