"""Runs the server starts: a queue kept on disk, run by a bounded pool of worker processes.

A request names an experiment the server knows (a config registered with it, by name) and may override its
golden questions (a dataset, its current version or one by sha256), its measures, their cut-offs and which
setups run. It is answered at once with the run's id; the run itself is ``vx-eval run`` in a process of its
own (`workers` at a time, each stopped with the server and started again when the server is), writing its
progress to a file the server reads. Every job is a JSON file in the jobs folder, written whole, so the
queue survives a restart: a pending run starts, an interrupted one resumes from its checkpoints under the
same id. Two requests for the same experiment, golden sha256 and overrides while one is pending or running
get that run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from vx_eval.autoconfig import QUESTIONS
from vx_eval.core.report import REPORT_NAME, new_run_id, runs_folder
from vx_eval.core.stores import Stores, join
from vx_eval.processes import child_setup

Status = Literal["pending", "in_progress", "completed", "failed", "cancelled"]
ACTIVE = ("pending", "in_progress")


class RunRequest(BaseModel):
    """What a caller asks: an experiment by name, or a target by name (an index the server was told of,
    ``vx-eval serve --target NAME=ENGINE:WHERE``, run with no configuration: questions drafted, grades a
    judge's), and what to change for this run."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"experiment": "quickstart"},
                {
                    "experiment": "quickstart",
                    "dataset": "help-centre",
                    "metrics": ["recall", "ndcg"],
                    "k_values": [5, 10],
                },
                {"target": "help-index", "questions": 24},
            ]
        },
    )
    experiment: str | None = Field(None, min_length=1, max_length=100)
    target: str | None = Field(None, min_length=1, max_length=100)
    questions: int | None = Field(None, ge=1, le=1000)
    """With a target: how many questions to draft (24 when not given; drafted once per index, then kept)."""
    dataset: str | None = Field(None, max_length=64)
    dataset_version: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    metrics: list[str] = Field(default_factory=list, max_length=50)
    k_values: list[int] = Field(default_factory=list, max_length=20)
    k_multiples_of_relevant: list[int] = Field(default_factory=list, max_length=10)
    only: list[str] = Field(default_factory=list, max_length=200)
    skip: list[str] = Field(default_factory=list, max_length=20)

    @model_validator(mode="after")
    def _one_thing_to_run(self) -> RunRequest:
        if (self.experiment is None) == (self.target is None):
            raise ValueError("name one experiment or one target to run")
        if self.target is not None and (self.dataset or self.dataset_version):
            raise ValueError("a target drafts its own questions; a dataset goes with an experiment")
        if self.experiment is not None and self.questions is not None:
            raise ValueError("questions goes with a target (an experiment's questions are its golden file)")
        return self

    @property
    def what(self) -> str:
        """What is run, as people read it: ``experiment quickstart`` or ``target help-index``."""
        return f"experiment {self.experiment}" if self.experiment is not None else f"target {self.target}"

    def measure_names(self) -> list[str]:
        """The measures asked for, with Mixpeek's cut-offs spelled out (``recall`` x [1r, 2r] is recall@1r…)."""
        names = list(self.metrics)
        if self.k_multiples_of_relevant:
            names += [f"{m}@{k}r" for m in self.metrics if "@" not in m for k in self.k_multiples_of_relevant]
        return names


class Progress(BaseModel):
    stage: str | None = None
    setups: int | None = None
    questions: int | None = None
    searches_done: int = 0
    searches_total: int | None = None
    """Searches left to do when the run (or its resumption) began, and how many of them are done."""


class Job(BaseModel):
    """One run the server started (or will): kept as ``<jobs>/<run id>.json``."""

    model_config = ConfigDict(extra="ignore")
    id: str
    experiment: str | None = None
    target: str | None = None
    request: RunRequest
    golden: str | None = None
    """The golden location the run reads (a dataset's version), or None for the config's own."""
    golden_sha256: str | None = None
    key: str
    status: Status = "pending"
    reason: str | None = None
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    cancel: bool = False
    resume: bool = False
    progress: Progress = Field(default_factory=Progress)


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


