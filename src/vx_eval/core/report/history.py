"""The runs kept at a location: list them newest first, read one, give back the golden file it read.

Reports of every earlier format are read (`core.report.schema.load_report` upgrades them first). One report that
cannot be read never takes the rest down: it is listed as unreadable with the reason. A golden copy is given
out only when its bytes still hash to the sha256 in its name, and nothing is read through a link that leads
out of a local store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.contracts.store import StoreDenied, StoreNotFound
from vx_eval.core.errors import StoreError
from vx_eval.core.report import kept_rankings
from vx_eval.core.report.saving import REPORT_NAME, check_run_id, checkpoint_manifest, golden_copy_location, runs_folder
from vx_eval.core.report.schema import FORMAT, Picks, Report, ReportError, Status, load_report
from vx_eval.core.report.upgrade import upgrade
from vx_eval.core.report.views import GoldenInfo
from vx_eval.core.stores import Stores, join


@dataclass(frozen=True)
class RunEntry:
    """One saved run, as `vx-eval runs list` shows it."""

    id: str
    name: str
    created_at: str | None
    collections: list[str]
    golden_sha256: str | None
    questions: int | None
    setups: int
    picks: dict[str, str | None]
    status: str | None
    location: str
    reason: str | None = field(default=None)
    """Why a run is unreadable or incomplete."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_ids(stores: Stores, save_to: str) -> list[str]:
    """Every run id at `save_to`, newest first (ids sort by time); links out of a local store left out."""
    try:
        listed = stores.list_below(save_to, runs_folder(save_to))
    except StoreNotFound:
        return []
    return sorted((loc.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] for loc in listed), reverse=True)


def newest_report(stores: Stores, save_to: str, read: Callable[[str], Report] | None = None) -> Report:
    """The newest finished run's report; one that cannot be read is passed over (`runs list` says why),
    so one bad file never hides the rest. `read` reads a report by id (a cache's, say)."""
    read = read or (lambda run_id: read_report(stores, save_to, run_id))
    unreadable = 0
    for run_id in run_ids(stores, save_to):
        if stores.exists(join(runs_folder(save_to), run_id, REPORT_NAME)):
            try:
                return read(run_id)
            except StoreNotFound:
                continue  # removed since it was listed
            except StoreError:  # unreadable (ReportError) or a link out of the store (StoreDenied)
                unreadable += 1
    if unreadable:
        raise StoreNotFound(
            f"no finished run at {save_to} can be read ({unreadable} cannot; `vx-eval runs list` says why)"
        )
    raise StoreNotFound(f"no finished runs are saved at {save_to}; run `vx-eval run CONFIG` first")


def read_report(stores: Stores, save_to: str, run_id: str, *, rankings: bool = False) -> Report:
    """The report of `run_id` (or of the newest finished run that can be read, for ``latest``); with
    `rankings`, its rankings read back from the file beside it (`core.report.kept_rankings`)."""
    if run_id == "latest":
        newest = newest_report(stores, save_to)
        return read_report(stores, save_to, newest.id, rankings=True) if rankings else newest
    run_id = check_run_id(run_id)
    location = join(runs_folder(save_to), run_id, REPORT_NAME)
    try:
        raw = stores.read_below(save_to, location)
    except StoreNotFound:
        known = run_ids(stores, save_to)
        hint = f"; the newest is {known[0]} (see `vx-eval runs list`)" if known else "; none is saved there"
        raise StoreNotFound(f"no run '{run_id}' at {save_to}{hint}") from None
    report = load_report(raw, location)
    return kept_rankings.attach(report, stores, location) if rankings else report


class ReportHead(BaseModel):
    """What a list of runs shows of a report, read without the setups' per-question lists (a SciFact
    report's bulk): `runs list` and the server's menu read many of these."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str
    name: str = ""
    status: Status = "completed"
    created_at: str | None = None
    collections: list[str] = Field(default_factory=list)
    golden: GoldenInfo = Field(default_factory=GoldenInfo)
    setups: list[dict[str, Any]] = Field(default_factory=list)
    picks: Picks = Field(default_factory=Picks)


def read_head(stores: Stores, save_to: str, run_id: str) -> ReportHead:
    """The head of `run_id`'s report (see `ReportHead`), checked as `read_report` checks a whole one."""

    location = join(runs_folder(save_to), check_run_id(run_id), REPORT_NAME)
    raw = stores.read_below(save_to, location)
    try:
        data = read_json(raw)
    except JsonInputError as exc:
        raise ReportError(f"{location} is not a readable report ({exc.message})") from None
    if not isinstance(data, dict) or not isinstance(data.get("format", 1), int) or data.get("format", 1) > FORMAT:
        return ReportHead.model_validate(load_report(raw, location).model_dump(include=set(ReportHead.model_fields)))
    try:
        return ReportHead.model_validate(upgrade(data))
    except (ValidationError, TypeError, ValueError, AttributeError):
        load_report(raw, location)  # says why, as a whole report's reader does
        raise


