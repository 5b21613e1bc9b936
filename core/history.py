"""The runs kept at a location: list them newest first, read one, give back the golden file it read.

Reports written by earlier versions of the format are read too: fields a newer format added are filled
from what the older report holds (a run's collections from its targets), and a golden copy kept under the
older name ``golden/<sha256>.jsonl`` is still found.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from vx_eval.core.errors import StoreError
from vx_eval.core.report import FORMAT, REPORT_NAME, Checkpoints, golden_copy_location, runs_folder
from vx_eval.core.run import missing_notes
from vx_eval.core.stores import StoreNotFound, Stores, join


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

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def upgrade(report: dict[str, Any]) -> dict[str, Any]:
    """A report of any earlier format with the fields this version reads."""
    if not report.get("collections"):
        report["collections"] = sorted(
            {str(t.get("collection") or name) for name, t in (report.get("targets") or {}).items()}
        )
    report.setdefault("status", "done")
    report.setdefault("picks", {})
    report.setdefault("golden", {})
    if "missing_notes" not in report:
        report["missing_notes"] = missing_notes(report.get("missing") or {})
    report.setdefault("frontier", [])
    for setup in report.get("setups", []):
        setup.setdefault("server_ms", None)
    return report


def run_ids(stores: Stores, save_to: str) -> list[str]:
    """Every run id at `save_to`, newest first (ids sort by time)."""
    try:
        listed = stores.list(runs_folder(save_to))
    except StoreNotFound:
        return []
    return sorted((loc.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] for loc in listed), reverse=True)


def read_report(stores: Stores, save_to: str, run_id: str) -> dict[str, Any]:
    """The report of `run_id` (or of the newest run for ``latest``), upgraded to this version's fields."""
    if run_id == "latest":
        ids = [i for i in run_ids(stores, save_to) if stores.exists(join(runs_folder(save_to), i, REPORT_NAME))]
        if not ids:
            raise StoreError(f"no finished runs are saved at {save_to}; run `vx-eval run CONFIG` first")
        run_id = ids[0]
    location = join(runs_folder(save_to), run_id, REPORT_NAME)
    try:
        raw = stores.read(location)
    except StoreNotFound:
        known = run_ids(stores, save_to)
        hint = f"; the newest is {known[0]} (see `vx-eval runs list`)" if known else "; none is saved there"
        raise StoreNotFound(f"no run '{run_id}' at {save_to}{hint}") from None
    try:
        report = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{location} is not a readable report ({exc.msg} at line {exc.lineno})") from None
    if int(report.get("format", 1)) > FORMAT:
        raise StoreError(
            f"{location} was written by a newer vx-eval (report format {report['format']}, this one reads up to "
            f"{FORMAT}); upgrade vx-eval to read it"
        )
    return upgrade(report)


def list_runs(stores: Stores, save_to: str, limit: int = 20, offset: int = 0) -> tuple[list[RunEntry], int]:
    """A page of runs, newest first, and how many there are in all. An unreadable report is listed with its
    status saying why, never dropped silently."""
    ids = run_ids(stores, save_to)
    entries = []
    for run_id in ids[offset : offset + limit]:
        location = join(runs_folder(save_to), run_id, REPORT_NAME)
        try:
            report = read_report(stores, save_to, run_id)
        except StoreNotFound:
            manifest = Checkpoints(stores, save_to, run_id).manifest()
            if manifest is None:
                entries.append(RunEntry(run_id, "", None, [], None, None, 0, {}, "unreadable: no report", location))
                continue
            status = f"incomplete: `vx-eval run CONFIG --resume {run_id}` finishes it"
            entries.append(
                RunEntry(
                    run_id,
                    "",
                    manifest.get("started_at"),
                    [],
                    manifest.get("golden_sha256"),
                    manifest.get("questions"),
                    len(manifest.get("setups", [])),
                    {},
                    status,
                    location,
                )
            )
            continue
        except StoreError as exc:
            entries.append(RunEntry(run_id, "", None, [], None, None, 0, {}, f"unreadable: {exc}", location))
            continue
        golden = report.get("golden") or {}
        entries.append(
            RunEntry(
                id=run_id,
                name=str(report.get("name", "")),
                created_at=report.get("created_at"),
                collections=list(report["collections"]),
                golden_sha256=golden.get("sha256"),
                questions=golden.get("questions"),
                setups=len(report.get("setups", [])),
                picks=dict(report.get("picks") or {}),
                status=report.get("status"),
                location=location,
            )
        )
    return entries, len(ids)


def golden_locations(save_to: str, sha: str) -> tuple[str, str]:
    """Where a golden copy may be kept: ``golden_dataset/<sha256>.jsonl``, then the older ``golden/`` name."""
    return golden_copy_location(save_to, sha), join(save_to, "golden", f"{sha}.jsonl")


def golden_bytes(stores: Stores, save_to: str, report: dict[str, Any]) -> bytes:
    """The exact golden file a run read, from the copy kept beside the runs."""
    sha = (report.get("golden") or {}).get("sha256")
    if not sha:
        raise StoreNotFound(f"run {report.get('id')} records no golden file (it was made from questions in memory)")
    for location in golden_locations(save_to, sha):
        try:
            return stores.read(location)
        except StoreNotFound:
            continue
    raise StoreNotFound(
        f"the golden file of run {report.get('id')} (sha256 {sha[:12]}…) is not kept at {save_to}: "
        "it was saved before files were kept, or somebody removed golden_dataset/"
    )


def same_questions(stores: Stores, save_to: str, report: dict[str, Any], limit: int = 20) -> list[dict[str, Any]]:
    """Up to `limit` finished runs before `report` that read the same golden file (same sha256), oldest
    first, each slimmed to what the run-by-run views need (no per-question lists)."""
    sha = (report.get("golden") or {}).get("sha256")
    if not sha:
        return []
    earlier = []
    for run_id in run_ids(stores, save_to):
        if run_id >= str(report.get("id", "")):
            continue
        try:
            other = read_report(stores, save_to, run_id)
        except StoreError:
            continue  # an unfinished or unreadable run has nothing to show run by run
        if (other.get("golden") or {}).get("sha256") != sha:
            continue
        for setup in other.get("setups", []):
            setup.pop("per_question", None)
        earlier.append(other)
        if len(earlier) >= limit:
            break
    return earlier[::-1]
