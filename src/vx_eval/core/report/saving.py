"""Where a run's report goes: ids that sort by time and never collide, provenance, and saving through a store."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import platform
import re
import secrets
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel, ValidationError

from vx_eval import __version__
from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.contracts.endpoints import ServedUsage
from vx_eval.core.contracts.store import StoreNotFound
from vx_eval.core.errors import quoted, redact
from vx_eval.core.report import kept_rankings as rankings
from vx_eval.core.report.schema import PluginRow, Provenance, Report
from vx_eval.core.stores import Stores, join

if TYPE_CHECKING:
    from vx_eval.core.plugins import Plugins


REPORT_NAME = "report.json"
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
PACKAGES = ("click", "numpy", "pluggy", "pydantic", "pyyaml", "rich")


def new_run_id(now: dt.datetime | None = None) -> str:
    """``20261130T114530123456Z-3f9a1c``: sorts by time; 24 random bits make two ids in one µs differ."""
    now = now or dt.datetime.now(dt.UTC)
    return now.strftime("%Y%m%dT%H%M%S%fZ") + "-" + secrets.token_hex(3)


def is_run_id(run_id: str) -> bool:
    """Whether `run_id` is one plain name of at most 100 letters, digits, '.', '_' and '-' (the ids vx-eval
    makes are 29): the rule a run id from outside meets before any path or store is asked."""
    return bool(RUN_ID.match(run_id)) and ".." not in run_id


def check_run_id(run_id: str) -> str:
    """A run id named from outside (the command line, a URL), refused before any store is asked (`is_run_id`)."""
    if not is_run_id(run_id):
        raise StoreNotFound(
            f"no run {quoted(run_id)}: a run id is at most 100 letters, digits, '.', '_' and '-' (or `latest`)"
        )
    return run_id


def runs_folder(save_to: str) -> str:
    return join(save_to, "retrieval", "runs")


def golden_copy_location(save_to: str, sha256: str) -> str:
    return join(save_to, "golden_dataset", f"{sha256}.jsonl")


def provenance(plugins: Plugins, models: dict[str, list[str]], served: Sequence[ServedUsage] = ()) -> Provenance:
    packages: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            packages[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            packages[name] = None
    return Provenance(
        vx_eval=__version__,
        python=sys.version.split()[0],
        platform=platform.platform(),
        packages=packages,
        plugins=[PluginRow(**row) for row in plugins.distributions()],
        models=models,
        served=list(served),
    )


def save_report(report: Report, golden_raw: bytes | None, stores: Stores, save_to: str) -> tuple[Report, str]:
    """Keep the golden file's exact bytes once per version, then write the run's rankings beside its report
    (`core.report.kept_rankings`) and the report atomically; the report as saved (its id changed only in the all but
    impossible case of a clash; its rankings still in it) and its location. The run's folder may already hold
    its checkpoints; an id whose report exists is never overwritten."""
    sha = report.golden.sha256
    if sha and golden_raw is not None:
        golden_at = golden_copy_location(save_to, sha)
        if not stores.exists(golden_at):
            stores.write(golden_at, golden_raw)
    folder = runs_folder(save_to)
    while stores.exists(join(folder, report.id, REPORT_NAME)):
        report = report.model_copy(update={"id": new_run_id()})
    location = join(folder, report.id, REPORT_NAME)
    light, data = rankings.split(report)
    if data is not None:  # the rankings first: a report on disk always finds its rankings beside it
        stores.write(join(folder, report.id, rankings.FILE), data)
    stores.write(location, redact(light.to_json()).encode())
    return report.model_copy(update={"rankings": light.rankings}), location


CHECKPOINTS = "checkpoints"


MANIFEST = "run.json"


class Manifest(BaseModel):
    """What a run's checkpoints belong to: a resumed run must read the same golden file, config and setups."""

    id: str
    started_at: str
    config_sha256: str
    golden_sha256: str
    setups: list[str]
    shard_size: int
    questions: int


def checkpoint_manifest(stores: Stores, save_to: str, run_id: str) -> Manifest | None:
    """The manifest of a run's checkpoints, or None where there is none (or it cannot be read: the run never
    really started)."""
    location = join(runs_folder(save_to), run_id, CHECKPOINTS, MANIFEST)
    try:
        return Manifest.model_validate(read_json(stores.read(location)))
    except (StoreNotFound, JsonInputError, ValidationError):
        return None