def _entry(report: Report | ReportHead, location: str) -> RunEntry:
    return RunEntry(
        id=report.id,
        name=report.name,
        created_at=report.created_at,
        collections=list(report.collections),
        golden_sha256=report.golden.sha256,
        questions=report.golden.questions,
        setups=len(report.setups),
        picks=dict(report.picks.items()),
        status=report.status,
        location=location,
    )


def list_runs(stores: Stores, save_to: str, limit: int = 20, offset: int = 0) -> tuple[list[RunEntry], int]:
    """A page of runs, newest first, and how many there are in all. An unreadable report is listed with its
    status saying why, never dropped silently and never an error for the others."""
    ids = run_ids(stores, save_to)
    entries = []
    empty_picks = dict(Picks().items())
    for run_id in ids[offset : offset + limit]:
        location = join(runs_folder(save_to), run_id, REPORT_NAME)
        try:
            entries.append(_entry(read_head(stores, save_to, run_id), location))
        except StoreNotFound:
            manifest = checkpoint_manifest(stores, save_to, run_id)
            if manifest is None:
                entries.append(
                    RunEntry(run_id, "", None, [], None, None, 0, empty_picks, "unreadable", location, "no report")
                )
                continue
            entries.append(
                RunEntry(
                    run_id,
                    "",
                    manifest.started_at,
                    [],
                    manifest.golden_sha256,
                    manifest.questions,
                    len(manifest.setups),
                    empty_picks,
                    "incomplete",
                    location,
                    f"`vx-eval run CONFIG --resume {run_id}` finishes it",
                )
            )
        except StoreError as exc:  # ReportError, StoreDenied (a link out of the store), …
            entries.append(RunEntry(run_id, "", None, [], None, None, 0, empty_picks, "unreadable", location, str(exc)))
    return entries, len(ids)


def golden_locations(save_to: str, sha: str) -> tuple[str, str]:
    """Where a golden copy may be kept: ``golden_dataset/<sha256>.jsonl``, then the older ``golden/`` name."""
    return golden_copy_location(save_to, sha), join(save_to, "golden", f"{sha}.jsonl")


def golden_bytes(stores: Stores, save_to: str, report: Report) -> bytes:
    """The exact golden file a run read, from the copy kept beside the runs; a copy whose bytes no longer
    hash to its name is refused (it is not the file the run read)."""
    sha = report.golden.sha256
    if not sha:
        raise StoreNotFound(f"run {report.id} records no golden file (it was made from questions in memory)")
    for location in golden_locations(save_to, sha):
        try:
            data = stores.read_below(save_to, location)
        except StoreNotFound:
            continue
        if hashlib.sha256(data).hexdigest() != sha:
            raise StoreDenied(
                f"the golden copy of run {report.id} at {location} is not the file the run read (its bytes hash "
                "to another sha256): somebody changed it; it is not given out"
            )
        return data
    raise StoreNotFound(
        f"the golden file of run {report.id} (sha256 {sha[:12]}…) is not kept at {save_to}: "
        "it was saved before files were kept, or somebody removed golden_dataset/"
    )


def has_golden(stores: Stores, save_to: str, report: Report) -> bool:
    sha = report.golden.sha256
    return sha is not None and any(stores.exists(loc) for loc in golden_locations(save_to, sha))


def same_questions(stores: Stores, save_to: str, report: Report, limit: int = 20) -> list[Report]:
    """Up to `limit` finished runs before `report` that read the same golden file (same sha256), oldest
    first (for the run-by-run views)."""
    sha = report.golden.sha256
    if not sha:
        return []
    earlier = []
    for run_id in run_ids(stores, save_to):
        if run_id >= report.id:
            continue
        try:
            other = read_report(stores, save_to, run_id)
        except StoreError:
            continue  # an unfinished or unreadable run has nothing to show run by run
        if other.golden.sha256 != sha:
            continue
        earlier.append(other)
        if len(earlier) >= limit:
            break
    return earlier[::-1]


__all__ = [
    "ReportError",
    "RunEntry",
    "golden_bytes",
    "golden_locations",
    "has_golden",
    "list_runs",
    "newest_report",
    "read_report",
    "run_ids",
    "same_questions",
]