class Jobs:
    """The queue and its workers (see the module). `experiments` maps names to config files."""

    def __init__(
        self,
        folder: Path,
        experiments: dict[str, Path],
        store: str,
        stores: Stores,
        workers: int = 2,
        targets: dict[str, str] | None = None,
    ) -> None:
        self.folder, self.experiments, self.store, self.stores = folder, experiments, store, stores
        self.targets = dict(targets or {})
        self.ended: set[str] = set()
        self.workers = workers
        self.folder.mkdir(parents=True, exist_ok=True)
        self.lock = threading.RLock()
        self.running: dict[str, subprocess.Popen[Any]] = {}
        self.stop = threading.Event()
        for job in self.all():  # a restart: interrupted runs resume under their ids, pending ones wait their turn
            if job.status == "in_progress":
                self._save(job.model_copy(update={"status": "pending", "resume": True}))
        self.thread = threading.Thread(target=self._loop, name="vx-eval-jobs", daemon=True)
        self.thread.start()

    # ------------------------------------------------------------------------------------------ records

    def _path(self, run_id: str) -> Path:
        return self.folder / f"{run_id}.json"

    def _save(self, job: Job) -> Job:
        partial = self.folder / f".{job.id}.json.partial"
        partial.write_text(job.model_dump_json(indent=1), encoding="utf-8")
        partial.replace(self._path(job.id))
        return job

    def get(self, run_id: str) -> Job | None:
        try:
            return Job.model_validate_json(self._path(run_id).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return None

    def all(self) -> list[Job]:
        jobs = [self.get(p.stem) for p in sorted(self.folder.glob("*.json"))]
        return [j for j in jobs if j is not None]

    def active(self) -> list[Job]:
        """The pending and running jobs. A job that ended never changes again, so its file is read once and
        then passed over: the queue's loop stays as fast with thousands of finished runs kept."""
        out = []
        for path in sorted(self.folder.glob("*.json")):
            if path.stem in self.ended:
                continue
            job = self.get(path.stem)
            if job is None:
                continue
            if job.status in ACTIVE:
                out.append(job)
            else:
                self.ended.add(job.id)
        return out

    # ------------------------------------------------------------------------------------------ requests

    def submit(self, request: RunRequest, golden: str | None, golden_sha: str | None) -> tuple[Job, bool]:
        """The run for `request`: a new pending one, or the one already pending or running for the same
        experiment, golden sha256 and overrides (and False for "not new")."""
        key = hashlib.sha256(
            json.dumps([request.model_dump(exclude={"dataset_version"}), golden_sha], sort_keys=True).encode()
        ).hexdigest()
        with self.lock:
            for job in self.active():
                if job.key == key:
                    return job, False
            job = Job(
                id=new_run_id(), experiment=request.experiment, target=request.target, request=request, golden=golden,
                golden_sha256=golden_sha, key=key, created_at=_now(),
            )  # fmt: skip
            return self._save(job), True

    def cancel(self, run_id: str) -> Job | None:
        with self.lock:
            job = self.get(run_id)
            if job is None or job.status not in ACTIVE:
                return job
            if job.status == "pending":
                return self._save(job.model_copy(update={"status": "cancelled", "finished_at": _now()}))
            self._save(job.model_copy(update={"cancel": True}))
            process = self.running.get(run_id)
        if process is not None and process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)  # the run's checkpoints stay; its report is never written
        return self.get(run_id)

    # ------------------------------------------------------------------------------------------ workers

    def _loop(self) -> None:
        while not self.stop.wait(0.3):
            with self.lock:
                self._reap()
                self._start()

    def _argv(self, job: Job) -> list[str]:
        request = job.request
        argv = [sys.executable, "-m", "vx_eval", "run", "--save-to", self.store]
        if job.target is not None:
            argv += ["--target", self.targets[job.target], "--questions", str(request.questions or QUESTIONS)]
        else:
            argv += [str(self.experiments[str(job.experiment)])]
        argv += ["--resume", job.id] if job.resume and self._checkpointed(job) else ["--run-id", job.id]
        argv += ["--progress-file", str(self.folder / f"{job.id}.progress")]
        if job.golden:
            argv += ["--golden", job.golden]
        for m in request.measure_names():
            argv += ["-m", m]
        for k in request.k_values:
            argv += ["-k", str(k)]
        for key in request.only:
            argv += ["--only", key]
        for method in request.skip:
            argv += ["--skip", method]
        return argv

    def _checkpointed(self, job: Job) -> bool:
        from vx_eval.core.checkpoints import Checkpoints

        return Checkpoints(self.stores, self.store, job.id).manifest() is not None

    def _start(self) -> None:
        waiting = [j for j in self.active() if j.status == "pending"]
        for job in waiting[: max(0, self.workers - len(self.running))]:
            if not self._claim(job.id):
                continue  # another server on this folder runs it
            gone = job.target not in self.targets if job.target is not None else job.experiment not in self.experiments
            if gone:
                reason = f"the {job.request.what.split()[0]} is no longer known to this server"
                self._save(job.model_copy(update={"status": "failed", "reason": reason}))
                continue
            log = (self.folder / f"{job.id}.log").open("ab")
            process = subprocess.Popen(
                self._argv(job), stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
                preexec_fn=child_setup(os.getpid(), None), env={**os.environ, "COLUMNS": "120"},
            )  # fmt: skip
            log.close()
            self.running[job.id] = process
            self._save(job.model_copy(update={"status": "in_progress", "started_at": _now(), "cancel": False}))

    def _claim(self, run_id: str) -> bool:
        """This server takes the run: a claim file naming its PID, created only where none is, or where the
        server that wrote it is gone."""
        claim = self.folder / f"{run_id}.claim"
        try:
            fd = os.open(claim, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                owner = int(claim.read_text() or 0)
                os.kill(owner, 0)
                return owner == os.getpid()
            except (ValueError, ProcessLookupError, PermissionError):
                claim.write_text(str(os.getpid()))  # its server is gone: this one takes the run over
                return True
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True

    def _reap(self) -> None:
        for run_id, process in list(self.running.items()):
            job = self.get(run_id)
            if job is None:
                continue
            if process.poll() is None:
                self._save(job.model_copy(update={"progress": self._progress(job)}))
                continue
            del self.running[run_id]
            (self.folder / f"{run_id}.claim").unlink(missing_ok=True)
            done = self.stores.exists(join(runs_folder(self.store), run_id, REPORT_NAME))
            if job.cancel:
                status, reason = "cancelled", "cancelled by request; its checkpoints are kept"
            elif process.returncode == 0 and done:
                status, reason = "completed", None
            else:
                status, reason = "failed", self._reason(run_id, process.returncode)
            self._save(
                job.model_copy(
                    update={"status": status, "reason": reason, "finished_at": _now(), "progress": self._progress(job)}
                )
            )

    def _progress(self, job: Job) -> Progress:
        try:
            data = json.loads((self.folder / f"{job.id}.progress").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return job.progress
        searching = data.get("stages", {}).get("Searching") or {}
        return Progress(
            stage=data.get("stage"),
            searches_done=int(searching.get("done") or 0),
            searches_total=searching.get("total"),
            setups=data.get("setups"),
            questions=data.get("questions"),
        )

    def _reason(self, run_id: str, code: int | None) -> str:
        from vx_eval.serve.public import public_text

        try:
            lines = (self.folder / f"{run_id}.log").read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            lines = []
        said = [line for line in lines if line.strip().startswith("error:")]
        return public_text((said or lines or [f"the run ended with code {code}"])[-1].strip())[:500]

    def close(self) -> None:
        """Stop starting runs and stop the running ones (they resume when the server starts again)."""
        self.stop.set()
        with self.lock:
            for process in self.running.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGTERM)
