"""Checkpoints: each finished (setup, shard) of searches kept in the run's folder as it finishes, so a run
killed at any moment resumes (`vx-eval run CONFIG --resume RUN`) with only what did not finish left to do.
Each part is written whole (as reports are); the report itself is written only when the run completes."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from pydantic import ValidationError

from vx_eval.core.config.jsonio import JsonInputError, read_json
from vx_eval.core.contracts.engine import Progress, Setup
from vx_eval.core.contracts.store import StoreFull, StoreNotFound
from vx_eval.core.errors import VxEvalError, redact
from vx_eval.core.report.saving import (
    CHECKPOINTS,
    MANIFEST,
    REPORT_NAME,
    Manifest,
    checkpoint_manifest,
    new_run_id,
    runs_folder,
)
from vx_eval.core.run.executors import ShardPart
from vx_eval.core.stores import Stores, join


class Checkpoints:
    """The checkpoints of one run, in ``<save_to>/retrieval/runs/<run id>/checkpoints/``."""

    def __init__(self, stores: Stores, save_to: str, run_id: str) -> None:
        self.stores = stores
        self.run_id = run_id
        self.save_to = save_to
        self.folder = join(runs_folder(save_to), run_id, CHECKPOINTS)

    def start(self, manifest: Manifest) -> None:
        self.stores.write(join(self.folder, MANIFEST), manifest.model_dump_json(indent=1).encode())

    def manifest(self) -> Manifest | None:
        """The manifest, or None where there is none (or it cannot be read: the run never really started)."""
        return checkpoint_manifest(self.stores, self.save_to, self.run_id)

    @staticmethod
    def _name(key: str, shard: int) -> str:
        return f"{key}.shard{shard:05d}.json"

    def save(self, key: str, shard: int, part: ShardPart) -> None:
        try:
            self.stores.write(join(self.folder, self._name(key, shard)), redact(part.model_dump_json()).encode())
        except StoreFull as exc:
            raise self.resumable(exc) from None

    def resumable(self, exc: StoreFull) -> StoreFull:
        """`exc` saying how to finish this run once there is room: what it finished is kept."""
        return StoreFull(f"{exc}: free space and run `vx-eval run CONFIG --resume {self.run_id}`")

    def done(self, keys: Sequence[str], shards: int) -> dict[tuple[str, int], ShardPart]:
        """Every checkpointed part of these setups, read back (a part that cannot be read is searched again)."""
        present = {loc.rstrip("/").rsplit("/", 1)[-1].rsplit("\\", 1)[-1] for loc in self.stores.list(self.folder)}
        out = {}
        for key in keys:
            for shard in range(shards):
                name = self._name(key, shard)
                if name in present:
                    try:
                        out[(key, shard)] = ShardPart.model_validate(
                            read_json(self.stores.read(join(self.folder, name)))
                        )
                    except (StoreNotFound, JsonInputError, ValidationError):
                        continue
        return out

    def clear(self) -> None:
        """Remove the checkpoints once the report is saved (where the store can delete)."""
        for location in self.stores.list(self.folder):
            self.stores.delete(location)


def start_checkpoints(
    stores: Stores,
    save_to: str,
    manifest: Manifest,
    resume: str | None,
    progress: Progress,
) -> tuple[Checkpoints, dict[tuple[str, int], ShardPart], dt.datetime]:
    """The run's checkpoints, what a resumed run already finished, and when the run started (a resumed run
    keeps its first start). A resumed run must match the manifest it started with."""
    started = dt.datetime.fromisoformat(manifest.started_at)
    if resume is None:
        checkpoints = Checkpoints(stores, save_to, manifest.id)
        checkpoints.start(manifest)
        return checkpoints, {}, started
    if stores.exists(join(runs_folder(save_to), resume, REPORT_NAME)):
        raise VxEvalError(
            f"run {resume} finished: its report is saved at {save_to} (see `vx-eval runs show {resume}`); "
            "there is nothing to resume: start a new run instead"
        )
    checkpoints = Checkpoints(stores, save_to, resume)
    kept = checkpoints.manifest()
    if kept is None:
        raise VxEvalError(
            f"no checkpoints of run '{resume}' at {save_to}: it finished (see `vx-eval runs show`) or "
            "never started there; start a new run instead"
        )
    changed = [
        what
        for what, ours, theirs in (
            ("the golden file", manifest.golden_sha256, kept.golden_sha256),
            ("the config", manifest.config_sha256, kept.config_sha256),
            ("the setups", manifest.setups, kept.setups),
        )
        if ours != theirs
    ]
    if changed:
        raise VxEvalError(
            f"{' and '.join(changed)} changed since run {resume} started, so its finished searches would "
            "not add up to one run; start a new run instead"
        )
    shards = (kept.questions + kept.shard_size - 1) // kept.shard_size
    done = checkpoints.done(kept.setups, shards)
    progress.note(f"resuming run {resume}: {len(done)} of {len(kept.setups) * shards} (setup, shard) parts done")
    return checkpoints, done, dt.datetime.fromisoformat(kept.started_at)


def new_manifest(
    started: dt.datetime, config_sha: str, golden_sha: str, setups: Sequence[Setup], shard_size: int, questions: int
) -> Manifest:
    return Manifest(
        id=new_run_id(started),
        started_at=started.isoformat(timespec="seconds"),
        config_sha256=config_sha,
        golden_sha256=golden_sha,
        setups=[s.key for s in setups],
        shard_size=shard_size,
        questions=questions,
    )
